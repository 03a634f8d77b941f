import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { include: ['tests/e2e/run-loop.test.ts'], setupFiles: ['tests/support/_prof-setup.ts'], testTimeout: 300000 } });
