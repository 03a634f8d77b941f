/**
 * Sections 1 and 2: agent-runner's SandboxRuntime against the raw Docker CLI, alternating A and B (and which
 * goes first) so drift in the engine's speed hits both sides alike.
 */
import type { SandboxRuntime } from '../src/core/ports.js';
import type { BenchSandboxes } from './bench-sandbox.js';
import { docker, dockerRunArgs } from './docker-cli.js';
import type { RawEngine } from './raw-engine.js';
import { median, round, summarize, timed, type SampleSummary } from './stats.js';

export interface Comparison {
  name: string;
  agentRunner: SampleSummary;
  raw: SampleSummary;
  /** median(agent-runner) / median(raw). */
  ratio: number;
  warmup: number;
}

export interface Repetitions {
  warmup: number;
  counted: number;
}

function compare(name: string, a: number[], b: number[], warmup: number): Comparison {
  return {
    name,
    agentRunner: summarize(a),
    raw: summarize(b),
    ratio: round(median(a) / median(b), 3),
    warmup,
  };
}

/** Runs `a` and `b` alternately, `b` first on odd repetitions; warm-up repetitions are not kept. */
async function alternate(
  repetitions: Repetitions,
  a: (kept: boolean) => Promise<number>,
  b: (kept: boolean) => Promise<number>,
): Promise<{ a: number[]; b: number[] }> {
  const kept = { a: [] as number[], b: [] as number[] };
  for (let index = 0; index < repetitions.warmup + repetitions.counted; index += 1) {
    const keep = index >= repetitions.warmup;
    const first = index % 2 === 0 ? 'a' : 'b';
    for (const side of first === 'a' ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
      const ms = await (side === 'a' ? a(keep) : b(keep));
      if (keep) kept[side].push(ms);
    }
  }
  return kept;
}

/**
 * Section 1: create + start (`runtime.create`) against `docker run -d` with flags built from the same create
 * options; removal (`runtime.remove` against `docker stop -t 1` + `docker rm -f -v`) timed separately.
 */
export async function compareCreate(
  runtime: SandboxRuntime,
  sandboxes: BenchSandboxes,
  repetitions: Repetitions,
): Promise<{ create: Comparison; remove: Comparison }> {
  const removeA: number[] = [];
  const removeB: number[] = [];
  const { a, b } = await alternate(
    repetitions,
    async (kept) => {
      const spec = sandboxes.spec('create');
      const created = await timed(() => runtime.create(spec));
      const removed = await timed(() => runtime.remove(created.value.id));
      if (kept) removeA.push(removed.ms);
      return created.ms;
    },
    async (kept) => {
      const args = dockerRunArgs(sandboxes.createOptions(sandboxes.spec('create-raw')));
      const created = await timed(() => docker(args));
      const id = created.value;
      const removed = await timed(async () => {
        await docker(['stop', '-t', '1', id]);
        await docker(['rm', '-f', '-v', id]);
      });
      if (kept) removeB.push(removed.ms);
      return created.ms;
    },
  );
  return {
    create: compare('sandbox create + start', a, b, repetitions.warmup),
    remove: compare('sandbox stop + remove (not a target)', removeA, removeB, repetitions.warmup),
  };
}

/** Section 2: one exec of `true` (`runtime.exec`) against `docker exec <id> true`, in the same sandbox. */
export async function compareExec(
  runtime: SandboxRuntime,
  sandboxes: BenchSandboxes,
  repetitions: Repetitions,
): Promise<Comparison> {
  const sandbox = await runtime.create(sandboxes.spec('exec'));
  try {
    const { a, b } = await alternate(
      repetitions,
      async () => {
        const { ms, value } = await timed(() => runtime.exec(sandbox.id, ['true'], { timeoutMs: 30_000 }));
        if (value.exitCode !== 0) throw new Error(`true exited ${value.exitCode} through the runtime`);
        return ms;
      },
      async () => (await timed(() => docker(['exec', sandbox.id, 'true']))).ms,
    );
    return compare('worker exec of `true`', a, b, repetitions.warmup);
  } finally {
    await runtime.remove(sandbox.id);
  }
}

/** The Docker CLI's own start-up (`docker --version`, no engine call): the floor under every raw figure. */
export async function cliStartFloor(count: number): Promise<SampleSummary> {
  const samples: number[] = [];
  for (let index = 0; index < count + 2; index += 1) {
    const { ms } = await timed(() => docker(['--version']));
    if (index >= 2) samples.push(ms);
  }
  return summarize(samples);
}

