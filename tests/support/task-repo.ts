/** A small Node project in a temp git repository, for end-to-end runs. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  }).trim();
}

/** Creates the repository; the caller removes it with the returned function. */
export function createNodeRepo(): { root: string; remove: () => void } {
  const root = mkdtempSync(path.join(tmpdir(), 'ar-e2e-repo-'));
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'config', 'user.name', 'Test User');
  git(root, 'config', 'user.email', 'test@example.com');
  writeFileSync(
    path.join(root, 'package.json'),
    `${JSON.stringify({ name: 'demo', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2)}\n`,
  );
  writeFileSync(path.join(root, 'README.md'), '# demo\n');
  writeFileSync(
    path.join(root, 'PRD.md'),
    '# Add slugify\n\nAdd `slugify(text)` in slug.js: lower-case, words joined by "-". With a test.\n',
  );
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

export const SLUG_JS = `exports.slugify = (text) => text.trim().toLowerCase().split(/\\s+/).join('-');\n`;
export const SLUG_BROKEN_JS = `exports.slugify = (text) => text;\n`;
export const SLUG_TEST_JS = `const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./slug.js');
test('slugify joins lower-case words with -', () => {
  assert.strictEqual(slugify('Hello Big World'), 'hello-big-world');
});
`;

/** A shell command that writes `content` to `file` (quoted for bash, no model text involved). */
export function writeFileCommand(file: string, content: string): string {
  const marker = 'AGENT_RUNNER_EOF';
  const directory = file.includes('/') ? `mkdir -p ${file.slice(0, file.lastIndexOf('/'))} && ` : '';
  return `${directory}cat > ${file} <<'${marker}'\n${content}${content.endsWith('\n') ? '' : '\n'}${marker}`;
}
