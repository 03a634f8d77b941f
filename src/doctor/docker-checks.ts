/**
 * The Docker checks: the engine answers, and the worker image the runner will use exists.
 */
import type Docker from 'dockerode';
import { pingDocker } from '../sandbox/docker-client.js';
import { inspectWorkerImage } from '../sandbox/image-builder.js';
import type { WorkerImageInputs } from '../sandbox/worker-image.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';

const ENGINE = 'Docker engine';
const IMAGE = 'Worker image';

/** Pings the engine; the fix is the one pingDocker's error gives. */
export async function checkDockerEngine(docker: Docker, env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  try {
    const { version } = await pingDocker(docker, env);
    return passed(ENGINE, `Docker ${version} at ${env.DOCKER_HOST || 'unix:///var/run/docker.sock'}`);
  } catch (error) {
    const message = (error as Error).message;
    // pingDocker's message is "<what happened>. <how to fix it>"; split it for the table.
    const split = message.indexOf('. Start it');
    return split > 0
      ? failed(ENGINE, message.slice(0, split), message.slice(split + 2))
      : failed(ENGINE, message, 'Start Docker or set DOCKER_HOST to a running engine.');
  }
}

export type WorkerImageTarget =
  /** The image the package builds: its tag comes from the Dockerfile and codex version. */
  | { kind: 'built'; inputs: WorkerImageInputs }
  /** An image the user named (sandbox.image / AGENT_RUNNER_IMAGE). */
  | { kind: 'configured'; image: string };

/** Checks that the worker image exists in the engine (call only when the engine answers). */
export async function checkWorkerImage(docker: Docker, target: WorkerImageTarget): Promise<DoctorCheck> {
  if (target.kind === 'configured') {
    try {
      const info = await docker.getImage(target.image).inspect();
      return passed(IMAGE, `${target.image} (configured, ${shortId(info.Id)})`);
    } catch (error) {
      return failed(
        IMAGE,
        `${target.image} (configured in sandbox.image / AGENT_RUNNER_IMAGE) is not in the engine: ${(error as Error).message}`,
        `Build or load ${target.image}, or unset sandbox.image to use the image agent-runner builds.`,
      );
    }
  }
  const state = await inspectWorkerImage(docker, target.inputs);
  if (!state.imageId) {
    return failed(
      IMAGE,
      `${state.tag} is missing (its tag follows Dockerfile.worker and codex ${target.inputs.codexVersion})`,
      'Run `bash scripts/setup.sh` from the agent-runner checkout, or `agent-runner image build`.',
    );
  }
  const base = state.labels['agent-runner.base-image'];
  return passed(IMAGE, `${state.tag} (${shortId(state.imageId)}${base ? `, from ${base}` : ''})`);
}

function shortId(id: string): string {
  return id.replace(/^sha256:/, '').slice(0, 12);
}
