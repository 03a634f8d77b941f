/**
 * A task's journal through the fleet's database as it was, on the real PostgreSQL: events carrying a NUL, lone
 * surrogates and bytes that are not UTF-8, made by the real pieces they come through (the worker's stdout
 * decoded by the LineSplitter and read by codex's event parser; a DoD check's output through OutputTail and
 * tailOf; the Meta-agent's constrained-YAML reply read by parseMessage), written by the real EventJournal,
 * copied by copyJournalToDatabase under a lease, then read back by another node's event stream (the API
 * through ServeClient, as `logs` and `wait` read it) and by the takeover's journal read, which `resume`
 * validates. Every line comes back as the journal holds it; lines that are not agent-runner's (not UTF-8, a
 * raw NUL) stand as `journal_line_unstored` events, and the lines after them still arrive.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import type { ControlDatabase } from '../../src/control/control-database.js';
import { copyJournalToDatabase, journalFromDatabase } from '../../src/control/event-sink.js';
import { FleetEventFeed, fleetTaskSource } from '../../src/control/fleet-events.js';
import { stampedEventSchema, type StampedEvent } from '../../src/core/events.js';
import type { WorkerEvent } from '../../src/core/ports.js';
import { EventJournal, readJournal } from '../../src/notes/event-journal.js';
import { Redaction } from '../../src/notes/redact.js';
import { parseMessage } from '../../src/protocol/index.js';
import { LineSplitter, OutputTail, tailOf } from '../../src/sandbox/output-tail.js';
import { ServeClient } from '../../src/serve/api-client.js';
import { createApi } from '../../src/serve/http-api.js';
import { journalLines } from '../../src/serve/journal-follow.js';
import { PureNodeBoard } from '../../src/serve/pure-node-board.js';
import { CodexEventParser } from '../../src/worker/codex-events.js';
import { migratedTestDatabase, type MigratedTestDatabase } from '../support/control-database.js';

let fleet: MigratedTestDatabase;
let admin: ControlDatabase;
let node: ControlDatabase;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  fleet = await migratedTestDatabase();
  admin = fleet.admin;
  node = await fleet.node();
}, 600_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fleet?.close();
});

const at = () => new Date().toISOString();
const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0xc3]);

/** What the worker printed, as the host reads it: codex's stdout bytes, split and decoded, then parsed. */
function workerEvents(): WorkerEvent[] {
  const events: WorkerEvent[] = [];
  const parser = new CodexEventParser((event) => events.push(event));
  const splitter = new LineSplitter((line) => parser.push(line));
  const item = (text: string) =>
    `{"type":"item.completed","item":{"id":"m1","type":"agent_message","text":"${text}"}}\n`;
  // `cat /proc/1/cmdline` (NULs between the arguments), a lone surrogate in codex's own JSON, raw bytes.
  splitter.write(Buffer.from(item('pid 1: sleep\\u0000infinity\\u0000')));
  splitter.write(Buffer.from(item('half a pair: \\ud800 and \\udc00 alone')));
  splitter.write(Buffer.concat([Buffer.from(item('bytes: ').slice(0, -4)), NOT_UTF8, Buffer.from('"}}\n')]));
  splitter.end();
  expect(events.map((event) => event.kind)).toEqual(['message', 'message', 'message']);
  return events;
}

/** A DoD check's output as the host records it: the bytes of its stdout, decoded and tailed. */
function dodOutput(): string {
  const tail = new OutputTail(4096);
  tail.write(Buffer.concat([Buffer.from('ok 1 - slug\x00\n'), NOT_UTF8, Buffer.from('\n# pass 1\n')]));
  return tailOf(tail.toString(), '', 2000);
}

/** The Meta-agent's reply, read as every reply is: a lone surrogate and a NUL escaped in its YAML. */
function metaDecision(): StampedEvent {
  const parsed = parseMessage(
    [
      'type: next_action',
      'version: 1',
      'payload:',
      '  decision:',
      '    action: ask_human',
      '    reason: "half a pair \\ud800, a NUL \\0 too"',
      '  used_patterns: []',
      '  question: "Keep digits? \\udc00"',
    ].join('\n'),
    'next_action',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const { payload } = parsed.message;
  return {
    type: 'decision',
    decision: {
      action: payload.decision.action,
      reason: payload.decision.reason,
      usedPatterns: payload.used_patterns,
      ...(payload.question !== undefined ? { question: payload.question } : {}),
    },
    usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0, costUsd: 0 },
    at: at(),
  };
}

