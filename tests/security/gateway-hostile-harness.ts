/**
 * A hostile worker, for the security suite: `agent-runner run` end to end (real CLI, real git, the real codex
 * binary in the real sandbox), where the scripted codex model makes codex run a Node probe inside the
 * container. The probe talks to the relay (127.0.0.1:8787) with the per-task token it finds in its own
 * environment or in /proc, exactly as a prompt-injected worker could, writes what each request got to
 * `probe-results.json` and commits it, so the test reads the results from the task branch.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from '../support/cli.js';
import {
  startScriptedChatServer,
  type ChatStep,
  type ScriptedChatServer,
} from '../support/scripted-chat-server.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  type ResponseOutputItem,
  type ScriptedReply,
} from '../support/scripted-responses-server.js';
import { createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';

export const WORKER_MODEL = 'scripted-test-model';
export const META_KEY = 'sec-gw-meta-key-5d1c9e7a';

/** One request of the probe. `bodyBytes` streams that many bytes (chunked, no Content-Length). */
export interface Probe {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  bodyBytes?: number;
  headerBytes?: number;
  /** Send no token. */
  noToken?: boolean;
}

export interface ProbeResult {
  name: string;
  status: number | null;
  error: string | null;
  body: string;
}

/**
 * The probe program (CommonJS, Node 18+). It uses node:http so the request target goes out exactly as
 * written (fetch would resolve `..` and re-encode). Requests run one after another; `stopAfterStatus` ends
 * the sequence at the first answer with that status (after recording it).
 */
export function probeProgram(probes: readonly Probe[]): string {
  return `
const http = require('node:http');
const fs = require('node:fs');
function findToken() {
  if (process.env.AGENT_RUNNER_GATEWAY_TOKEN) return process.env.AGENT_RUNNER_GATEWAY_TOKEN;
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name))) {
    try {
      const env = fs.readFileSync('/proc/' + pid + '/environ', 'utf8').split('\\0');
      const hit = env.find((line) => line.startsWith('AGENT_RUNNER_GATEWAY_TOKEN='));
      if (hit) return hit.slice('AGENT_RUNNER_GATEWAY_TOKEN='.length);
    } catch {}
  }
  return '';
}
const token = findToken();
const probes = ${JSON.stringify(probes)};
function send(probe) {
  return new Promise((resolve) => {
    const headers = {};
    if (!probe.noToken) headers.authorization = 'Bearer ' + token;
    if (probe.headerBytes) headers['x-padding'] = 'p'.repeat(probe.headerBytes);
    let payload = null;
    if (probe.body !== undefined) {
      payload = Buffer.from(JSON.stringify(probe.body));
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const request = http.request({ host: '127.0.0.1', port: 8787, method: probe.method, path: probe.path, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { if (body.length < 400) body += chunk; });
      response.on('end', () => resolve({ name: probe.name, status: response.statusCode, error: null, body: body.slice(0, 2000) }));
      response.on('error', (error) => resolve({ name: probe.name, status: response.statusCode, error: String(error.code || error.message), body }));
    });
    request.on('error', (error) => resolve({ name: probe.name, status: null, error: String(error.code || error.message), body: '' }));
    if (payload) request.end(payload);
    else if (probe.bodyBytes) {
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      let sent = 0;
      const pump = () => {
        while (sent < probe.bodyBytes) {
          sent += chunk.length;
          if (!request.write(chunk)) return request.once('drain', pump);
        }
        request.end();
      };
      pump();
    } else request.end();
  });
}
(async () => {
  const results = [];
  for (const probe of probes) results.push(await send(probe));
  fs.writeFileSync('probe-results.json', JSON.stringify({ tokenFound: token.length > 0, results }, null, 1));
})();
`;
}

/** A codex tool call that runs `cmd`, waiting up to 30 s for it (codex's default is about 10 s). */
function longCommandCall(cmd: string, callId: string): ResponseOutputItem {
  return {
    type: 'function_call',
    call_id: callId,
    name: 'exec_command',
    arguments: JSON.stringify({ cmd, yield_time_ms: 30_000 }),
  };
}

/** The codex reply that runs the probe and commits its results. */
export function probeTurn(probes: readonly Probe[]): ScriptedReply {
  const command = [
    writeFileCommand('/tmp/probe.cjs', probeProgram(probes)),
    'node /tmp/probe.cjs && git add probe-results.json && git commit -q -m "probe results" && echo probed',
  ].join('\n');
  return {
    kind: 'output',
    items: [longCommandCall(command, 'call_probe')],
    usage: { inputTokens: 100, outputTokens: 10 },
  };
}

