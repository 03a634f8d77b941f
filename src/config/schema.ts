/**
 * The schema of agent-runner.yaml: the single source of the `Config` type and of each key's one-line meaning
 * (its description, from which docs/configuration.md is generated: `npm run docs:generate`). Durations and
 * sizes are written as text (`20m`, `4g`) and come out as numbers (milliseconds, bytes).
 */
import * as z from 'zod';
import { WORKER_TYPES, type WorkerType } from '../worker/worker-kinds.js';
import {
  SECRET_LIKE_NAME,
  CODEX_VERSION,
  dodCheckSchema,
  duration,
  limitsSchema,
  positiveInt,
  priceSchema,
  regularExpression,
  workerBlockFor,
} from './schema-parts.js';
import { forgeSchema } from './forge-schema.js';
import { gatewaySchema, sandboxSchema, scopeSchema } from './sandbox-schema.js';

export {
  CODEX_VERSION,
  DEFAULT_EXCLUDE,
  DEFAULT_READ,
  DEFAULT_REPLAY_CAPS,
  SECRET_LIKE_NAME,
  dodCheckSchema,
  limitsSchema,
  networkPolicySchema,
  replayCapsSchema,
} from './schema-parts.js';
export type { DodCheck, Limits, NetworkPolicy, Price, ReplayCaps } from './schema-parts.js';

const metaSchema = z
  .strictObject({
    baseUrl: z
      .url()
      .default('https://api.openai.com/v1')
      .describe('OpenAI-compatible endpoint (Chat Completions)'),
    model: z
      .string()
      .min(1)
      .default('gpt-5.5')
      .describe("the Meta-agent's model; codex, qwen and opencode use it too unless `worker.model` is set"),
    apiKeyEnv: z
      .string()
      .min(1)
      .default('OPENAI_API_KEY')
      .describe("name of the environment variable holding the Meta-agent's key"),
    requestTimeout: duration('2m').default(120_000).describe('time limit of each HTTP attempt'),
    maxRetries: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(3)
      .describe('retries on 408/409/429/5xx, honouring `Retry-After` up to 60 s'),
    maxRepairs: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(2)
      .describe('invalid replies sent back with their exact errors before the task fails'),
    promptBudgetTokens: positiveInt
      .default(24_000)
      .describe('what the Meta-agent sees is cut to this many tokens (oldest detail first)'),
  })
  .describe('The Meta-agent: the model that plans the criteria, decides each step and judges completion.');

const workerSchema = z
  .strictObject({
    type: z
      .enum(WORKER_TYPES)
      .default('codex')
      .describe(
        'the default worker (the Meta-agent may choose another configured one per run); `worker.model`, `worker.baseUrl` and `worker.apiKeyEnv` describe it',
      ),
    codexVersion: z.string().default(CODEX_VERSION).describe('Codex CLI version in the worker image'),
    model: z
      .string()
      .min(1)
      .optional()
      .describe("the default worker's model")
      .meta({ defaultText: "the worker's own (codex, qwen, opencode: `meta.model`)" }),
    baseUrl: z
      .url()
      .optional()
      .describe("the default worker's endpoint")
      .meta({ defaultText: "the worker's own (codex, qwen, opencode: `meta.baseUrl`)" }),
    apiKeyEnv: z
      .string()
      .min(1)
      .optional()
      .describe("name of the environment variable holding the default worker's key")
      .meta({ defaultText: "the worker's own (codex, qwen, opencode: `meta.apiKeyEnv`)" }),
    allowedModels: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('the models the gateway lets the default worker ask for; any other is refused')
      .meta({ defaultText: '`[worker.model]`' }),
    timeout: duration('20m')
      .default(1_200_000)
      .describe('wall clock of each worker run (then SIGTERM, `worker.grace`, SIGKILL; the run exits 124)'),
    grace: duration('10s')
      .default(10_000)
      .describe('time between SIGTERM and SIGKILL when a worker run is stopped'),
  })
  .describe('The default worker: the coding agent that runs in the sandbox.')
  .meta({ see: 'workers.md' });

const workersSchema = z
  .strictObject(
    Object.fromEntries(WORKER_TYPES.map((type) => [type, workerBlockFor(type)])) as Record<
      WorkerType,
      ReturnType<typeof workerBlockFor>
    >,
  )
  .describe(
    "A further worker the Meta-agent may choose per run (`workers.claude: {}` is enough), or fields of the default one; unset fields take the worker's own defaults.",
  )
  .meta({ keyName: 'type', see: 'workers.md' });

const dodSchema = z
  .strictObject({
    checks: z
      .array(dodCheckSchema)
      .optional()
      .describe('the checks, run in the sandbox after every worker run')
      .meta({ defaultText: 'detected from the repository' }),
    skip: z.boolean().default(false).describe('record the DoD as skipped (also `--skip-dod`)'),
    baseline: z
      .enum(['auto', 'off'])
      .default('auto')
      .describe(
        '`auto`: the DoD runs once on the base tree before the first worker run, beside planning, so a check red before any change is told apart from one the task broke; `off`: no baseline',
      ),
    redBase: z
      .enum(['no_worse', 'must_pass'])
      .default('no_worse')
      .describe(
        'a check red on the base: `no_worse` lets it stay red when no test fails that did not fail on the base; `must_pass` refuses it',
      ),
  })
  .describe("The Definition of Done: your project's own checks.")
  .meta({ see: 'checks.md' });

