/**
 * All doctor checks in order. Each check gets its inputs explicitly; this file only gathers them (config,
 * Docker client) and decides which checks cannot run because an earlier one failed.
 */
import type Docker from 'dockerode';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createDockerClient } from '../sandbox/docker-client.js';
import { readWorkerImageInputs, workerImageTag } from '../sandbox/worker-image.js';
import { checkDiskCaps } from './disk-cap-check.js';
import { checkSandboxRuntime } from './runtime-check.js';
import { checkDockerEngine, checkWorkerImage } from './docker-checks.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';
import { runInImage } from '../toolchain/run-in-image.js';
import { checkEndpoint, probeUrl, type ProbeResult } from './endpoint-check.js';
import { checkGitRepository, findGitRoot } from './git-check.js';
import { checkDefinitionOfDone, checkSetup, checkToolchain } from './toolchain-check.js';
import { configuredWorkers, imageWorkers } from '../config/workers.js';

export interface DoctorInput {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Default: a client for the env's DOCKER_HOST. */
  docker?: Docker;
  /** Default: an HTTP GET with a 3 s timeout. */
  probe?: (url: string) => Promise<ProbeResult>;
}

/** Runs every check and returns them in display order. Never throws for a failed check. */
export async function runDoctorChecks(input: DoctorInput): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const docker = input.docker ?? createDockerClient(input.env);

  const engine = await checkDockerEngine(docker, input.env);
  checks.push(engine);

  const repository = await checkGitRepository(input.cwd);
  const repoRoot = (await findGitRoot(input.cwd)) ?? input.cwd;

  let config: Config | undefined;
  let configProblem: DoctorCheck | undefined;
  try {
    config = await loadConfig({ repoRoot, env: input.env });
  } catch (error) {
    configProblem = failed(
      'Configuration',
      (error as Error).message,
      'Fix the settings named in the detail.',
    );
  }

  const image = await checkImage(docker, engine, config);
  checks.push(image);
  if (config && image.ok) checks.push(...(await checkWorkerBinaries(docker, config)));
  if (config && engine.ok)
    checks.push(await checkSandboxRuntime(docker, config, image.ok ? await imageTag(config) : null));

  checks.push(repository);
  if (configProblem) checks.push(configProblem);

  if (config)
    checks.push(
      await checkToolchain(config, repoRoot),
      await checkSetup(config, repoRoot),
      await checkDefinitionOfDone(config, repoRoot),
    );
  checks.push(await checkDiskCaps(config));
  if (config) checks.push(...(await checkEndpoints(config, input)));
  return checks;
}

/** The worker image check, or why it cannot run (no Docker engine, or an invalid configuration). */
async function checkImage(
  docker: Docker,
  engine: DoctorCheck,
  config: Config | undefined,
): Promise<DoctorCheck> {
  if (!engine.ok) {
    return failed(
      'Worker image',
      'not checked: the Docker engine is not reachable',
      'Fix the Docker engine first.',
    );
  }
  if (!config) {
    return failed(
      'Worker image',
      'not checked: the configuration is invalid',
      'Fix the configuration first.',
    );
  }
  const target = config.sandbox.image
    ? ({ kind: 'configured', image: config.sandbox.image } as const)
    : ({
        kind: 'built',
        inputs: await readWorkerImageInputs({
          ...imageWorkers(config),
          baseImage: config.sandbox.baseImage,
        }),
      } as const);
  return checkWorkerImage(docker, target);
}

/** The Meta-agent's and the worker's endpoint checks. */
async function checkEndpoints(config: Config, input: DoctorInput): Promise<DoctorCheck[]> {
  // The meta and worker endpoints are often the same URL: probe each URL once.
  const probes = new Map<string, Promise<ProbeResult>>();
  const probe = (url: string) => {
    let result = probes.get(url);
    if (!result) {
      result = (input.probe ?? probeUrl)(url);
      probes.set(url, result);
    }
    return result;
  };
  return [
    await checkEndpoint({
      name: 'Meta endpoint',
      baseUrl: config.meta.baseUrl,
      apiKeyEnv: config.meta.apiKeyEnv,
      env: input.env,
      baseUrlSetting: 'meta.baseUrl / OPENAI_BASE_URL',
      apiKeySetting: 'meta.apiKeyEnv',
      probe,
    }),
    ...(await Promise.all(
      configuredWorkers(config).map((profile) => {
        const isDefault = profile.type === config.worker.type;
        const block = `workers.${profile.type}`;
        return checkEndpoint({
          name: `Worker endpoint (${profile.type})`,
          baseUrl: profile.baseUrl,
          apiKeyEnv: profile.apiKeyEnv,
          env: input.env,
          baseUrlSetting: isDefault
            ? `${block}.baseUrl or worker.baseUrl / AGENT_RUNNER_WORKER_BASE_URL`
            : `${block}.baseUrl`,
          apiKeySetting: isDefault ? `${block}.apiKeyEnv or worker.apiKeyEnv` : `${block}.apiKeyEnv`,
          probe,
        });
      }),
    )),
  ];
}

/** The worker image the configuration names or the package builds. */
async function imageTag(config: Config): Promise<string> {
  return (
    config.sandbox.image ??
    workerImageTag(
      await readWorkerImageInputs({ ...imageWorkers(config), baseImage: config.sandbox.baseImage }),
    )
  );
}

/** Each configured worker's binary answers `--version` in the worker image. */
async function checkWorkerBinaries(docker: Docker, config: Config): Promise<DoctorCheck[]> {
  const tag = await imageTag(config);
  return Promise.all(
    configuredWorkers(config).map(async (profile) => {
      const name = `Worker binary (${profile.type})`;
      try {
        const version = (await runInImage(docker, tag, [profile.kind.binary, '--version'])).trim();
        if (version === '') throw new Error('it printed no version (or failed)');
        return passed(name, `${profile.kind.binary} ${version.split('\n')[0]} in ${tag}`);
      } catch (error) {
        return failed(
          name,
          `${profile.kind.binary} does not run in ${tag}: ${(error as Error).message.split('\n')[0]}`,
          'Run `agent-runner image build` (the worker image holds every configured worker), or use an image with it.',
        );
      }
    }),
  );
}

/** True when every check passed. */
export function allPassed(checks: readonly DoctorCheck[]): boolean {
  return checks.every((check) => check.ok);
}
