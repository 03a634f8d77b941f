/**
 * A project's integration sandbox for tests, wired as a project wires it: the repository's gateway (its set-up
 * network), a unique project id, started on the repository's HEAD; disposed and its gateway closed when the test
 * ends.
 */
import { testRuntimeChoice } from './test-runtime.js';
import { randomUUID } from 'node:crypto';
import { onTestFinished } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { startTaskGateway } from '../../src/gateway/task-gateway.js';
import { IntegrationSandbox } from '../../src/parallel/integration-sandbox.js';
import type { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { runGit } from './git-repo.js';

export async function startIntegrationSandbox(input: {
  runtime: DockerSandboxRuntime;
  repoRoot: string;
  config: Config;
  image: string;
  setup: readonly string[];
  /** The project id's prefix. */
  prefix: string;
}): Promise<{ sandbox: IntegrationSandbox; id: string }> {
  const { repoRoot, config } = input;
  const gateway = await startTaskGateway({ config, env: {}, repoRoot, onLog: () => undefined });
  onTestFinished(() => gateway.close());
  const id = `${input.prefix}-${randomUUID().slice(0, 8)}`;
  const sandbox = new IntegrationSandbox({
    config,
    repoRoot,
    projectId: id,
    runtime: input.runtime,
    gateway,
    image: input.image,
    setup: input.setup,
    dodSkipped: false,
    ...testRuntimeChoice,
  });
  onTestFinished(() => sandbox.dispose());
  sandbox.start(runGit(repoRoot, ['rev-parse', 'HEAD']).trim());
  return { sandbox, id };
}