it('NUL, lone surrogates and bytes that are not UTF-8 reach the database and come back as the journal holds them; a line it cannot hold does not stop the rest', async () => {
  const taskId = 'FLEET-BYTES';
  await admin.pool.query(
    `INSERT INTO agent_runner.nodes (id, host, pid, capacity) VALUES ('node-a', 'a.example', 1, 1)`,
  );
  await admin.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state, node_id, lease_generation)
       VALUES ($1, 'https://git.example/r.git', '# P', 'RUNNING', 'node-a', 1)`,
    [taskId],
  );
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-journal-'));
  cleanups.push(() => rmSync(runDir, { recursive: true, force: true }));
  const redaction = new Redaction(['a-secret-value']);
  const journal = new EventJournal(runDir, redaction.redact);

  const written: StampedEvent[] = [
    { type: 'transition', from: 'PENDING', to: 'PLANNING', at: at() },
    metaDecision(),
    ...workerEvents().map((event): StampedEvent => ({ type: 'worker_event', run: 1, event, at: at() })),
    {
      type: 'dod',
      run: 1,
      dod: {
        status: 'passed',
        source: 'package.json',
        ranOnDirtyTree: false,
        results: [
          {
            name: 'test',
            command: 'npm test',
            status: 'passed',
            exitCode: 0,
            durationMs: 5,
            outputTail: dodOutput(),
          },
        ],
      },
      at: at(),
    },
  ];
  for (const event of written) journal.append(event);
  // A line longer than a read of the file, with a three-byte character across the 64 KiB mark.
  const size = statSync(journal.file).size;
  const long = [0, 1, 2]
    .map((pad): StampedEvent => ({
      type: 'worker_event',
      run: 1,
      event: { kind: 'message', text: `${'a'.repeat(pad)}${'€'.repeat(30_000)}` },
      at: at(),
    }))
    .find((event) => {
      const byte = Buffer.from(JSON.stringify(event))[64 * 1024 - size];
      return byte !== undefined && byte >= 0x80 && byte < 0xc0;
    });
  if (long === undefined) throw new Error('no padding puts a character across the read boundary');
  journal.append(long);
  written.push(long);
  // Lines agent-runner never writes (another program appended them): not UTF-8, a raw NUL.
  appendFileSync(
    journal.file,
    Buffer.concat([
      Buffer.from(`{"type":"refused","reasons":["`),
      NOT_UTF8,
      Buffer.from(`"],"at":"${at()}"}\n`),
    ]),
  );
  appendFileSync(journal.file, `{"type":"refused","reasons":["raw \x00 NUL"],"at":"${at()}"}\n`);
  const last: StampedEvent = { type: 'human', question: 'Keep digits? \udc00', answer: 'yes', at: at() };
  journal.append(last);

  // The probe: the journal holds the escapes jsonb refuses, and the damaged lines.
  const fileText = readFileSync(journal.file, 'utf8');
  for (const escape of ['\\u0000', '\\ud800', '\\udc00', '\ufffd', '\x00'])
    expect(fileText).toContain(escape);

  const copied = copyJournalToDatabase(node, taskId, journal.file, {
    ended: () => true,
    signal: AbortSignal.timeout(60_000),
    redactJsonText: redaction.redactJsonText,
    lease: { nodeId: 'node-a', generation: 1 },
  });
  const outcome = await Promise.race([
    copied.then((count) => ({ copied: count })),
    new Promise((resolve) => setTimeout(() => resolve('still copying after 15 s'), 15_000)),
  ]);
  const total = written.length + 3;
  expect(outcome).toEqual({ copied: total });

  // The journal as its readers see it: every line in order, the damaged ones flagged or with a raw NUL.
  const fileLines: string[] = [];
  for await (const line of journalLines(journal.file, {
    afterLine: 0,
    follow: false,
    signal: new AbortController().signal,
  }))
    fileLines.push(line.text);
  expect(fileLines).toHaveLength(total);
  const damaged = new Set([total - 3, total - 2]);

  const stored = await journalFromDatabase(node, taskId);
  expect(stored).toHaveLength(total);
  stored.forEach((line, index) => {
    if (damaged.has(index)) {
      const event = JSON.parse(line) as { type: string; reason: string };
      expect(event.type).toBe('journal_line_unstored');
      expect(event.reason).toMatch(index === total - 3 ? /not UTF-8/ : /raw NUL/);
    } else expect(line).toBe(fileLines[index]);
  });
  // No silent change: what the events said is what they say read back.
  const undamaged = stored
    .filter((_, index) => !damaged.has(index))
    .map((line) => JSON.parse(line) as unknown);
  expect(undamaged).toEqual(
    written.concat(last).map((event) => JSON.parse(JSON.stringify(event)) as unknown),
  );
  expect((undamaged[1] as { decision: { reason: string } }).decision.reason).toBe(
    'half a pair \ud800, a NUL \0 too',
  );

  // In SQL: the lines as jsonb where jsonb can hold them, NULL for the others (a query over them still runs).
  const types = await node.pool.query<{ type: string | null }>(
    `SELECT agent_runner.event_json(line)->>'type' AS type FROM agent_runner.events WHERE task_id = $1 ORDER BY seq`,
    [taskId],
  );
  expect(types.rows.map((row) => row.type)).toEqual(
    stored.map((line) =>
      /\\u0000|\\ud[89ab]|\\ud[c-f]/i.test(line) ? null : (JSON.parse(line) as { type: string }).type,
    ),
  );
  expect(types.rows.filter((row) => row.type === null).length).toBeGreaterThanOrEqual(3);

  // The takeover: the database's copy written as the journal `resume` reads, valid against its schema.
  const rebuilt = path.join(runDir, 'rebuilt.jsonl');
  writeFileSync(rebuilt, stored.map((line) => `${line}\n`).join(''));
  const resumed = readJournal(rebuilt, stampedEventSchema);
  expect(resumed.map((event) => event.type)).toEqual(
    fileLines.map((line, index) =>
      damaged.has(index) ? 'journal_line_unstored' : (JSON.parse(line) as { type: string }).type,
    ),
  );

  // Another node's stream (the API, read as `logs` and `wait` read it): the same lines, the same ids.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-journal-node-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const feed = new FleetEventFeed(node);
  await feed.start();
  cleanups.push(() => feed.close());
  const token = 'fleet-journal-token';
  const api = createApi(new PureNodeBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
    fleetTask: fleetTaskSource(node, feed),
  });
  const server = serve({ fetch: api.fetch, port: 0, hostname: '127.0.0.1' });
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  await new Promise((resolve) => server.once('listening', resolve));
  const client = new ServeClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, token);
  const streamed: { id?: string; event?: string; data: string }[] = [];
  for await (const message of client.events(taskId, { follow: false })) streamed.push(message);
  const journalMessages = streamed.filter((message) => message.event === 'journal');
  // The ids are the events table's seqs (`l<seq>.<tag>`).
  expect(journalMessages.map((message) => Number(/^l(\d+)\./.exec(message.id ?? '')?.[1]))).toEqual(
    stored.map((_, index) => index + 1),
  );
  expect(journalMessages.map((message) => message.data)).toEqual(stored);
}, 120_000);

