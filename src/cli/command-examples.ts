/**
 * The examples of every command: shown at the end of its `--help` (commander's `addHelpText('after')`) and in
 * the command reference (docs/commands.md, generated from the same table by src/docs/command-reference.ts).
 * A command with no entry here fails the reference's test: every command gets two or three.
 */
import type { Command } from 'commander';

/** One example: a command line and what it does, in a few words. */
export interface CommandExample {
  command: string;
  does: string;
}

/** By command path (`run`, `image build`). */
export const COMMAND_EXAMPLES: Readonly<Record<string, readonly CommandExample[]>> = {
  run: [
    { command: 'agent-runner run --prd spec.md', does: 'run a task to completion; progress on stderr' },
    {
      command: 'agent-runner run --prd spec.md --pr',
      does: 'then push agent-runner/<ID> from this machine and open its pull request',
    },
    {
      command: 'agent-runner run --repo https://github.com/acme/app.git --base main --prd spec.md',
      does: 'a remote repository, no local checkout',
    },
  ],
  resume: [
    { command: 'agent-runner resume T1', does: 'continue an interrupted task from its journal' },
    {
      command: 'agent-runner resume T1 --timeout 30m --pr',
      does: 'this attempt gets 30 minutes of its own, then delivers',
    },
  ],
  followup: [
    {
      command: 'agent-runner followup T1 --message "also handle empty input"',
      does: 'continue an ended task on its branch; every criterion is checked again',
    },
    {
      command: 'agent-runner followup https://github.com/acme/app/pull/7 --message-file review.md --pr',
      does: 'from the remote alone (a CI runner): the instruction from a file, the same pull request updated',
    },
    {
      command: 'agent-runner followup --from-review https://github.com/acme/app/pull/12',
      does: "the request's new review comments by writers are the instruction; one reply answers them",
    },
  ],
  status: [
    { command: 'agent-runner status', does: 'running, stale and finished tasks, and their containers' },
    { command: 'agent-runner status --json', does: 'the same as JSON' },
  ],
  gc: [
    { command: 'agent-runner gc --dry-run', does: 'say what would be removed' },
    { command: 'agent-runner gc', does: 'remove orphaned containers and finished worktrees' },
    { command: 'agent-runner gc --all --force', does: 'every repository on the engine, unsaved work too' },
  ],
  image: [
    { command: 'agent-runner image build', does: "the worker image with this repository's toolchain" },
    { command: 'agent-runner image ls', does: 'worker images and the derived images built for projects' },
  ],
  'image build': [
    { command: 'agent-runner image build', does: "the worker image with this repository's toolchain" },
    {
      command: 'agent-runner image build --worker claude --worker gemini',
      does: 'an image with two more workers, built ahead',
    },
    {
      command: 'agent-runner image build --worker-only --ca-cert /etc/ssl/certs/ca-certificates.crt',
      does: 'the worker image alone, trusting a proxy CA',
    },
  ],
  'image ls': [
    { command: 'agent-runner image ls', does: 'worker images and the derived images built for projects' },
    { command: 'agent-runner image ls | grep claude', does: 'the images that hold Claude Code' },
  ],
  'image rm': [
    { command: 'agent-runner image rm TAG', does: 'remove one image (never one a container uses)' },
    { command: 'agent-runner image rm TAG1 TAG2', does: 'remove several' },
  ],
  'image tag': [
    { command: 'agent-runner image tag', does: 'the worker image tag the runner uses' },
    {
      command: 'docker image inspect "$(agent-runner image tag)"',
      does: 'look at that image',
    },
  ],
  doctor: [
    {
      command: 'agent-runner doctor',
      does: 'check Docker, the image, the repository, the toolchain, the set-up, the DoD, the endpoints',
    },
    { command: 'agent-runner doctor --json', does: 'the same checks as JSON' },
  ],
  plan: [
    { command: 'agent-runner plan --prd spec.md', does: 'only the acceptance criteria, as YAML' },
    { command: 'agent-runner plan --prd spec.md --json', does: 'the same as JSON' },
  ],
  serve: [
    { command: 'agent-runner serve', does: 'HTTP API and live web view on 127.0.0.1:7770' },
    {
      command: 'agent-runner serve --model-script examples/slugify/model-script.yaml',
      does: 'the demo, with no key',
    },
    {
      command: 'agent-runner serve --control postgres://agent_runner_node:PASS@dbhost:55432/postgres',
      does: 'a node of a fleet',
    },
  ],
  wait: [
    { command: 'agent-runner wait T1 T2', does: 'wait for tasks to end; exit with the highest exit code' },
    {
      command: 'agent-runner wait "$(agent-runner run --prd spec.md --detach)" --json',
      does: 'start a task in the background, then its summary as JSON',
    },
  ],
  logs: [
    { command: 'agent-runner logs T1', does: "a task's progress so far" },
    { command: 'agent-runner logs -f T1', does: 'follow it until it ends' },
  ],
  answer: [
    { command: 'agent-runner answer T1 "use the v2 API"', does: "answer a background task's question" },
    {
      command: 'AGENT_RUNNER_TOKEN=… agent-runner answer --server http://node-a:7770 T1 "yes"',
      does: "through a fleet node's server",
    },
  ],
  stop: [
    { command: 'agent-runner stop T1', does: 'stop a background task as Ctrl-C does' },
    {
      command: 'AGENT_RUNNER_TOKEN=… agent-runner stop --server http://node-a:7770 T1',
      does: 'a task another node of the fleet runs',
    },
  ],
  verify: [
    { command: 'agent-runner verify T1', does: "run a task's recorded checks again on its branch" },
    {
      command: 'agent-runner verify origin/agent-runner/T1',
      does: "a remote branch: fetches it and the remote's notes",
    },
    { command: 'agent-runner verify https://github.com/acme/app/pull/12', does: 'a pull request' },
  ],
  deliver: [
    {
      command: 'agent-runner deliver T1 --pr',
      does: 'push a finished task and open or update its pull request',
    },
    { command: 'agent-runner deliver T1 --pr --draft', does: 'a task that is not COMPLETE, as a draft' },
  ],
  control: [
    { command: 'agent-runner control migrate', does: "create or update the control database's tables" },
    { command: 'agent-runner control status', does: 'nodes, queue depth, oldest queued task' },
  ],
  'control migrate': [
    {
      command: 'AGENT_RUNNER_NODE_PASSWORD=… agent-runner control migrate',
      does: 'tables, the queue and the role agent_runner_node',
    },
    {
      command:
        'agent-runner control migrate --control postgres://postgres:PASS@127.0.0.1:55432/postgres --json',
      does: 'a database named on the command line',
    },
  ],
  'control status': [
    { command: 'agent-runner control status', does: 'nodes (load, heartbeat age, STALE), queue depth' },
    { command: 'agent-runner control status --json', does: 'the same as JSON' },
  ],
  memory: [
    {
      command: 'agent-runner memory add "Queue on PostgreSQL" --text "Jobs go through pg-boss; no Redis."',
      does: 'a new active entry file to review and commit',
    },
    { command: 'agent-runner memory list --status active', does: 'the entries every worker run reads' },
    { command: 'agent-runner memory preview --worker claude', does: 'what a claude run gets, exactly' },
  ],
  'memory add': [
    {
      command: 'agent-runner memory add "Queue on PostgreSQL" --text "Jobs go through pg-boss; no Redis."',
      does: 'writes .agent-runner/memory/NNNN-queue-on-postgresql.md',
    },
    {
      command: 'agent-runner memory add "API errors" --file decision.md --commit',
      does: 'and commits that file alone',
    },
  ],
  'memory list': [
    { command: 'agent-runner memory list', does: 'id, status, title, source, when' },
    { command: 'agent-runner memory list --status archived --json', does: 'archived entries as JSON' },
  ],
  'memory show': [
    { command: 'agent-runner memory show 3', does: "entry 0003's whole text" },
    { command: 'agent-runner memory show 0003-queue-on-postgresql', does: 'the same, by id' },
  ],
  'memory archive': [
    { command: 'agent-runner memory archive 3', does: 'read by no worker from the next commit on' },
    { command: 'agent-runner memory archive 3 --commit', does: 'and commits the file' },
  ],
  'memory preview': [
    {
      command: 'agent-runner memory preview',
      does: "the prompts' section and every CLI's instructions file",
    },
    { command: 'agent-runner memory preview --worker codex --json', does: "codex's, as JSON" },
  ],
  token: [
    {
      command: 'agent-runner token create --name alice --role operator',
      does: "a token for this repository's server, printed once",
    },
    { command: 'agent-runner token revoke alice', does: 'refused from the next request on' },
  ],
  'token create': [
    {
      command: 'agent-runner token create --name alice --role operator',
      does: "in this repository's .agent-runner/ (one server)",
    },
    {
      command: 'agent-runner token create --name ci --role viewer --control postgres://…',
      does: "in the fleet's database: every node accepts it",
    },
  ],
  'token list': [
    { command: 'agent-runner token list', does: 'names, roles, created, last used, revoked' },
    {
      command: 'AGENT_RUNNER_TOKEN=… agent-runner token list --server http://build-1:7770 --json',
      does: "a server's tokens through its API (an admin token)",
    },
  ],
  'token revoke': [
    { command: 'agent-runner token revoke alice', does: 'every server that reads the store refuses it' },
    { command: 'agent-runner token revoke ci --control postgres://…', does: 'on every node of the fleet' },
  ],
  audit: [
    {
      command: 'agent-runner audit --since 12h',
      does: 'who started, answered, stopped, resumed, from where',
    },
    {
      command: 'agent-runner audit --json --control postgres://…',
      does: "the fleet's log, one entry per line",
    },
  ],
};

/** A command's path below the program: `run`, `image build`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current?.parent; current = current.parent)
    names.unshift(current.name());
  return names.join(' ');
}

/** The examples as `--help` ends with them and the reference shows them: what it does, then the command. */
export function examplesText(examples: readonly CommandExample[]): string {
  return examples.map((example) => `# ${example.does}\n${example.command}`).join('\n');
}

/** Ends every command's `--help` with its examples (a command without any is left as it is). */
export function addExamples(program: Command): void {
  const visit = (command: Command) => {
    const examples = COMMAND_EXAMPLES[commandPath(command)];
    if (examples?.length) command.addHelpText('after', `\nExamples:\n${indent(examplesText(examples))}`);
    command.commands.forEach(visit);
  };
  program.commands.forEach(visit);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
