/**
 * The raw side of the comparisons: the Docker CLI (`docker run -d`, `docker exec`...), spawned with execa and
 * timed by wall clock. `docker run` flags are derived from the very create options agent-runner sends
 * (`containerCreateOptions`), so both sides start the same container with the same hardening and limits;
 * an option this file does not translate throws instead of being silently left out.
 */
import type Docker from 'dockerode';
import { execa } from 'execa';

/** The CLI the comparisons run. */
export const DOCKER_CLI = process.env.AGENT_RUNNER_BENCH_DOCKER_CLI ?? '/usr/local/bin/docker';

/** Runs the Docker CLI; a non-zero exit throws with its stderr (a benchmark step must not fail quietly). */
export async function docker(args: readonly string[]): Promise<string> {
  const result = await execa(DOCKER_CLI, args, { reject: false, stdin: 'ignore' });
  if (result.exitCode !== 0) {
    throw new Error(`docker ${args.join(' ')} exited ${result.exitCode}: ${result.stderr.trim()}`);
  }
  return result.stdout.trim();
}

/** HostConfig keys that carry no flag because the value is the CLI's default too. */
const DEFAULT_VALUED: Record<string, unknown> = {
  Privileged: false,
  AutoRemove: false,
};

/** `docker run -d ...` arguments that create and start the container `options` describes. */
export function dockerRunArgs(options: Docker.ContainerCreateOptions): string[] {
  const args = ['run', '-d'];
  if (options.name) args.push('--name', options.name);
  const host = options.HostConfig ?? {};
  const handled = new Set<string>();
  const take = <K extends keyof typeof host>(key: K): (typeof host)[K] => {
    handled.add(key as string);
    return host[key];
  };
  if (take('Init')) args.push('--init');
  for (const capability of take('CapDrop') ?? []) args.push('--cap-drop', capability);
  for (const option of take('SecurityOpt') ?? []) args.push('--security-opt', option);
  if (take('ReadonlyRootfs')) args.push('--read-only');
  for (const [target, tmpfsOptions] of Object.entries(take('Tmpfs') ?? {})) {
    args.push('--tmpfs', tmpfsOptions ? `${target}:${tmpfsOptions}` : target);
  }
  const memory = take('Memory');
  if (memory) args.push('--memory', `${memory}b`);
  const swap = take('MemorySwap');
  if (swap) args.push('--memory-swap', `${swap}b`);
  const pids = take('PidsLimit');
  if (pids) args.push('--pids-limit', String(pids));
  const nanoCpus = take('NanoCpus');
  if (nanoCpus) args.push('--cpus', String(nanoCpus / 1e9));
  const network = take('NetworkMode');
  if (network) args.push('--network', network);
  for (const extra of take('ExtraHosts') ?? []) args.push('--add-host', extra);
  for (const mount of take('Mounts') ?? []) {
    if (mount.Type !== 'bind') throw new Error(`dockerRunArgs: mount type ${mount.Type} is not translated`);
    args.push(
      '--mount',
      `type=bind,source=${mount.Source},target=${mount.Target}${mount.ReadOnly ? ',readonly' : ''}`,
    );
  }
  const restart = take('RestartPolicy');
  if (restart?.Name && restart.Name !== 'no') args.push('--restart', restart.Name);
  for (const [key, value] of Object.entries(host)) {
    if (handled.has(key) || value === undefined) continue;
    if (key in DEFAULT_VALUED && DEFAULT_VALUED[key] === value) continue;
    throw new Error(`dockerRunArgs: HostConfig.${key} is not translated to a docker run flag`);
  }
  if (options.User) args.push('--user', options.User);
  if (options.WorkingDir) args.push('--workdir', options.WorkingDir);
  for (const variable of options.Env ?? []) args.push('--env', variable);
  for (const [key, value] of Object.entries(options.Labels ?? {})) args.push('--label', `${key}=${value}`);
  const entrypoint = Array.isArray(options.Entrypoint) ? options.Entrypoint : [];
  const [program, ...entrypointArgs] = entrypoint;
  if (program !== undefined) args.push('--entrypoint', program);
  if (!options.Image) throw new Error('dockerRunArgs: no image');
  args.push(options.Image, ...entrypointArgs, ...(Array.isArray(options.Cmd) ? options.Cmd : []));
  return args;
}
