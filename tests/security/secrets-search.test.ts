/**
 * A worker that looks for secrets everywhere it can: every file system the container was given (the workspace,
 * CODEX_HOME, /tmp, the home directory, the gateway's directory, Docker's /etc files), the workspace's git
 * objects, its environment and every process's environment and argv. Excluded files (.env, .npmrc, credentials, keys: committed or untracked in the user's tree) and the
 * real API key must be nowhere. Canaries: a committed file that is not excluded is found in the files and in
 * the git objects, a file the probe writes into the home directory is found, the search covered the
 * directories that matter, and the sandbox's own CODEX_HOME variable is found in the environment and in /proc.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalEvents } from '../support/faults-harness.js';
import { runHostileTask } from '../support/hostile-worker.js';
import { git } from '../support/task-repo.js';

/** `value` as bash text that does not contain the value itself (adjacent quoted halves). */
function split(value: string): string {
  const middle = Math.floor(value.length / 2);
  return `"${value.slice(0, middle)}""${value.slice(middle)}"`;
}

/** One bash probe: prints `HIT <where> <label>` for every place a value is found. */
function probe(targets: Record<string, string>): string {
  const lines = [': > /tmp/p.txt'];
  for (const [label, value] of Object.entries(targets))
    lines.push(`printf '%s\\t%s\\n' ${split(value)} ${label} >> /tmp/p.txt`);
  lines.push(
    'cut -f1 /tmp/p.txt > /tmp/values.txt',
    'label() { while IFS=$(printf "\\t") read -r v l; do [ "$v" = "$1" ] && echo "$l"; done < /tmp/p.txt; }',
    'report() { sort -u | while IFS= read -r v; do echo "HIT $1 $(label "$v")"; done; }',
    // Every file system the container was given, and nothing of the image's read-only root (built before any
    // task, it holds nothing of one) or of the kernel's (/proc, /sys, /dev but its shm): bounded, so the search
    // ends within codex's command yield under gVisor too, whose file reads go through its gofer.
    `dirs=$(awk '$2 != "/" && ($2 == "/dev/shm" || $2 !~ "^/(proc|sys|dev)(/|$)") { print $2 }' /proc/self/mounts | sort -u)`,
    'echo "SEARCHED" $dirs',
    `mkdir -p "$HOME/.cache" && printf '%s\\n' ${split(targets.homecanary ?? '')} > "$HOME/.cache/canary"`,
    'grep -rhoaF -D skip -f /tmp/values.txt --exclude=p.txt --exclude=values.txt $dirs 2>/dev/null | report files',
    'git -C /workspace cat-file --batch-all-objects --batch 2>/dev/null | grep -oaF -f /tmp/values.txt | report git',
    'env | grep -oaF -f /tmp/values.txt | report env',
    'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" | grep -oaF -f /tmp/values.txt | report proc',
    'echo PROBE-DONE',
  );
  return lines.join('\n');
}

describe('secrets a worker looks for', () => {
  it('excluded files, untracked files and the API key are in no file, git object, environment or process', async () => {
    const id = randomUUID().slice(0, 8);
    const secrets: Record<string, string> = {
      dotenv: `DOTENV-SECRET-${id}`,
      untracked: `UNTRACKED-SECRET-${id}`,
      npmrc: `NPMRC-TOKEN-${id}`,
      credentials: `CREDENTIALS-JSON-${id}`,
      sshkey: `SSH-KEY-${id}`,
      aws: `AWS-SECRET-${id}`,
      tfvars: `TFVARS-SECRET-${id}`,
    };
    const canaries = {
      allowedfile: `ALLOWED-FILE-${id}`,
      homecanary: `HOME-CANARY-${id}`,
      allowedenv: 'CODEX_HOME=/codex-home',
    };
    const taskId = `sec-secrets-${id.slice(0, 6)}`;
    const run = await runHostileTask(taskId, {
      prepare: ({ root }) => {
        const write = (file: string, content: string) => {
          mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
          writeFileSync(path.join(root, file), content);
        };
        write('.env', `TOKEN=${secrets.dotenv}\n`);
        write('.npmrc', `//registry.npmjs.org/:_authToken=${secrets.npmrc}\n`);
        write('config/credentials-prod.json', `{"key":"${secrets.credentials}"}\n`);
        write('deploy/.ssh/id_ed25519', `${secrets.sshkey}\n`);
        write('.aws/credentials', `aws_secret_access_key=${secrets.aws}\n`);
        write('infra/prod.tfvars', `password = "${secrets.tfvars}"\n`);
        write('notes/public.txt', `${canaries.allowedfile}\n`);
        git(root, 'add', '-A', '-f');
        git(root, 'commit', '-q', '-m', 'secrets committed by mistake, and a public note');
        // Never committed: only in the user's working tree.
        write('.env.local', `TOKEN=${secrets.untracked}\n`);
      },
      commands: ({ env }) => [probe({ ...secrets, apikey: env.OPENAI_API_KEY as string, ...canaries })],
    });
    const recorded = JSON.stringify(
      journalEvents(run.task.root, taskId).filter((e) => e.type === 'run_recorded'),
    );
    const outputs = JSON.stringify(run.task.responses.responseRequests().map((r) => r.body)).match(
      /function_call_output.{0,1500}/g,
    );
    expect(recorded, JSON.stringify(outputs)).toContain('PROBE-DONE');
    // Canaries: the probe finds what is allowed in each place it looks.
    expect(recorded).toMatch(/SEARCHED [^"]*\/codex-home [^"]*\/home\/agent [^"]*\/tmp [^"]*\/workspace/);
    expect(recorded).toContain('HIT files allowedfile');
    expect(recorded).toContain('HIT files homecanary');
    expect(recorded).toContain('HIT git allowedfile');
    expect(recorded).toContain('HIT env allowedenv');
    expect(recorded).toContain('HIT proc allowedenv');
    for (const label of Object.keys(secrets))
      expect(recorded).not.toMatch(new RegExp(`HIT \\w+ ${label}\\b`));
  });
});
