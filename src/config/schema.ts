/**
 * The schema of agent-runner.yaml: the single source of the `Config` type. Durations and sizes are written
 * as text (`20m`, `4g`) and come out as numbers (milliseconds, bytes).
 */
import semver from 'semver';
import { z } from 'zod';
import { OPENAI_APIS, WORKER_KINDS, WORKER_TYPES, type WorkerType } from '../worker/worker-kinds.js';
import { parseDuration, parseSize } from './units.js';

const duration = (example: string) =>
  z.union([z.string(), z.number()]).transform((value, context) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      context.addIssue({ code: 'custom', message: `expected a duration like ${example}` });
      return z.NEVER;
    }
    return ms;
  });

const size = (example: string) =>
  z.union([z.string(), z.number()]).transform((value, context) => {
    const bytes = parseSize(value);
    if (bytes === undefined) {
      context.addIssue({ code: 'custom', message: `expected a size like ${example}` });
      return z.NEVER;
    }
    return bytes;
  });

const positiveInt = z.number().int().positive();

const regularExpression = z
  .string()
  .min(1)
  .refine(
    (source) => {
      try {
        new RegExp(source, 'g');
        return true;
      } catch {
        return false;
      }
    },
    { message: 'expected a regular expression (JavaScript syntax)' },
  );

/**
 * Absent from the sandbox unless a later `!pattern` re-includes them (`.gitignore` meaning, at any depth):
 * environment files, secrets directories, keys and certificates, and the credential files of package
 * managers, registries, clouds, ssh and Terraform.
 */
export const DEFAULT_EXCLUDE = [
  '**/.env',
  '**/.env.*',
  '**/secrets/**',
  '**/*.pem',
  '**/*.key',
  '.npmrc',
  '.yarnrc.yml',
  '.netrc',
  '.pypirc',
  '.git-credentials',
  '**/.docker/config.json',
  '**/.aws/**',
  '**/.ssh/**',
  'id_rsa*',
  'id_ed25519*',
  '*.p12',
  '*.pfx',
  '*.tfvars',
  'credentials*.json',
];
/** Present but read-only to the worker: agent-runner's own configuration (`!/agent-runner.yaml` in `read` lifts it). */
export const DEFAULT_READ = ['/agent-runner.yaml'];
export const CODEX_VERSION = WORKER_KINDS.codex.defaultVersion;

/** Names that look like credentials; refused in sandbox.env. */
export const SECRET_LIKE_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION|COOKIE)/i;

export const networkPolicySchema = z.enum(['gateway-only', 'allowlist', 'open']);
export type NetworkPolicy = z.infer<typeof networkPolicySchema>;

const priceSchema = z.strictObject({
  input: z.number().nonnegative(),
  cachedInput: z.number().nonnegative().optional(),
  output: z.number().nonnegative(),
});
/** USD per million tokens. */
export type Price = z.infer<typeof priceSchema>;

export const dodCheckSchema = z.strictObject({
  name: z.string().min(1),
  command: z.string().min(1),
  timeout: duration('10m').default(600_000),
});
export type DodCheck = z.infer<typeof dodCheckSchema>;

/**
 * The task's limits: the one limits type. A task's runner, a project's orchestrator (and what is left of it,
 * handed to each subtask) and the gateway's budget all use it, or a part of it (`Pick<Limits, ...>`).
 */
export const limitsSchema = z.strictObject({
  maxIterations: positiveInt.default(8),
  maxMetaCalls: positiveInt.default(40),
  /** Wall clock of the whole task, in milliseconds (written as a duration: `45m`, `2h`). */
  wallClock: duration('2h').default(2 * 3_600_000),
  maxTokens: positiveInt.optional(),
  maxCostUsd: z.number().positive().optional(),
  /** The same refusal, or the same decision with no change in the facts, this many times in a row: stalled. */
  maxStalls: positiveInt.default(3),
});
export type Limits = z.infer<typeof limitsSchema>;

/**
 * Bounds of the replay (bringing the worker's commits from the sandbox repository to the person's task branch
 * and worktree): over one, nothing more is replayed, the branch and the worktree stay where they are, and the
 * task ends NEEDS_REVIEW naming the key to raise.
 */