/** The parts of `docker inspect` that carry the hardening and limits, for comparing the two sides. */
function hardeningOf(inspect: Record<string, unknown>): Record<string, unknown> {
  const host = (inspect.HostConfig ?? {}) as Record<string, unknown>;
  const config = (inspect.Config ?? {}) as Record<string, unknown>;
  const mounts = ((inspect.Mounts ?? []) as Record<string, unknown>[]).map((mount) => ({
    type: mount.Type,
    source: mount.Source,
    destination: mount.Destination,
    rw: mount.RW,
  }));
  const labels = Object.keys((config.Labels ?? {}) as Record<string, string>).sort();
  return {
    init: host.Init,
    capDrop: host.CapDrop,
    securityOpt: host.SecurityOpt,
    readonlyRootfs: host.ReadonlyRootfs,
    tmpfs: host.Tmpfs,
    memory: host.Memory,
    memorySwap: host.MemorySwap,
    pidsLimit: host.PidsLimit,
    nanoCpus: host.NanoCpus,
    networkMode: host.NetworkMode,
    user: config.User,
    workingDir: config.WorkingDir,
    entrypoint: config.Entrypoint,
    cmd: config.Cmd,
    env: config.Env,
    labels,
    mounts,
  };
}

/**
 * Starts one sandbox each way and checks `docker inspect` shows the same hardening, limits, labels and mount
 * on both (outside any timing). Throws on a difference, so a ratio is never computed over unequal containers.
 */
export async function assertSameHardening(
  runtime: SandboxRuntime,
  sandboxes: BenchSandboxes,
): Promise<Record<string, unknown>> {
  const ours = await runtime.create(sandboxes.spec('check'));
  let rawId: string | undefined;
  try {
    rawId = await docker(dockerRunArgs(sandboxes.createOptions(sandboxes.spec('check-raw'))));
    const [a, b] = JSON.parse(await docker(['inspect', ours.id, rawId])) as Record<string, unknown>[];
    const left = hardeningOf(a ?? {});
    const right = hardeningOf(b ?? {});
    // The task id label's value differs by design; keys are compared.
    if (JSON.stringify(left) !== JSON.stringify(right)) {
      throw new Error(
        `the raw container differs from agent-runner's:\n${JSON.stringify(left)}\n${JSON.stringify(right)}`,
      );
    }
    return left;
  } finally {
    await runtime.remove(ours.id);
    if (rawId) await docker(['rm', '-f', '-v', rawId]);
  }
}

/**
 * The floor of section 1: create + start through the Engine API directly (raw-engine.ts, node:http over the
 * socket) with the very create options agent-runner sends, against `runtime.create`.
 */
export async function compareCreateRawApi(
  runtime: SandboxRuntime,
  engine: RawEngine,
  sandboxes: BenchSandboxes,
  repetitions: Repetitions,
): Promise<Comparison> {
  const { a, b } = await alternate(
    repetitions,
    async () => {
      const created = await timed(() => runtime.create(sandboxes.spec('create-api')));
      await runtime.remove(created.value.id);
      return created.ms;
    },
    async () => {
      const created = await timed(() =>
        engine.createAndStart(sandboxes.createOptions(sandboxes.spec('create-api-raw'))),
      );
      await engine.remove(created.value);
      return created.ms;
    },
  );
  return compare('sandbox create + start vs raw Engine API', a, b, repetitions.warmup);
}

/** The floor of section 2: an exec of `true` through the Engine API directly, against `runtime.exec`. */
export async function compareExecRawApi(
  runtime: SandboxRuntime,
  engine: RawEngine,
  sandboxes: BenchSandboxes,
  repetitions: Repetitions,
): Promise<Comparison> {
  const sandbox = await runtime.create(sandboxes.spec('exec-api'));
  try {
    const { a, b } = await alternate(
      repetitions,
      async () => {
        const { ms, value } = await timed(() => runtime.exec(sandbox.id, ['true'], { timeoutMs: 30_000 }));
        if (value.exitCode !== 0) throw new Error(`true exited ${value.exitCode} through the runtime`);
        return ms;
      },
      async () => {
        const { ms, value } = await timed(() => engine.exec(sandbox.id, ['true']));
        if (value !== 0) throw new Error(`true exited ${value} through the raw API`);
        return ms;
      },
    );
    return compare('worker exec of `true` vs raw Engine API', a, b, repetitions.warmup);
  } finally {
    await runtime.remove(sandbox.id);
  }
}
