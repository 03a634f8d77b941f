/**
 * `agent-runner serve` started in the test's process on the demo repository, for tests that drive its API
 * over real HTTP. The API reads only files of the repository it serves, so the PRD and every scripted model a
 * test names are committed in the repository before the server starts (a task starts from a clean tree) and
 * named by their repository-relative paths.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { processRedaction, safeOutput } from '../../src/cli/output.js';
import { startServer } from '../../src/cli/serve-command.js';
import { capVolumesUnder, removeCapVolume } from '../../src/sandbox/cap-volume.js';
import { ServeClient } from '../../src/serve/api-client.js';
import { ROOT, createDemoRepo } from './demo-task.js';
import { git } from './task-repo.js';

/**
 * Capped file systems still mounted under the repository once its servers have stopped: this server runs in the
 * test's own process, whose exit hook (src/sandbox/cap-volume.ts) would unmount what it mounted only when the
 * worker process exits, after the repository's removal (EBUSY). Said on stderr, so a run shows it.
 */
async function releaseCapVolumes(repo: string): Promise<void> {
  const mounted = await capVolumesUnder(repo).catch(() => []);
  if (mounted.length > 0) console.warn(`serve-repo: still mounted at close: ${mounted.join(', ')}`);
  for (const mountPath of mounted) await removeCapVolume(mountPath).catch(() => undefined);
}

/** The demo's scripted model (examples/slugify), as tests read it to build variants. */
export const DEMO_SCRIPT = path.join(ROOT, 'examples', 'slugify', 'model-script.yaml');
/** The demo's PRD in the served repository, as a client names it. */
export const SERVED_PRD = 'specs/PRD.md';
/** The demo's scripted model in the served repository, as a client names it. */
export const SERVED_SCRIPT = 'specs/model-script.yaml';

export interface ServedRepo {
  /** The repository's root (a temporary directory). */
  repo: string;
  server: Awaited<ReturnType<typeof startServer>>;
  client: ServeClient;
  /** Closes the server (its tasks stopped first), then removes the repository. */
  close: () => Promise<void>;
}

/**
 * The demo repository with the demo's PRD ({@link SERVED_PRD}), its scripted model ({@link SERVED_SCRIPT}) and
 * `files` (repository-relative path → content) committed, served by a server in this process on a free port.
 */
export async function serveDemoRepo(files: Record<string, string> = {}): Promise<ServedRepo> {
  const { dir: repo, remove } = createDemoRepo('');
  const committed: Record<string, string> = {
    [SERVED_PRD]: readFileSync(path.join(ROOT, 'examples', 'slugify', 'PRD.md'), 'utf8'),
    [SERVED_SCRIPT]: readFileSync(DEMO_SCRIPT, 'utf8'),
    ...files,
  };
  for (const [relative, text] of Object.entries(committed)) {
    mkdirSync(path.dirname(path.join(repo, relative)), { recursive: true });
    writeFileSync(path.join(repo, relative), text);
  }
  git(repo, 'add', '--', ...Object.keys(committed));
  git(repo, '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '-m', 'the task inputs');
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.OPENAI_API_KEY;
  const redaction = processRedaction(env);
  let server: ServedRepo['server'];
  try {
    server = await startServer(
      { port: '0' },
      {
        output: safeOutput({ out: () => undefined, err: () => undefined, isTTY: false }, redaction),
        redaction,
        env,
        cwd: repo,
        setExitCode: () => undefined,
      },
    );
  } catch (error) {
    remove();
    throw error;
  }
  return {
    repo,
    server,
    client: new ServeClient(server.info.url, server.info.token),
    close: async () => {
      try {
        await server.close();
      } finally {
        await releaseCapVolumes(repo);
        remove();
      }
    },
  };
}