export const replayCapsSchema = z.strictObject({
  /** New commits one replay brings over at most. */
  maxCommits: positiveInt.default(500),
  /** Sum of the blob sizes of the worker's head tree: what a checkout would write into the person's worktree. */
  maxTreeBytes: size('2g').default(2 * 1024 ** 3),
});
export type ReplayCaps = z.infer<typeof replayCapsSchema>;
export const DEFAULT_REPLAY_CAPS: ReplayCaps = replayCapsSchema.parse({});

/** A `workers.<type>` block. */
const workerBlockSchema = z.strictObject({
  model: z.string().min(1).optional(),
  baseUrl: z.url().optional(),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
    .optional(),
  /** The CLI's version installed in the worker image (default: the one agent-runner pins). */
  version: z
    .string()
    .regex(/^[0-9A-Za-z.+-]+$/, 'a version like 2.1.330')
    .optional(),
  timeout: duration('20m').optional(),
  /** Flags appended to the CLI's command line (after agent-runner's own). */
  extraArgs: z.array(z.string()).default([]),
  /** The OpenAI-style API it speaks, for the workers that speak both (qwen, opencode); default `responses`. */
  api: z.enum(OPENAI_APIS).optional(),
});

/** A worker's block: `api` only where the worker speaks it. */
const workerBlockFor = (type: WorkerType) =>
  workerBlockSchema
    .superRefine((block, context) => {
      const protocols: readonly string[] = WORKER_KINDS[type].protocols;
      if (block.api !== undefined && !protocols.includes(block.api))
        context.addIssue({
          code: 'custom',
          path: ['api'],
          message: `${type} speaks only ${protocols.join(', ')}; \`api: ${block.api}\` is for qwen and opencode`,
        });
    })
    .optional();

