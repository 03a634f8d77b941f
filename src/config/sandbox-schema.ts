/**
 * The sandbox's part of the agent-runner.yaml schema (src/config/schema.ts): the container, its gateway and
 * the scope of what the worker sees. Every key's description is its one-line meaning in docs/configuration.md.
 */
import semver from 'semver';
import * as z from 'zod';
import {
  DEFAULT_EXCLUDE,
  DEFAULT_READ,
  duration,
  networkPolicySchema,
  positiveInt,
  replayCapsSchema,
  size,
} from './schema-parts.js';

export const sandboxSchema = z
  .strictObject({
    image: z
      .string()
      .min(1)
      .optional()
      .describe('worker image')
      .meta({ defaultText: 'the tag of `Dockerfile.worker`' }),
    baseImage: z
      .string()
      .min(1)
      .default('node:22-bookworm-slim')
      .describe(
        'base for `image build` (`agent-runner-base:bookworm`, Debian bookworm with Node 18, is used when only that exists)',
      ),
    cpus: z.number().positive().max(256).default(2).describe('CPUs the container may use'),
    memory: size('4g')
      .default(4 * 1024 ** 3)
      .describe('memory limit of the container (its tmpfs `/tmp` holds at most half of it)'),
    pids: positiveInt.default(512).describe('most processes in the container'),
    // hard caps: src/sandbox/cap-volume.ts makes each file system and gives the files back when the sandbox stops.
    disk: z
      .strictObject({
        repository: size('4g')
          .default(4 * 1024 ** 3)
          .describe(
            'how much the sandbox repository (work tree and `.git`, `node_modules` included) may grow while the sandbox runs; above it its processes are stopped and the task ends `NEEDS_REVIEW`',
          ),
        codexHome: size('1g')
          .default(1024 ** 3)
          .describe(
            "the same for the task's CODEX_HOME (`runs/<ID>/codex-home`: the worker's sessions and whatever it writes there)",
          ),
        hard: z
          .boolean()
          .default(true)
          .describe(
            "each capped directory on a loop-mounted file system of the cap's size, so no write passes it (root on Linux with loop devices; not with `--keep-sandbox`); `false`, or where none can be made: watched",
          ),
      })
      .prefault({}),
    runtime: z
      .enum(['runc', 'runsc', 'auto'])
      .default('auto')
      .describe(
        "the OCI runtime of every container of a task: `runc` (the host's kernel), `runsc` (gVisor's user-space kernel between the worker and the host; exit 4 when the engine lacks it) or `auto` (runsc where registered and no phase is `open`, else runc); the note says which and why",
      ),
    network: networkPolicySchema
      .default('gateway-only')
      .describe(
        'what the worker reaches: the gateway only, the gateway and `sandbox.allowlist`, or any host',
      ),
    allowlist: z.array(z.string().min(1)).default([]).describe('domains the `allowlist` policy lets through'),
    setup: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'commands run once per sandbox before the first worker run (e.g. `npm ci`); set (`[]` included) it replaces the detected set-up',
      )
      .meta({ defaultText: 'detected from the repository' }),
    setupNetwork: networkPolicySchema
      .optional()
      .describe('network policy of the set-up phase')
      .meta({ defaultText: "`allowlist` of the repository's package registries" }),
    setupTimeout: duration('15m').default(900_000).describe('time limit of each set-up command'),
    extraCaCert: z
      .string()
      .min(1)
      .optional()
      .describe(
        'extra CA bundle (behind a TLS-inspecting proxy) trusted by the worker image and every stage of a project Dockerfile; remembered for later builds',
      ),
    env: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'),
        z.union([z.string(), z.number(), z.boolean()]).transform(String),
      )
      .default({})
      .describe(
        'environment variables of the set-up commands and the worker (names that look like secrets, and the API key variables, are refused)',
      ),
    dockerfile: z
      .string()
      .min(1)
      .optional()
      .describe('a Dockerfile of the repository (path from its root) whose image the worker is layered on'),
    toolchain: z
      .enum(['auto', 'image'])
      .default('auto')
      .describe(
        '`auto`: give the sandbox the Node, package manager, Go, Python or Rust the repository declares; `image`: the image as it is',
      ),
    toolchains: z
      .strictObject({
        node: z
          .union([z.string().min(1), z.number().int().positive()])
          .transform(String)
          .refine(
            (range) => semver.validRange(range) !== null,
            'expected a Node version or range like 22 or ^20.11',
          )
          .optional()
          .describe(
            'a Node version or range (`22`, `^20.11`) that wins over the one the repository declares',
          ),
        go: z
          .union([z.string(), z.number()])
          .transform(String)
          .refine((version) => /^1\.\d{1,3}$/.test(version), 'expected a Go version like "1.22" (quoted)')
          .optional()
          .describe(
            'a Go version (`"1.23"`, quoted) that wins over `go.mod`\'s `go` line; Debian offers 1.19 and 1.21 to 1.23',
          ),
      })
      .prefault({}),
    replay: replayCapsSchema.prefault({}),
  })
  .describe('The per-task Docker container: image, limits, set-up, network, disk caps and toolchain.')
  .meta({ see: 'sandbox.md' });

export const gatewaySchema = z
  .strictObject({
    maxRequestBytes: size('8m')
      .default(8 * 1024 ** 2)
      .describe(
        'largest request body the gateway accepts from the sandbox: a model request, or one through the `allowlist` proxy and registry route (413 above, counted as it streams in)',
      ),
    maxHeaderBytes: size('16k')
      .default(16 * 1024)
      .describe('largest request line and headers (431 above)'),
    requestsPerMinute: positiveInt
      .default(120)
      .describe("the worker's model requests in any minute, refused ones included (429 above)"),
    maxConnections: positiveInt
      .default(64)
      .describe(
        "connections served at once on the sandbox's socket (model requests, the set-up's proxy and registry route); more wait in the queue",
      ),
    connectionQueue: positiveInt
      .default(1024)
      .describe(
        'connections that may wait for a slot (a descriptor each, nothing read); more are dropped as they come',
      ),
    connectionQueueWait: duration('2m')
      .default(120_000)
      .describe('how long a connection waits for a slot before it is dropped'),
    idleTimeout: duration('2m')
      .default(120_000)
      .describe('a CONNECT tunnel with no data either way for this long is closed (its slot freed)'),
  })
  .describe("The task's model gateway on the host: what the sandbox may send through it.")
  .meta({ see: 'sandbox.md#the-model-gateway-and-network-policies' });

export const scopeSchema = z
  .strictObject({
    exclude: z
      .array(z.string().min(1))
      .default(DEFAULT_EXCLUDE)
      .describe(
        'absent from the sandbox, git objects included (the defaults are always added; a later `!pattern` re-includes)',
      ),
    read: z
      .array(z.string().min(1))
      .default(DEFAULT_READ)
      .describe('present, not writable by the worker (`!/agent-runner.yaml` lifts the default)'),
    write: z
      .array(z.string().min(1))
      .default([])
      .describe('writable; a change elsewhere is a scope violation')
      .meta({ defaultText: 'everything not excluded or read' }),
  })
  .describe(
    "What the worker sees and may change; each list takes `.gitignore` patterns with exactly git's meaning, `!` included.",
  )
  .meta({ see: 'sandbox.md#isolation-and-scope' });
