/**
 * Creating the dockerode client and checking the engine answers, with a message that says how to fix it.
 */
import Docker from 'dockerode';
import { EnvironmentError } from '../errors.js';

/** A client for DOCKER_HOST when set (unix://, tcp://), else the default socket. */
export function createDockerClient(env: NodeJS.ProcessEnv = process.env): Docker {
  const host = env.DOCKER_HOST;
  if (!host) return new Docker({ socketPath: '/var/run/docker.sock' });
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
}

/** Where the client points, for messages. */
export function describeDockerHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

/** Pings the engine; throws EnvironmentError('docker_unavailable') naming the address and the fix. */
export async function pingDocker(
  docker: Docker,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ version: string }> {
  try {
    const version = await docker.version();
    return { version: version.Version };
  } catch (error) {
    throw new EnvironmentError(
      'docker_unavailable',
      `Docker is not reachable at ${describeDockerHost(env)} (${(error as Error).message}). ` +
        'Start it (`sudo systemctl start docker`, or run `bash scripts/ensure-docker.sh` from the agent-runner ' +
        'checkout) or set DOCKER_HOST to a running engine.',
      { cause: error, retryable: true },
    );
  }
}
