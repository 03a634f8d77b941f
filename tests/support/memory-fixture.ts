/**
 * A project's own instructions file and two memory bank entries (one active, one archived), committed in a
 * worker test's workspace, so a worker e2e can check what its CLI sent: the project's text once, then the
 * active entry, and never the archived one.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { taskMemoryBank } from '../../src/memory/memory-store.js';
import type { MemoryBankView } from '../../src/memory/memory-view.js';

export interface MemoryFixture {
  project: string;
  active: string;
  archived: string;
}

/** The front matter and text of an entry file. */
export function memoryEntry(title: string, status: 'active' | 'archived', body: string): string {
  return `---\ntitle: ${title}\nstatus: ${status}\nsource: person\ncreated: 2026-11-01T00:00:00Z\n---\n\n${body}\n`;
}

/** How many times `part` occurs in `text`. */
export function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

/** Commits `projectFile` and the entries in `repo` (its owner kept, so the sandbox's uid can still write it). */
export function commitProjectFileAndMemory(repo: string, projectFile: string): MemoryFixture {
  const fixture: MemoryFixture = {
    project: `PROJECT-${projectFile}-TEXT: run the tests before committing.`,
    active: 'MEMORY-ACTIVE-DECISION: slugs use hyphens only.',
    archived: 'MEMORY-ARCHIVED-DECISION: slugs used underscores.',
  };
  const dir = path.join(repo, '.agent-runner', 'memory');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '0001-hyphens.md'), memoryEntry('Hyphens', 'active', fixture.active));
  writeFileSync(
    path.join(dir, '0002-underscores.md'),
    memoryEntry('Underscores', 'archived', fixture.archived),
  );
  writeFileSync(path.join(repo, projectFile), `${fixture.project}\n`);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'safe.directory=*', '-c', 'user.name=t', '-c', 'user.email=t@e', ...args], {
      cwd: repo,
    });
  git('add', '-A');
  git('commit', '-q', '-m', 'Project instructions and memory bank');
  const { uid, gid } = statOwner(repo);
  execFileSync('chown', ['-R', `${uid}:${gid}`, repo]);
  return fixture;
}

function statOwner(file: string): { uid: number; gid: number } {
  const [uid = '0', gid = '0'] = execFileSync('stat', ['-c', '%u %g', file], { encoding: 'utf8' })
    .trim()
    .split(' ');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * The memory bank as a task based on `repo`'s HEAD reads it: from a copy the host owns (the workspace belongs
 * to the sandbox's uid, which host git refuses to read), at the same commit.
 */
export async function memoryAsTaskReads(repo: string): Promise<MemoryBankView> {
  const clone = mkdtempSync(path.join(tmpdir(), 'memory-clone-'));
  onTestFinished(() => rmSync(clone, { recursive: true, force: true }));
  // A copy made by this process is owned by it (host git refuses a repository of another uid).
  cpSync(repo, clone, { recursive: true });
  return taskMemoryBank(clone, 'HEAD', '.agent-runner/memory');
}
