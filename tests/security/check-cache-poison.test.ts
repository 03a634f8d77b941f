/**
 * The checks' caches cannot be poisoned by the worker (real Docker, the real clean shell of the checks): the
 * project's check is a tool that trusts its cache the way Go's test cache does (a verdict stored under the hash
 * of its inputs and reused when the inputs match). A check at one commit plants a "pass" verdict for the inputs
 * of the next commit. First the probe shows the attack working on a cache the checks share and can write (the
 * warm one); then, with the caches sealed, the planted verdict dies with its check and the next commit's check
 * runs for real and fails. The sealed caches are neither writable nor replaceable by the worker's uid, and a
 * directory the worker made in their place is not used.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ExecResult } from '../../src/core/ports.js';
import { userField } from '../../src/sandbox/container-options.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { DockerSandboxRuntime } from '../../src/sandbox/docker-runtime.js';
import { SEALED_CACHE_DIR, sealCheckCaches } from '../../src/workspace/checks/check-caches.js';
import { runDodChecks, type CheckCacheMode } from '../../src/workspace/checks/dod-checks.js';
import { keeperIdsFor } from '../../src/workspace/scope/permissions.js';
import { prepareTaskWorkspace } from '../../src/workspace/prepare-task-workspace.js';
import { createTempRepo } from '../support/git-repo.js';
import { bashAsWorker, sandboxOverWorkspace } from '../support/sandbox-exec.js';

const IMAGE = process.env.AGENT_RUNNER_TEST_BASE_IMAGE ?? 'agent-runner-base:bookworm';
const docker = createDockerClient();
const runtime = new DockerSandboxRuntime(docker, { version: '0.0.0-test' });
const taskIds: string[] = [];

afterAll(async () => {
  for (const taskId of taskIds) expect(await runtime.list({ 'agent-runner.task': taskId })).toEqual([]);
});

// The project's check: a verdict cached by the hash of the inputs (src/), as Go caches test results.
const CHECK_TOOL = `#!/bin/bash
key=$(cat src/* | sha256sum | cut -c1-16)
cache="\${XDG_CACHE_HOME:-$HOME/.cache}/verdicts"
if [ -f "$cache/$key" ]; then echo "ok (cached)"; exit "$(cat "$cache/$key")"; fi
if grep -q broken src/*; then verdict=1; else verdict=0; fi
mkdir -p "$cache" && echo "$verdict" > "$cache/$key"
echo "ran: $verdict"; exit "$verdict"
`;

async function sandbox() {
  const repo = await createTempRepo({ 'check.sh': CHECK_TOOL, 'src/app.txt': 'good\n' });
  const taskId = `cache-${randomUUID().slice(0, 8)}`;
  taskIds.push(taskId);
  const prepared = await prepareTaskWorkspace({
    repoRoot: repo.root,
    taskId,
    scope: { exclude: [], read: [], write: [] },
  });
  const created = await sandboxOverWorkspace(runtime, {
    taskId,
    repoRoot: repo.root,
    image: IMAGE,
    prepared,
    memoryBytes: 512 * 1024 * 1024,
    labels: { 'agent-runner.test': 'check-cache-poison' },
  });
  onTestFinished(() => runtime.remove(created.id));
  const id = created.id;
  const keeper = userField(keeperIdsFor(prepared.workerUser));
  const worker = (script: string): Promise<ExecResult> =>
    bashAsWorker(id, script, { runtime, workdir: '/workspace' });
  const check = async (mode: CheckCacheMode) => {
    const [result] = await runDodChecks(
      runtime,
      id,
      [{ name: 'test', command: 'bash check.sh', timeout: 30_000 }],
      { cache: mode, graceMs: 500 },
    );
    return result;
  };
  // The planted verdict: a "pass" for the inputs of the commit that breaks the project (src/app.txt: broken).
  const plant =
    'key=$(printf "broken\\n" | sha256sum | cut -c1-16); mkdir -p "$XDG_CACHE_HOME/verdicts"; echo 0 > "$XDG_CACHE_HOME/verdicts/$key"';
  const commitBroken = () =>
    worker('echo broken > src/app.txt && git -c user.name=w -c user.email=w@x commit -qam broken');
  return { id, keeper, worker, check, plant, commitBroken };
}

describe("the checks' caches against a poisoning worker", () => {
  it('the probe: on a cache the checks share and can write, a planted verdict makes a broken commit pass', async () => {
    const box = await sandbox();
    expect((await box.check('warm'))?.outputTail).toContain('ran: 0');
    // A check of the worker's code (here: the command itself) plants the verdict in the cache it writes to.
    await runDodChecks(runtime, box.id, [{ name: 'plant', command: box.plant, timeout: 30_000 }], {
      cache: 'warm',
      graceMs: 500,
    });
    expect((await box.commitBroken()).exitCode).toBe(0);
    const poisoned = await box.check('warm');
    expect(poisoned).toMatchObject({ status: 'passed', outputTail: 'ok (cached)' });
  });

  it('sealed: the planted verdict dies with its check; the broken commit is checked for real and fails', async () => {
    const box = await sandbox();
    // The trusted warm-up (the baseline on the base), then the seal, both before any worker run.
    expect((await box.check('warm'))?.outputTail).toContain('ran: 0');
    expect(await sealCheckCaches(runtime, box.id, box.keeper)).not.toBeNull();
    // The warm-up's verdict is used: the base's inputs, unchanged, are a cache hit.
    expect(await box.check('use')).toMatchObject({ status: 'passed', outputTail: 'ok (cached)' });
    const planted = await runDodChecks(
      runtime,
      box.id,
      [{ name: 'plant', command: box.plant, timeout: 30_000 }],
      {
        cache: 'use',
        graceMs: 500,
      },
    );
    expect(planted[0]?.status).toBe('passed');
    expect((await box.commitBroken()).exitCode).toBe(0);
    const honest = await box.check('use');
    expect(honest).toMatchObject({ status: 'failed', exitCode: 1, outputTail: 'ran: 1' });
    // And the worker's own processes cannot reach the sealed caches: not writable, not replaceable.
    const attempts = await box.worker(
      [
        `touch ${SEALED_CACHE_DIR}/xdg/verdicts/x 2>/dev/null && echo wrote`,
        `mkdir ${SEALED_CACHE_DIR}/gomod 2>/dev/null && echo made`,
        `mv ${SEALED_CACHE_DIR} /tmp/moved 2>/dev/null && echo moved`,
        `rm -rf ${SEALED_CACHE_DIR} 2>/dev/null; [ -d ${SEALED_CACHE_DIR}/xdg ] && echo still-there`,
      ].join('; '),
    );
    expect(attempts.stdoutTail.trim()).toBe('still-there');
  });

  it('a directory the worker made where the sealed caches go is not used', async () => {
    const box = await sandbox();
    // The worker is first (no seal yet, as if a seal had never run): it squats the path with a poisoned verdict.
    const squat = await box.worker(
      `mkdir -p ${SEALED_CACHE_DIR}/xdg/verdicts && key=$(printf "broken\\n" | sha256sum | cut -c1-16) && echo 0 > ${SEALED_CACHE_DIR}/xdg/verdicts/$key && chmod -R a-w ${SEALED_CACHE_DIR}`,
    );
    expect(squat.exitCode).toBe(0);
    await sealCheckCaches(runtime, box.id, box.keeper);
    expect((await box.commitBroken()).exitCode).toBe(0);
    expect(await box.check('use')).toMatchObject({ status: 'failed', outputTail: 'ran: 1' });
  });
});
