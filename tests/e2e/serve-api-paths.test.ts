/**
 * The API reads only the repository it serves: every path a client names (`prdPath`, `modelScript`, a
 * configuration override naming a file) that leads outside it (an absolute path, `..`, a link in the
 * repository pointing out, a file below a linked directory) or at something that is not a regular file (a
 * FIFO) is refused with 400 naming the field, before anything starts: no task, no run folder. A PRD and a
 * scripted model of the repository still start a task that runs to COMPLETE (real server over real HTTP, real
 * git, a real Docker sandbox, the real codex binary, the scripted model).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, type ServeClient } from '../../src/serve/api-client.js';
import { serveDemoRepo, type ServedRepo } from '../support/serve-repo.js';
import { taskContainers } from '../support/task-containers.js';

let repo = '';
let outside = '';
let served: ServedRepo;
let client: ServeClient;

beforeAll(async () => {
  outside = mkdtempSync(path.join(tmpdir(), 'ar-outside-'));
  writeFileSync(path.join(outside, 'secret.md'), '# Outside\n\nOUTSIDE-THE-REPOSITORY\n');
  // The PRD and the scripted model, committed in the repository (specs/); links and a FIFO beside them.
  served = await serveDemoRepo();
  ({ repo, client } = served);
  symlinkSync('/etc/hostname', path.join(repo, 'specs', 'hostname.md'));
  symlinkSync(outside, path.join(repo, 'specs', 'elsewhere'));
  execFileSync('mkfifo', [path.join(repo, 'specs', 'pipe.md')]);
}, 60_000);

afterAll(async () => {
  await served?.close();
  rmSync(outside, { recursive: true, force: true });
});

/** Paths that lead outside the repository or at a FIFO, as a client may write them. */
const HOSTILE: [string, string, number][] = [
  ['an absolute path', '/etc/passwd', 1],
  ['.. out of the repository', '../../../../etc/hostname', 2],
  ['a link in the repository pointing out', 'specs/hostname.md', 3],
  ['a file below a linked directory', 'specs/elsewhere/secret.md', 4],
  ['a FIFO in the repository', 'specs/pipe.md', 5],
];

/** The API's refusal of `body` (it must refuse). */
async function refusal(route: string, body: unknown): Promise<ApiError> {
  const error = await client.request('POST', route, body).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const runFolders = () =>
  existsSync(path.join(repo, '.agent-runner', 'runs'))
    ? readdirSync(path.join(repo, '.agent-runner', 'runs'))
    : [];

describe('the API refuses every path outside the repository', () => {
  it.each(HOSTILE)('prdPath: %s (%s, %i) is 400 naming prdPath', async (_what, given, index) => {
    const error = await refusal('/api/tasks', { prdPath: given, taskId: `PATH-PRD-${index}` });
    expect(error).toMatchObject({ status: 400, field: 'prdPath' });
    expect(error.message).not.toContain('OUTSIDE-THE-REPOSITORY');
  });

  it.each(HOSTILE)('modelScript: %s (%s, %i) is 400 naming modelScript', async (_what, given, index) => {
    const error = await refusal('/api/tasks', {
      prdPath: 'specs/PRD.md',
      modelScript: given,
      taskId: `PATH-SCRIPT-${index}`,
    });
    expect(error).toMatchObject({ status: 400, field: 'modelScript' });
  });

  it.each(HOSTILE)(
    'a configuration override naming a file: %s (%s, %i) is 400 naming the key',
    async (_what, given, index) => {
      expect(
        await refusal('/api/tasks', {
          prdPath: 'specs/PRD.md',
          taskId: `PATH-CA-${index}`,
          config: { sandbox: { extraCaCert: given } },
        }),
      ).toMatchObject({ status: 400, field: 'config.sandbox.extraCaCert' });
      expect(
        await refusal('/api/tasks', {
          prdPath: 'specs/PRD.md',
          taskId: `PATH-TEMPLATE-${index}`,
          config: { notes: { template: given } },
        }),
      ).toMatchObject({ status: 400, field: 'config.notes.template' });
    },
  );

  it('refuses keys only the owner sets, and task ids that break the task-id rule', async () => {
    expect(
      await refusal('/api/tasks', {
        prdPath: 'specs/PRD.md',
        config: { meta: { baseUrl: 'https://attacker.example/v1', apiKeyEnv: 'HOME' } },
      }),
    ).toMatchObject({ status: 400, field: 'config.meta.baseUrl' });
    expect(await refusal('/api/tasks', { prdPath: 'specs/PRD.md', taskId: 'a..b' })).toMatchObject({
      status: 400,
      field: 'taskId',
    });
    await expect(client.request('GET', '/api/tasks/a..b')).rejects.toMatchObject({
      status: 400,
      field: 'id',
    });
    await expect(client.request('GET', '/api/tasks/..%2F..%2Fetc')).rejects.toMatchObject({ status: 400 });
    // Nothing started: no run folder for any refused request.
    expect(runFolders().filter((name) => name.startsWith('PATH-'))).toEqual([]);
  });
});

describe('a PRD and a scripted model of the repository', () => {
  it('start a task that runs to COMPLETE; its resume is refused a script outside the repository', async () => {
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: 'specs/PRD.md',
      modelScript: 'specs/model-script.yaml',
      taskId: 'PATH-OK',
    });
    expect(taskId).toBe('PATH-OK');
    let end: { state?: string; exitCode?: number } = {};
    for await (const message of client.events(taskId, {}))
      if (message.event === 'end') end = JSON.parse(message.data) as typeof end;
    expect(end).toMatchObject({ state: 'COMPLETE', exitCode: 0 });
    expect(
      await refusal(`/api/tasks/${taskId}/resume`, { modelScript: '../../../../etc/hostname' }),
    ).toMatchObject({ status: 400, field: 'modelScript' });
    expect(await taskContainers(taskId, repo)).toEqual([]);
  }, 300_000);
});
