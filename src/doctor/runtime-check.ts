/**
 * Which runtime tasks get (`sandbox.runtime`) and why: the same choice a task makes
 * (src/sandbox/container-runtime.ts), and for runsc one real container started under it, so a registration
 * that is there but does not work shows here rather than at a task's start.
 */
import type Docker from 'dockerode';
import type { Config } from '../config/schema.js';
import { resolveContainerRuntime, RUNSC_FIX } from '../sandbox/container-runtime.js';
import { runInImage } from '../toolchain/run-in-image.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';

const NAME = 'Sandbox runtime';

/** Call only when the engine answers and the configuration is valid; `image`: one to start under runsc. */
export async function checkSandboxRuntime(
  docker: Docker,
  config: Config,
  image: string | null,
): Promise<DoctorCheck> {
  let choice;
  try {
    choice = await resolveContainerRuntime(docker, config.sandbox);
  } catch (error) {
    const message = (error as Error).message;
    return failed(
      NAME,
      message.slice(0, message.indexOf(':')),
      `Either ${RUNSC_FIX}, or set sandbox.runtime: runc.`,
    );
  }
  const detail = `${choice.runtime}: ${choice.reason}`;
  if (choice.runtime === 'runc' || image === null)
    return passed(
      NAME,
      choice.runtime === 'runc' && config.sandbox.runtime === 'auto' ? `${detail} (${RUNSC_FIX})` : detail,
    );
  const answer = await runInImage(docker, image, ['echo', 'runsc-ok'], 'runsc').catch(
    (error: Error) => error.message,
  );
  if (answer.trim() === 'runsc-ok') return passed(NAME, `${detail}; a container of ${image} starts under it`);
  return failed(
    NAME,
    `${detail}, but a container of ${image} does not start under it: ${answer.trim().split('\n')[0] || 'no output'}`,
    `Check runsc (\`runsc --version\`, dockerd's log), ${RUNSC_FIX}, or set sandbox.runtime: runc.`,
  );
}