it('a line the database refuses as data (a refusal no check foresaw) stands as a journal_line_unstored event; the next lines follow', async () => {
  const taskId = 'FLEET-REFUSED';
  await admin.pool.query(
    `INSERT INTO agent_runner.tasks (id, repo_url, prd, state) VALUES ($1, 'https://git.example/r.git', '# P', 'RUNNING')`,
    [taskId],
  );
  // The refusal: a trigger of this test raising a data exception for one line.
  await admin.pool.query(`
    CREATE FUNCTION agent_runner.refuse_line() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.line LIKE '%refuse-me%' THEN RAISE EXCEPTION 'this line is refused' USING ERRCODE = '22000'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER refuse_line BEFORE INSERT ON agent_runner.events
      FOR EACH ROW EXECUTE FUNCTION agent_runner.refuse_line()`);
  cleanups.push(() =>
    admin.pool.query(
      `DROP TRIGGER refuse_line ON agent_runner.events; DROP FUNCTION agent_runner.refuse_line()`,
    ),
  );
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-journal-'));
  cleanups.push(() => rmSync(runDir, { recursive: true, force: true }));
  const journal = new EventJournal(runDir);
  const events: StampedEvent[] = ['first', 'refuse-me', 'third'].map((what) => ({
    type: 'stalled',
    repeats: 1,
    what,
    at: at(),
  }));
  for (const event of events) journal.append(event);
  const log: string[] = [];
  const copied = copyJournalToDatabase(node, taskId, journal.file, {
    ended: () => true,
    signal: AbortSignal.timeout(60_000),
    redactJsonText: (text) => text,
    log: (line) => log.push(line),
  });
  const outcome = await Promise.race([
    copied.then((count) => ({ copied: count })),
    new Promise((resolve) => setTimeout(() => resolve('still copying after 15 s'), 15_000)),
  ]);
  expect(outcome).toEqual({ copied: 3 });
  const stored = (await journalFromDatabase(node, taskId)).map(
    (line) => JSON.parse(line) as Record<string, unknown>,
  );
  expect(stored.map((event) => event.type)).toEqual(['stalled', 'journal_line_unstored', 'stalled']);
  expect(stored[1]?.reason).toBe('PostgreSQL refused the journal line: this line is refused');
  expect(stored[2]?.what).toBe('third');
  expect(log.join('\n')).toContain(`task ${taskId}: journal line 2 not stored as it is`);
}, 60_000);