/** A canary reply for a legitimate request of the probe (it consumes one scripted reply). */
export function canaryReply(usage = { inputTokens: 100, outputTokens: 10 }): ScriptedReply {
  return { kind: 'output', items: [assistantMessage('canary answer')], usage };
}

export interface HostileRun {
  repoRoot: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  events: { type: string; [key: string]: unknown }[];
  summary: { state: string; reason: string; exitCode: number; notePath: string | null };
  probe: { tokenFound: boolean; results: ProbeResult[] };
  upstream: ScriptedResponsesServer;
  chat: ScriptedChatServer;
  journal: { type: string; [key: string]: unknown }[];
  /** Closes the scripted servers and removes the repository (call it in afterAll). */
  cleanup(): Promise<void>;
}

/**
 * Runs one task whose codex run is the hostile probe. `replies` are the codex model's replies after the probe
 * turn (canary answers first, in the order the probe asks, then codex's own final turn).
 */
export async function runHostileTask(options: {
  taskId: string;
  config: Record<string, unknown>;
  meta: ChatStep[];
  replies: ScriptedReply[];
  probes: Probe[];
  args?: string[];
}): Promise<HostileRun> {
  const docker = createDockerClient();
  const chat = await startScriptedChatServer(options.meta);
  const upstream = await new ScriptedResponsesServer([probeTurn(options.probes), ...options.replies]).start();
  const repo = createNodeRepo();
  const cleanup = async () => {
    await chat.close();
    await upstream.close();
    repo.remove();
  };
  writeFileSync(path.join(repo.root, 'agent-runner.yaml'), `${JSON.stringify(options.config, null, 2)}\n`);
  git(repo.root, 'add', 'agent-runner.yaml');
  git(repo.root, 'commit', '-q', '-m', 'agent-runner config');
  const result = await runCliCaptured(
    ['run', '--prd', 'PRD.md', '--task-id', options.taskId, '--json', '--skip-dod', ...(options.args ?? [])],
    {
      cwd: repo.root,
      env: {
        ...process.env,
        OPENAI_BASE_URL: chat.url,
        OPENAI_API_KEY: META_KEY,
        AGENT_RUNNER_WORKER_BASE_URL: upstream.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: WORKER_MODEL,
        CI: 'true',
      },
    },
  );
  // Whatever the worker did, the task's container is gone when the command returns.
  const left = await docker.listContainers({
    all: true,
    // The repository too: another checkout may run the same suite (same task ids) on this engine.
    filters: { label: [`agent-runner.task=${options.taskId}`, `agent-runner.repo=${repo.root}`] },
  });
  if (left.length > 0) throw new Error(`containers left running: ${left.map((c) => c.Id).join(', ')}`);
  const events = result.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
  const summary = events.at(-1) as unknown as HostileRun['summary'];
  const journalFile = path.join(repo.root, '.agent-runner', 'runs', options.taskId, 'events.jsonl');
  const journal = readFileSync(journalFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
  let probe: HostileRun['probe'] = { tokenFound: false, results: [] };
  try {
    probe = JSON.parse(
      git(repo.root, 'show', `agent-runner/${options.taskId}:probe-results.json`),
    ) as HostileRun['probe'];
  } catch (error) {
    throw new Error(
      `The probe left no results on the task branch (${String(error)}).\nstderr:\n${result.stderr}\nstdout:\n${result.stdout.slice(-4000)}`,
    );
  }
  return { repoRoot: repo.root, ...result, events, summary, probe, upstream, chat, journal, cleanup };
}

/** The result of the probe request named `name`. */
export function resultOf(run: HostileRun, name: string): ProbeResult {
  const found = run.probe.results.find((result) => result.name === name);
  if (!found) throw new Error(`no probe result ${name}`);
  return found;
}

/** The gateway refusals recorded in the journal. */
export function refusalsIn(
  events: readonly { type: string; [key: string]: unknown }[],
): { method: string; path: string; reason: string; status: number; detail: string }[] {
  return events
    .filter((event) => event.type === 'gateway_refused')
    .map(
      (event) =>
        event.refusal as { method: string; path: string; reason: string; status: number; detail: string },
    );
}