const parallelSchema = z
  .strictObject({
    split: z
      .enum(['auto', 'always', 'never'])
      .default('auto')
      .describe(
        "`auto`: the Meta-agent may split a PRD into subtasks, run as subtasks when that pays (a planner that answered in under a second: one task with all their criteria); `always`: run the subtasks whatever the model's speed; `never`: always one task (also `--single`)",
      ),
    max: positiveInt
      .max(32)
      .optional()
      .describe(
        'subtasks running at once: one per core, as many as free memory holds sandboxes at `sandbox.memory`',
      )
      .meta({ defaultText: 'from the machine, at most 4' }),
    checkSandbox: z
      .enum(['reuse', 'fresh'])
      .default('reuse')
      .describe(
        "where the combined checks run: `reuse`: the project's one integration sandbox, brought to each head in place (a fresh one when a head changed what the set-up reads); `fresh`: a new sandbox, set-up included, for every combined check",
      ),
  })
  .describe('One PRD split into subtasks that run side by side.')
  .meta({ see: 'parallel.md' });

const controlSchema = z
  .strictObject({
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL')
      .optional()
      .describe(
        'the control database; better given in the environment than written in the repository, which every worker reads (also `--control`)',
      ),
    leaseSeconds: z.coerce
      .number()
      .int()
      .min(3)
      .max(86_400)
      .optional()
      .describe('a node without a heartbeat for this long is stale: its tasks are resumed by other nodes')
      .meta({ defaultText: '`30`' }),
  })
  .describe('The control plane: the PostgreSQL database that makes `serve` a node of a fleet.')
  .meta({ see: 'fleet.md' });

const deliverSchema = z
  .strictObject({
    push: z.boolean().default(false).describe('push `agent-runner/<ID>` from the host after the task'),
    pr: z.boolean().default(false).describe('also open or update its pull/merge request (implies `push`)'),
    when: z
      .enum(['complete', 'always'])
      .default('complete')
      .describe('`complete`: deliver only a COMPLETE task; `always`: any, as a draft unless COMPLETE'),
    remote: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a git remote name like origin')
      .default('origin')
      .describe('the remote of the repository the task ran in that delivery pushes to'),
    forge: z
      .enum(['auto', 'github', 'gitlab'])
      .default('auto')
      .describe("the forge; `auto` reads it from the remote's host (github.com, gitlab.com, `gitlab.*`)"),
    apiUrl: z
      .url()
      .optional()
      .describe(
        'the API of GitHub Enterprise (`https://HOST/api/v3`) or a self-hosted GitLab (`https://HOST`)',
      )
      .meta({ defaultText: 'the public API' }),
    closes: z.coerce
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'an issue of the same repository the request closes: its body says `Closes #N`, and the issue gets a reply with the request and the outcome (also `--closes`)',
      ),
    base: z
      .string()
      .min(1)
      .optional()
      .describe('the branch the request merges into')
      .meta({ defaultText: "the task's `--base` branch, else the checked-out branch" }),
  })
  .describe(
    'Delivery after the task: push the task branch from the host and open or update its pull/merge request.',
  )
  .meta({ see: 'delivery.md' });

const reviewSchema = z
  .strictObject({
    trigger: z
      .string()
      .trim()
      .min(1)
      .default('@agent-runner')
      .describe(
        'the phrase a conversation comment must carry to be read by `followup --from-review` (inline comments and review bodies need none); case-insensitive',
      ),
  })
  .describe(
    "Review comments of a pull/merge request as a follow-up's instruction (`followup --from-review`).",
  )
  .meta({ see: 'delivery.md' });

export const configSchema = z
  .strictObject({
    meta: metaSchema.prefault({}),
    worker: workerSchema.prefault({}),
    workers: workersSchema.prefault({}),
    sandbox: sandboxSchema.prefault({}),
    gateway: gatewaySchema.prefault({}),
    scope: scopeSchema.prefault({}),
    dod: dodSchema.prefault({}),
    limits: limitsSchema.prefault({}),
    parallel: parallelSchema.prefault({}),
    prices: z
      .record(z.string(), priceSchema)
      .default({})
      .describe(
        'Prices in USD per million tokens, by model; the cost in the note and the cost budget use them.',
      )
      .meta({ keyName: 'model' }),
    control: controlSchema.prefault({}),
    patterns: z
      .strictObject({
        dirs: z
          .array(z.string().min(1))
          .default([])
          .describe('extra pattern directories (a pattern of the same name replaces a built-in)'),
      })
      .describe('The Command Pattern Library the Meta-agent draws its instructions from.')
      .prefault({}),
    notes: z
      .strictObject({
        template: z
          .string()
          .min(1)
          .optional()
          .describe(
            'Handlebars template of the task note; every value it gets is already escaped and bounded, so place values and never unescape them',
          )
          .meta({ defaultText: '`templates/task-note.md.hbs`' }),
      })
      .describe('The task note.')
      .prefault({}),
    redact: z
      .strictObject({
        patterns: z
          .array(regularExpression)
          .default([])
          .describe(
            'regular expressions (JavaScript syntax) redacted from everything agent-runner prints and writes (API keys always are)',
          ),
      })
      .describe('What is redacted besides the keys and tokens agent-runner knows.')
      .prefault({}),
    deliver: deliverSchema.prefault({}),
    forge: forgeSchema.prefault({}),
    review: reviewSchema.prefault({}),
    memory: z
      .strictObject({
        dir: z
          .string()
          .min(1)
          .refine((dir) => !dir.startsWith('/') && !dir.split(/[\\/]/).includes('..'), {
            message: 'a directory inside the repository, relative to its root, without ..',
          })
          .default('.agent-runner/memory')
          .describe(
            'the memory bank: one Markdown file per entry, committed and reviewed like code; every worker run reads the active entries of its base commit',
          ),
      })
      .describe("The memory bank: the team's decisions, reaching every worker in the file it reads natively.")
      .meta({ see: 'memory.md' })
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
