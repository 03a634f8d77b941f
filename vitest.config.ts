import { defineConfig } from 'vitest/config';

// Tests by cost: `npm run test:unit` is seconds; `npm test` runs every project, including real git, a real
// Docker engine and the real worker binaries.
//
// Order: the unit files first (all cores), then the Docker files two at a time (a file spends about a third of
// its time waiting on containers and the engine, so a second file fills the idle cores: the suite's wall time
// on 2 cores went from 43 to 34-35 minutes), then, one at a time, the files whose assertions bound a wall
// time or a process's memory (`timed`), so nothing else runs beside them. Files running side by side share the
// engine only: every test has its own repository, ports and servers, a container's name is random, and a test
// looks only at containers labelled with its own repository (tests/support/task-containers.ts).
const TIMED = [
  'tests/e2e/run-completion.test.ts', // Ctrl-C aborts a model call within a second
  'tests/e2e/codex-worker.test.ts', // a hanging command stopped at its timeout, within 15 s
  'tests/e2e/serve-api.test.ts', // the server's memory growth with clients that never read
  'tests/e2e/real-projects-npm.test.ts', // the run ends within 20 s of its last event
  'tests/integration/workspace-isolation.test.ts', // a run's duration within 15 s
  'tests/integration/sandbox-docker-runtime.test.ts', // a timeout's duration within 10 s
  'tests/integration/meta-openai-chat-model.test.ts', // retry waits to the millisecond
  'tests/integration/gateway-resources.test.ts', // sockets the process holds
  'tests/security/hang-paths.test.ts', // each hostile task ends within its --timeout + 30 s
];

const DOCKER = { sequence: { groupOrder: 1 }, maxWorkers: 2, fileParallelism: true } as const;

export default defineConfig({
  test: {
    projects: [
      {
        // 30 s: some unit files drive real git many times over.
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], testTimeout: 30_000 },
      },
      {
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts', 'tests/faults/**/*.test.ts'],
          exclude: TIMED,
          testTimeout: 180_000,
          hookTimeout: 600_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          exclude: TIMED,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'security',
          include: ['tests/security/**/*.test.ts'],
          exclude: TIMED,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'timed',
          include: TIMED,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          sequence: { groupOrder: 2 },
          maxWorkers: 1,
          fileParallelism: false,
        },
      },
    ],
  },
});
