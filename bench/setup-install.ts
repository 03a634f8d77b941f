/**
 * Bench row 6: `npm ci` of a generated lockfile project (a few hundred packages from the npm registry) as a
 * `sandbox.setup` command, under the default `allowlist` set-up policy (through the gateway's egress proxy)
 * against `open` (Docker's bridge, no proxy). Each attempt is a fresh sandbox with an empty npm cache and a
 * fresh copy of the project; the two policies alternate so the registry's and the machine's drift hit both.
 */
import { cp, chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateConfig } from '../src/config/load.js';
import type { NetworkPolicy } from '../src/config/schema.js';
import { startTaskGateway } from '../src/gateway/task-gateway.js';
import type { DockerSandboxRuntime } from '../src/sandbox/docker-runtime.js';
import { MEDIUM_DEV_DEPENDENCIES, writeNpmProject } from '../tests/support/npm-project.js';
import { BENCH_LABEL, BENCH_UID } from './bench-sandbox.js';
import { median, round } from './stats.js';

export interface SetupInstallResult {
  packages: number;
  attempts: number;
  allowlistMs: number[];
  openMs: number[];
  allowlistMedianMs: number;
  openMedianMs: number;
  ratio: number;
}

async function chownTree(dir: string): Promise<void> {
  await chown(dir, BENCH_UID, BENCH_UID);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(full);
    else await chown(full, BENCH_UID, BENCH_UID);
  }
}

export async function timedInstall(
  runtime: DockerSandboxRuntime,
  input: { image: string; runId: string; template: string; policy: NetworkPolicy; attempt: number },
): Promise<number> {
  const project = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-npm-'));
  try {
    await cp(input.template, project, { recursive: true });
    await chownTree(project);
    const config = validateConfig([
      {
        source: 'bench',
        values: {
          sandbox: {
            setup: ['npm ci --no-audit --no-fund --loglevel=error'],
            setupNetwork: input.policy,
            setupTimeout: '10m',
            ...(input.policy === 'allowlist' ? { allowlist: ['registry.npmjs.org'] } : {}),
          },
        },
      },
    ]);
    const gateway = await startTaskGateway({
      config,
      env: {},
      repoRoot: project,
      onLog: (line) => {
        if (process.env.BENCH_DEBUG && true) process.stderr.write(line + '\n');
      },
    });
    try {
      const info = await runtime.create({
        taskId: `bench-${input.runId}-npm-${input.policy}-${input.attempt}`,
        repoPath: project,
        image: input.image,
        user: { uid: BENCH_UID, gid: BENCH_UID },
        mounts: [{ hostPath: project, containerPath: '/workspace' }, ...gateway.access.mounts],
        workdir: '/workspace',
        env: gateway.access.env,
        limits: { cpus: 2, memoryBytes: 2 * 1024 ** 3, pids: 512 },
        network: gateway.access.network,
        keeper: gateway.access.keeper,
        labels: { [BENCH_LABEL]: input.runId },
      });
      try {
        let durationMs = -1;
        await gateway.setup(runtime, info.id, {
          workdir: '/workspace',
          onReport: (report) => {
            if (report.phase === 'finished') durationMs = report.durationMs ?? -1;
          },
        });
        return durationMs;
      } finally {
        await runtime.remove(info.id);
      }
    } finally {
      await gateway.close();
    }
  } finally {
    await rm(project, { recursive: true, force: true });
  }
}

/** Alternates allowlist and open `attempts` times each; the ratio is of the medians. */
export async function measureSetupInstall(
  runtime: DockerSandboxRuntime,
  input: { image: string; runId: string; attempts: number; onProgress?: (line: string) => void },
): Promise<SetupInstallResult> {
  const template = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-npm-template-'));
  try {
    writeNpmProject(template, { name: 'bench-install', devDependencies: MEDIUM_DEV_DEPENDENCIES });
    const lock = JSON.parse(await readFile(path.join(template, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    const packages = Object.keys(lock.packages).filter((key) => key !== '').length;
    const allowlistMs: number[] = [];
    const openMs: number[] = [];
    for (let attempt = 1; attempt <= input.attempts; attempt += 1) {
      for (const policy of attempt % 2 === 1
        ? (['allowlist', 'open'] as const)
        : (['open', 'allowlist'] as const)) {
        const ms = await timedInstall(runtime, { ...input, template, policy, attempt });
        (policy === 'allowlist' ? allowlistMs : openMs).push(round(ms, 0));
        input.onProgress?.(`   ${policy} attempt ${attempt}: ${round(ms / 1000, 1)} s`);
      }
    }
    const allowlistMedianMs = median(allowlistMs);
    const openMedianMs = median(openMs);
    return {
      packages,
      attempts: input.attempts,
      allowlistMs,
      openMs,
      allowlistMedianMs,
      openMedianMs,
      ratio: round(allowlistMedianMs / openMedianMs, 2),
    };
  } finally {
    await rm(template, { recursive: true, force: true });
  }
}
