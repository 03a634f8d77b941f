/**
 * A task repository on a scripted GitHub: the Node task repository (task-repo.ts), published as `acme/app` on a
 * `git http-backend` remote that takes `token` (origin), and the scripted GitHub server. Everything is stopped
 * and removed when the test finishes.
 */
import { onTestFinished } from 'vitest';
import { GitHttpRemote } from './git-http-remote.js';
import { ScriptedGitHubServer } from './scripted-github-server.js';
import { createNodeRepo, git } from './task-repo.js';

export interface GitHubRepo {
  repo: { root: string; remove: () => void };
  remote: GitHttpRemote;
  github: ScriptedGitHubServer;
}

/** `prepare` runs before the repository is published (a committed config that names the server, say). */
export async function nodeRepoOnGitHub(
  token: string,
  prepare: (root: string, github: ScriptedGitHubServer) => void = () => {},
): Promise<GitHubRepo> {
  const repo = createNodeRepo();
  onTestFinished(repo.remove);
  const remote = await new GitHttpRemote({ user: 'x-access-token', password: token }).start();
  onTestFinished(() => remote.stop());
  const github = await new ScriptedGitHubServer().start();
  onTestFinished(() => github.stop());
  prepare(repo.root, github);
  await remote.createFrom('acme/app', repo.root);
  git(repo.root, 'remote', 'add', 'origin', remote.url('acme/app'));
  return { repo, remote, github };
}
