/**
 * All doctor checks in order. Each check gets its inputs explicitly; this file only gathers them (config,
 * Docker client) and decides which checks cannot run because an earlier one failed.
 */
import type Docker from 'dockerode';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { createDockerClient } from '../sandbox/docker-client.js';
import { readWorkerImageInputs } from '../sandbox/worker-image.js';
import { checkDockerEngine, checkWorkerImage } from './docker-checks.js';
import { failed, type DoctorCheck } from './doctor-check.js';
import { checkEndpoint, probeUrl, type ProbeResult } from './endpoint-check.js';
import { checkGitRepository, findGitRoot } from './git-check.js';
import { checkDefinitionOfDone, checkToolchain } from './toolchain-check.js';
import { imageWorkers } from '../config/workers.js';

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

  checks.push(await checkImage(docker, engine, config));

  checks.push(repository);
  if (configProblem) checks.push(configProblem);

  if (config)
    checks.push(await checkToolchain(config, repoRoot), await checkDefinitionOfDone(config, repoRoot));
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
    await checkEndpoint({
      name: 'Worker endpoint',
      baseUrl: config.worker.baseUrl ?? config.meta.baseUrl,
      apiKeyEnv: config.worker.apiKeyEnv ?? config.meta.apiKeyEnv,
      env: input.env,
      baseUrlSetting: 'worker.baseUrl / AGENT_RUNNER_WORKER_BASE_URL (default: meta.baseUrl)',
      apiKeySetting: 'worker.apiKeyEnv, default meta.apiKeyEnv',
      probe,
    }),
  ];
}

/** True when every check passed. */
export function allPassed(checks: readonly DoctorCheck[]): boolean {
  return checks.every((check) => check.ok);
}
