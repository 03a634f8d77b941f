/**
 * Reading one commit object of the worker's (fetched into the person's repository) into its parts, for the
 * replay: a malformed identity falls back to the worker's, never to the person's.
 */
import { git } from './git-command.js';
import { WORKER_IDENTITY } from '../sandbox-repo/sandbox-repository.js';

export interface ParsedCommit {
  tree: string;
  parents: string[];
  author: { name: string; email: string; date: string };
  committer: { name: string; email: string; date: string };
  message: string;
}

function parseIdentity(line: string): { name: string; email: string; date: string } {
  const match = /^(.*?) ?<([^>]*)> (\d+ [+-]\d{4})$/.exec(line);
  if (!match)
    return {
      name: WORKER_IDENTITY.name,
      email: WORKER_IDENTITY.email,
      date: `${Math.floor(Date.now() / 1000)} +0000`,
    };
  return {
    name: match[1]?.trim() || WORKER_IDENTITY.name,
    email: match[2]?.trim() || WORKER_IDENTITY.email,
    date: match[3] ?? '',
  };
}

export async function readCommit(repoRoot: string, sha: string, signal?: AbortSignal): Promise<ParsedCommit> {
  const raw = await git(['cat-file', 'commit', sha], { cwd: repoRoot, ...(signal ? { signal } : {}) });
  const split = raw.indexOf('\n\n');
  const headers = (split === -1 ? raw : raw.slice(0, split)).split('\n');
  const message = split === -1 ? '' : raw.slice(split + 2);
  const parsed: ParsedCommit = {
    tree: '',
    parents: [],
    author: parseIdentity(''),
    committer: parseIdentity(''),
    message,
  };
  for (const header of headers) {
    const space = header.indexOf(' ');
    const key = header.slice(0, space);
    const value = header.slice(space + 1);
    if (key === 'tree') parsed.tree = value;
    else if (key === 'parent') parsed.parents.push(value);
    else if (key === 'author') parsed.author = parseIdentity(value);
    else if (key === 'committer') parsed.committer = parseIdentity(value);
  }
  return parsed;
}
