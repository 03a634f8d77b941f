import { defineConfig } from 'vitest/config';
import { DurationSequencer } from './tests/support/duration-sequencer.js';

// Tests by cost. `npm test` is two runs:
//   1. `unit` (all cores), then `postgres` (the control plane's files against PostgreSQL, two at a time), then
//      `light` (the other integration files that need no Docker engine, one at a time, as two of them bound
//      wall times), with --bail=1: a broken build stops here, in seconds, not after the Docker files;
//   2. the Docker files (`integration`, `e2e`, `security`, and `security-runsc`: the security files again under
//      gVisor; `timed-alone` and `timed-alone-runsc`: hang-paths under each runtime) three at a time, then the
//      few files whose assertions bound a wall time or a process's memory (`timed`) two at a time, each a single
//      task or sandbox (two of them load two cores no more than one Docker file does), then host-root-race under
//      runsc alone (`security-runsc-alone`).
// Each project has a group of its own (vitest runs groups in order and needs one worker count per group), so
// `vitest run FILE…` across projects works too.
// Each group runs its files longest first, whatever their project, from the durations a clean-clone run
// measured (tests/file-durations.json; tests/support/duration-sequencer.ts says why), so the two workers are
// busy to the end. Files running side by side share the engine only: every test has its own repository,
// ports and servers, a container's name is random, and a test looks only at containers labelled with its own
// repository (tests/support/task-containers.ts).
const LIGHT = [
  'tests/integration/gateway-routes.test.ts',
  'tests/integration/meta-plan-command.test.ts',
  'tests/integration/meta-openai-chat-model.test.ts', // retry waits to the millisecond
  'tests/integration/gateway-resources.test.ts', // sockets the process holds
  'tests/integration/board-paging.test.ts', // a headless browser
  'tests/integration/memory-page.test.ts', // a headless browser
  'tests/integration/task-origin-page.test.ts', // a headless browser
];

// PostgreSQL only (scripts/postgres.sh), no Docker: two at a time, each in a database of its own (a file that
// stops its server starts one of its own). They wait on the database more than they compute.
const POSTGRES = [
  'tests/integration/control-plane.test.ts',
  'tests/integration/control-node.test.ts',
  'tests/integration/fleet-events.test.ts',
  'tests/integration/fleet-requests.test.ts',
  'tests/integration/fleet-journal.test.ts',
  'tests/integration/fleet-question.test.ts',
  'tests/integration/fleet-tokens.test.ts',
  'tests/integration/fleet-followup.test.ts',
  'tests/integration/fleet-task-list.test.ts',
  'tests/integration/fleet-webhooks.test.ts',
];

// Keep these files small: at most one other runs beside each. A long file with one timed test gives that test a
// file of its own.
const TIMED = [
  'tests/e2e/run-interrupt-model-call.test.ts', // Ctrl-C aborts a model call within a second
  'tests/e2e/codex-worker.test.ts', // a hanging command stopped at its timeout, within 15 s
  'tests/e2e/serve-api-memory.test.ts', // the server's memory growth with clients that never read
  'tests/e2e/real-projects-npm.test.ts', // the run ends within 20 s of its last event
  'tests/integration/workspace-isolation.test.ts', // a run's duration within 15 s
  'tests/integration/sandbox-docker-runtime.test.ts', // a timeout's duration within 10 s
];

// Five tasks side by side, each to end within --timeout + 30 s: they plant a FIFO in their first seconds and then
// wait out a 45 s wall clock, so the machine is busy only at the start. Among the Docker files (under each
// runtime), where their wait overlaps other files' work; a project of its own so that each runtime runs it once.
const TIMED_ALONE = ['tests/security/hang-paths.test.ts'];

// Under runsc, alone at the end: its swapper (a tight loop of renames in the kept sandbox) under gVisor beside
// three other Docker files ran past the 300 s test limit once in a clean-clone run; alone it takes about 20 s.
const RUNSC_ALONE = ['tests/security/host-root-race.test.ts'];

