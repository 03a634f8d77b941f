import { defineConfig } from 'vitest/config';

// Tests by cost: `npm run test:unit` is seconds; `npm test` runs all three projects,
// including real git, a real Docker engine and the real codex binary.
export default defineConfig({
  test: {
    projects: [
      {
        // 30 s: some unit files drive real git many times over, and CI runs them beside the Docker projects.
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], testTimeout: 30_000 },
      },
      {
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts', 'tests/faults/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'security',
          include: ['tests/security/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
