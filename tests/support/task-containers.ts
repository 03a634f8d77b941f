/**
 * The containers a test's own task left, running or not. One Docker engine outlives a test run: a run killed
 * mid-test (a machine stopped, a suite interrupted) leaves containers with the same task ids, and another
 * checkout's suite may run on the same engine. So a test counts only the containers created since its file
 * started, and of its own repository when it names one.
 */
import { realpathSync } from 'node:fs';
import type Docker from 'dockerode';
import { createDockerClient } from '../../src/sandbox/docker-client.js';

const docker = createDockerClient();
/** Docker's `Created` is in whole seconds; one second of slack for the clock's rounding. */
const FILE_STARTED = Math.floor(Date.now() / 1000) - 1;

export async function taskContainers(taskId: string, repoRoot: string): Promise<Docker.ContainerInfo[]> {
  // The repository too: test files run side by side, and two may use the same task id.
  const label = [`agent-runner.task=${taskId}`, `agent-runner.repo=${realpathSync(repoRoot)}`];
  const all = await docker.listContainers({ all: true, filters: { label } });
  return all.filter((container) => container.Created >= FILE_STARTED);
}
