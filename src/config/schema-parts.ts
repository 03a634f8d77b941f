/**
 * The parts of the agent-runner.yaml schema (src/config/schema.ts): value types (durations, sizes), the
 * defaults of the scope, and the small schemas other modules import on their own (a DoD check, the limits,
 * the replay's bounds, a worker's block). Every key carries its one-line meaning as its description: the
 * configuration reference (docs/configuration.md) is generated from it (src/docs/config-reference.ts).
 */
import * as z from 'zod';
import { OPENAI_APIS, WORKER_KINDS, type WorkerType } from '../worker/worker-kinds.js';
import { parseDuration, parseSize } from './units.js';

declare module 'zod' {
  /** What the configuration reference reads beside a key's description. */
  interface GlobalMeta {
    /** The key is written as a duration (`20m`) or a size (`4g`); its default is shown that way. */
    unit?: 'duration' | 'size';
    /** The default in words, for a key whose default is worked out at run time. */
    defaultText?: string;
    /** An object whose keys are names of one kind (`workers.<type>`, `prices.<model>`): the placeholder. */
    keyName?: string;
    /** The page of docs/ that tells more about a group of keys (relative to docs/). */
    see?: string;
  }
}

/** A duration: `90s`, `20m`, `2h` (a bare number is seconds), parsed to milliseconds. */
export const duration = (example: string) =>
  z
    .union([z.string(), z.number()])
    .transform((value, context) => {
      const ms = parseDuration(value);
      if (ms === undefined) {
        context.addIssue({ code: 'custom', message: `expected a duration like ${example}` });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ unit: 'duration' });

/** A size: `512m`, `4g` (a bare number is bytes), parsed to bytes. */
export const size = (example: string) =>
  z
    .union([z.string(), z.number()])
    .transform((value, context) => {
      const bytes = parseSize(value);
      if (bytes === undefined) {
        context.addIssue({ code: 'custom', message: `expected a size like ${example}` });
        return z.NEVER;
      }
      return bytes;
    })
    .meta({ unit: 'size' });

export const positiveInt = z.number().int().positive();

export const regularExpression = z
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

export const priceSchema = z
  .strictObject({
    input: z.number().nonnegative().describe('USD per million input tokens'),
    cachedInput: z
      .number()
      .nonnegative()
      .optional()
      .describe('USD per million cached input tokens')
      .meta({ defaultText: 'the `input` price' }),
    output: z.number().nonnegative().describe('USD per million output tokens'),
  })
  .describe("The prices of a model's tokens");
/** USD per million tokens. */
export type Price = z.infer<typeof priceSchema>;

export const dodCheckSchema = z.strictObject({
  name: z.string().min(1).describe("the check's name, shown in the progress and the note"),
  command: z.string().min(1).describe('the shell command, run in the sandbox; exit 0 is a pass'),
  timeout: duration('10m').default(600_000).describe('time limit of the check'),
});
export type DodCheck = z.infer<typeof dodCheckSchema>;

/**
 * The task's limits: the one limits type. A task's runner, a project's orchestrator (and what is left of it,
 * handed to each subtask) and the gateway's budget all use it, or a part of it (`Pick<Limits, ...>`).
 * `wallClock` is in milliseconds.
 */
export const limitsSchema = z
  .strictObject({
    maxIterations: positiveInt.default(8).describe('worker runs'),
    maxMetaCalls: positiveInt.default(40).describe('Meta-agent calls'),
    wallClock: duration('2h')
      .default(2 * 3_600_000)
      .describe(
        'the whole task, every attempt together (the time between attempts does not count); checks and Meta-agent calls are cut when it runs out',
      ),
    maxTokens: positiveInt
      .optional()
      .describe('token budget (Meta-agent and worker), also enforced by the gateway during a worker run'),
    maxCostUsd: z
      .number()
      .positive()
      .optional()
      .describe(
        'cost budget in USD (priced with `prices`), also enforced by the gateway during a worker run',
      ),
    maxStalls: positiveInt
      .default(3)
      .describe(
        'the same refusal, or the same decision on unchanged facts, this many times in a row: `NEEDS_REVIEW` (stalled)',
      ),
  })
  .describe('Budgets of the whole task; a limit reached ends it `NEEDS_REVIEW`.');
export type Limits = z.infer<typeof limitsSchema>;

/**
 * Bounds of the replay (bringing the worker's commits from the sandbox repository to the person's task branch
 * and worktree): over one, nothing more is replayed, the branch and the worktree stay where they are, and the
 * task ends NEEDS_REVIEW naming the key to raise.
 */
export const replayCapsSchema = z.strictObject({
  maxCommits: positiveInt
    .default(500)
    .describe(
      'new commits one replay brings from the sandbox to the task branch; more: none is brought, `NEEDS_REVIEW` (`replay limit: ...`), the commits stay in the sandbox repository',
    ),
  maxTreeBytes: size('2g')
    .default(2 * 1024 ** 3)
    .describe(
      "sum of the file sizes of the worker's head tree (what a checkout would write into your worktree), read before anything is replayed; more: as above",
    ),
});
export type ReplayCaps = z.infer<typeof replayCapsSchema>;
export const DEFAULT_REPLAY_CAPS: ReplayCaps = replayCapsSchema.parse({});

/** A `workers.<type>` block. */
const workerBlockSchema = z.strictObject({
  model: z
    .string()
    .min(1)
    .optional()
    .describe("the worker's model")
    .meta({ defaultText: "the worker's own" }),
  baseUrl: z.url().optional().describe("the worker's endpoint").meta({ defaultText: "the worker's own" }),
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
    .optional()
    .describe("name of the environment variable holding the worker's key")
    .meta({ defaultText: "the worker's own" }),
  version: z
    .string()
    .regex(/^[0-9A-Za-z.+-]+$/, 'a version like 2.1.330')
    .optional()
    .describe("the CLI's version installed in the worker image")
    .meta({ defaultText: 'the version agent-runner pins' }),
  timeout: duration('20m')
    .optional()
    .describe("wall clock of each of this worker's runs")
    .meta({ defaultText: '`worker.timeout`' }),
  extraArgs: z
    .array(z.string())
    .default([])
    .describe("flags appended to the CLI's command line (after agent-runner's own)"),
  api: z
    .enum(OPENAI_APIS)
    .optional()
    .describe(
      'the OpenAI API it speaks, for qwen and opencode only: `responses` or `chat` (Chat Completions)',
    )
    .meta({ defaultText: '`responses`' }),
});

/** A worker's block: `api` only where the worker speaks it. */
export const workerBlockFor = (type: WorkerType) =>
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