// Three at a time: a clean-clone run with two left the cores 10-30% idle through most of the Docker files (a file
// waits on a lease, a wall clock, a browser, the engine), and hang-paths, in this group, mostly waits.
const DOCKER = { sequence: { groupOrder: 3 }, maxWorkers: 3, fileParallelism: true } as const;

// The runtime of the CLI's sandboxes (AGENT_RUNNER_RUNTIME, read like any run reads it). `sandbox.runtime`'s
// default is `auto` (gVisor where the engine registers it, as scripts/setup.sh does where it can), and the
// security files run under both runtimes: `security` under runc, `security-runsc` and `timed-alone-runsc`
// under runsc. Every other Docker file tests what a feature does, not the kernel under it, and runs under runc:
// gVisor costs 1.2-1.7× per task (docs/benchmarks-more.md), which the suite's 20 minutes do not have twice.
// tests/e2e/demo-built-cli.test.ts and tests/e2e/run-non-root.test.ts (an environment of its own) run the default.
const UNDER_RUNC = { AGENT_RUNNER_RUNTIME: 'runc' } as const;
const UNDER_RUNSC = { AGENT_RUNNER_RUNTIME: 'runsc' } as const;

export default defineConfig({
  test: {
    sequence: { sequencer: DurationSequencer },
    projects: [
      {
        // 30 s: some unit files drive real git many times over. Three workers on two cores: the unit files
        // wait on git and child processes as much as they compute; vitest's own default here ran them one at a
        // time (124 s on this machine), two workers took 69 s, three 54 s.
        test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], testTimeout: 30_000, maxWorkers: 3 },
      },
      {
        test: {
          name: 'postgres',
          include: POSTGRES,
          testTimeout: 180_000,
          sequence: { groupOrder: 1 },
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
      {
        test: {
          name: 'light',
          include: LIGHT,
          testTimeout: 180_000,
          sequence: { groupOrder: 2 },
          maxWorkers: 1,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts', 'tests/faults/**/*.test.ts'],
          exclude: [...LIGHT, ...POSTGRES, ...TIMED, ...TIMED_ALONE],
          env: UNDER_RUNC,
          testTimeout: 180_000,
          hookTimeout: 600_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          exclude: [...TIMED, ...TIMED_ALONE],
          env: UNDER_RUNC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'security',
          include: ['tests/security/**/*.test.ts'],
          exclude: [...TIMED, ...TIMED_ALONE],
          env: UNDER_RUNC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        // The security files again with every sandbox under gVisor (AGENT_RUNNER_RUNTIME=runsc reaches the
        // CLI through the harnesses' environment and the helpers that create sandboxes through
        // tests/support/test-runtime.ts). In the Docker files' group, two at a time. Needs runsc registered
        // (scripts/ensure-runsc.sh, run by scripts/setup.sh).
        test: {
          name: 'security-runsc',
          include: ['tests/security/**/*.test.ts'],
          exclude: [...TIMED, ...TIMED_ALONE, ...RUNSC_ALONE],
          env: UNDER_RUNSC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'timed',
          include: TIMED,
          env: UNDER_RUNC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          sequence: { groupOrder: 4 },
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
      {
        test: {
          name: 'timed-alone',
          include: TIMED_ALONE,
          env: UNDER_RUNC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'timed-alone-runsc',
          include: TIMED_ALONE,
          env: UNDER_RUNSC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          ...DOCKER,
        },
      },
      {
        test: {
          name: 'security-runsc-alone',
          include: RUNSC_ALONE,
          env: UNDER_RUNSC,
          testTimeout: 300_000,
          hookTimeout: 900_000,
          sequence: { groupOrder: 5 },
          maxWorkers: 1,
          fileParallelism: false,
        },
      },
    ],
  },
});