export const configSchema = z
  .strictObject({
    meta: z
      .strictObject({
        baseUrl: z.url().default('https://api.openai.com/v1'),
        model: z.string().min(1).default('gpt-5.5'),
        apiKeyEnv: z.string().min(1).default('OPENAI_API_KEY'),
        requestTimeout: duration('2m').default(120_000),
        maxRetries: z.number().int().min(0).max(10).default(3),
        maxRepairs: z.number().int().min(0).max(10).default(2),
        promptBudgetTokens: positiveInt.default(24_000),
      })
      .prefault({}),
    worker: z
      .strictObject({
        /** The default worker (the Meta-agent may choose another configured one per run). */
        type: z.enum(WORKER_TYPES).default('codex'),
        codexVersion: z.string().default(CODEX_VERSION),
        model: z.string().min(1).optional(),
        baseUrl: z.url().optional(),
        apiKeyEnv: z.string().min(1).optional(),
        /** Models the gateway lets the worker ask for; unset: only `worker.model` (or `meta.model`). */
        allowedModels: z.array(z.string().min(1)).min(1).optional(),
        timeout: duration('20m').default(1_200_000),
        grace: duration('10s').default(10_000),
      })
      .prefault({}),
    /**
     * One block per further worker the Meta-agent may choose (`worker.type` is always one): model, endpoint,
     * key variable, CLI version, time limit, extra flags. Unset fields take the worker's own defaults.
     */
    workers: z
      .strictObject(
        Object.fromEntries(WORKER_TYPES.map((type) => [type, workerBlockFor(type)])) as Record<
          WorkerType,
          ReturnType<typeof workerBlockFor>
        >,
      )
      .prefault({}),
    sandbox: z
      .strictObject({
        image: z.string().min(1).optional(),
        baseImage: z.string().min(1).default('node:22-bookworm-slim'),
        cpus: z.number().positive().max(256).default(2),
        memory: size('4g').default(4 * 1024 ** 3),
        pids: positiveInt.default(512),
        /**
         * How much the task's sandbox repository (work tree and .git) and its CODEX_HOME may grow while the
         * sandbox runs (beyond their size when it was set up); the task ends NEEDS_REVIEW when one is reached.
         * `hard`: each lives on a file system of its own of that size (src/sandbox/cap-volume.ts) when the
         * machine can make one (root, loop devices); false (or a machine that cannot) watches the growth from
         * the host instead. When the sandbox stops, the files come back into the plain directory and the file
         * system goes (cap-volume.ts, releaseCapVolume), so a person sees them after the task as before.
         */
        disk: z
          .strictObject({
            repository: size('4g').default(4 * 1024 ** 3),
            codexHome: size('1g').default(1024 ** 3),
            hard: z.boolean().default(true),
          })
          .prefault({}),
        /** The OCI runtime of a task's containers: runc, runsc (gVisor), or auto (src/sandbox/container-runtime.ts). */
        runtime: z.enum(['runc', 'runsc', 'auto']).default('runc'),
        network: networkPolicySchema.default('gateway-only'),
        allowlist: z.array(z.string().min(1)).default([]),
        /** Unset: detected from the repository's lockfile and manifests (src/workspace/checks/detect-setup.ts). */
        setup: z.array(z.string().min(1)).optional(),
        setupNetwork: networkPolicySchema.optional(),
        setupTimeout: duration('15m').default(900_000),
        extraCaCert: z.string().min(1).optional(),
        env: z
          .record(
            z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'),
            z.union([z.string(), z.number(), z.boolean()]).transform(String),
          )
          .default({}),
        dockerfile: z.string().min(1).optional(),
        toolchain: z.enum(['auto', 'image']).default('auto'),
        /**
         * Versions that win over what the repository declares: `node: 22` (a semver range, `.nvmrc`-like) for a
         * project whose own declaration cannot be met, or to try another Node than the one it declares.
         */
        toolchains: z
          .strictObject({
            node: z
              .union([z.string().min(1), z.number().int().positive()])
              .transform(String)
              .refine(
                (range) => semver.validRange(range) !== null,
                'expected a Node version or range like 22 or ^20.11',
              )
              .optional(),
            /** A Go minor version (`1.22`) that wins over go.mod's `go` line. */
            go: z
              .union([z.string(), z.number()])
              .transform(String)
              .refine((version) => /^1\.\d{1,3}$/.test(version), 'expected a Go version like "1.22" (quoted)')
              .optional(),
          })
          .prefault({}),
        replay: replayCapsSchema.prefault({}),
      })
      .prefault({}),
    gateway: z
      .strictObject({
        /** Largest request body the gateway accepts from the worker (counted as it streams in). */
        maxRequestBytes: size('8m').default(8 * 1024 ** 2),
        /** Largest request head (request line and headers) it accepts. */
        maxHeaderBytes: size('16k').default(16 * 1024),
        /** Model requests per minute the worker may make (every request on the model route counts). */
        requestsPerMinute: positiveInt.default(120),
        /**
         * Connections the gateway serves at once on the sandbox's socket (model requests, the set-up's proxy
         * and registry route); more wait in the queue below, so the runner's descriptors stay bounded.
         */
        maxConnections: positiveInt.default(64),
        /** Connections that may wait for a slot; past it they are dropped as they come. */
        connectionQueue: positiveInt.default(1024),
        /** How long a connection waits for a slot before it is dropped. */
        connectionQueueWait: duration('2m').default(120_000),
        /** A CONNECT tunnel with no data either way for this long is closed (its slot freed). */
        idleTimeout: duration('2m').default(120_000),
      })
      .prefault({}),
    scope: z
      .strictObject({
        exclude: z.array(z.string().min(1)).default(DEFAULT_EXCLUDE),
        read: z.array(z.string().min(1)).default(DEFAULT_READ),
        write: z.array(z.string().min(1)).default([]),
      })
      .prefault({}),
    dod: z
      .strictObject({
        checks: z.array(dodCheckSchema).optional(),
        skip: z.boolean().default(false),
        // auto: the DoD runs once on the base tree before the first worker run (beside planning), so a check
        // red before any change is told apart from one the task broke; off: no baseline.
        baseline: z.enum(['auto', 'off']).default('auto'),
        // A check red on the base: no_worse (it may stay red if no test fails that did not on the base) or
        // must_pass (as without a baseline).
        redBase: z.enum(['no_worse', 'must_pass']).default('no_worse'),
      })
      .prefault({}),
    limits: limitsSchema.prefault({}),
    parallel: z
      .strictObject({
        // auto (the default): the Meta-agent may split a PRD into subtasks (it answers either way), and a split
        // runs as subtasks when it pays: a planner that answered in under a second (a model fast enough to leave
        // parallel work nothing to hide) has the subtasks run as one task with all their criteria. always: run
        // the subtasks whatever the model's speed. never: one task, always. A run that stays one task starts as
        // fast as with `never` (its workspace and sandbox are prepared while the planner answers), and a split
        // one is done only when every subtask's criteria hold on the final tree (the combined check).
        split: z.enum(['auto', 'always', 'never']).default('auto'),
        // Subtasks running at once; absent: what the machine holds (cores, free memory), at most 4.
        max: positiveInt.max(32).optional(),
        // Where the combined checks run: reuse (the default): one integration sandbox per project, set up once
        // and brought to each head in place (a fresh one when the head changed what the set-up reads or the
        // set-up's outputs changed); fresh: a new sandbox, set-up included, for every combined check.
        checkSandbox: z.enum(['reuse', 'fresh']).default('reuse'),
      })
      .prefault({}),
    prices: z.record(z.string(), priceSchema).default({}),
    /**
     * The control plane (src/control/): the PostgreSQL URL that makes `serve` a node of a fleet and `run
     * --detach` enqueue there. Better given as AGENT_RUNNER_CONTROL_URL than written in the repository: its
     * password is hidden from every output, but a file in the repository is read by every task's worker.
     */
    control: z
      .strictObject({
        url: z
          .string()
          .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL')
          .optional(),
        /**
         * A node without a heartbeat for this long is stale: its tasks are taken over by other nodes and
         * resumed there (default 30; AGENT_RUNNER_CONTROL_LEASE_SECONDS).
         */
        leaseSeconds: z.coerce.number().int().min(3).max(86_400).optional(),
      })
      .prefault({}),
    patterns: z.strictObject({ dirs: z.array(z.string().min(1)).default([]) }).prefault({}),
    notes: z.strictObject({ template: z.string().min(1).optional() }).prefault({}),
    redact: z.strictObject({ patterns: z.array(regularExpression).default([]) }).prefault({}),
    /**
     * Delivery after the task's end (src/deliver/): push `agent-runner/<ID>` from the host to `remote` of the
     * repository the task ran in, and open or update its pull/merge request (`pr`, which implies `push`).
     * `when: complete` delivers only a COMPLETE task; `always` delivers any, as a draft unless COMPLETE.
     * `forge` is read from the remote's host unless named; `apiUrl` is the API of GitHub Enterprise or a
     * self-hosted GitLab (default: the public one).
     */
    deliver: z
      .strictObject({
        push: z.boolean().default(false),
        pr: z.boolean().default(false),
        when: z.enum(['complete', 'always']).default('complete'),
        remote: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a git remote name like origin')
          .default('origin'),
        forge: z.enum(['auto', 'github', 'gitlab']).default('auto'),
        apiUrl: z.url().optional(),
        /** The branch the request merges into (default: the task's --base when a branch, else HEAD's branch). */
        base: z.string().min(1).optional(),
      })
      .prefault({}),
  })
  .superRefine((config, context) => {
    // A runsc sandbox has loopback only (gVisor is registered with --network=none): `open` cannot hold.
    for (const key of ['network', 'setupNetwork'] as const)
      if (config.sandbox.runtime === 'runsc' && config.sandbox[key] === 'open')
        context.addIssue({
          code: 'custom',
          path: ['sandbox', key],
          message: `open needs the container's own network, which a runsc sandbox lacks (gVisor runs with --network=none): use allowlist, or sandbox.runtime: runc`,
        });
    // Set-up and the worker see sandbox.env: a secret there would be readable by the worker, so refuse it.
    const keyEnvs = new Set(
      [
        config.meta.apiKeyEnv,
        config.worker.apiKeyEnv,
        ...Object.values(config.workers).map((block) => block?.apiKeyEnv),
      ].filter(Boolean),
    );
    for (const name of Object.keys(config.sandbox.env)) {
      if (keyEnvs.has(name) || SECRET_LIKE_NAME.test(name)) {
        context.addIssue({
          code: 'custom',
          path: ['sandbox', 'env', name],
          message:
            'looks like a secret; the worker can read every sandbox.env variable, so secrets stay out (the model key reaches the model through the gateway)',
        });
      }
    }
  });

/** The validated configuration. */
export type Config = z.infer<typeof configSchema>;
/** What a config file may hold before validation (all keys optional). */
export type RawConfig = z.input<typeof configSchema>;
