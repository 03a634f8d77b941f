import { describe, expect, it } from 'vitest';
import { safeOutput, type CliOutput } from '../../src/cli/output.js';
import { createProgressPrinter } from '../../src/cli/progress.js';
import { formatStatusTable } from '../../src/cli/status-command.js';
import type { TaskEntry } from '../../src/lifecycle/task-inventory.js';
import { Redaction } from '../../src/notes/redact.js';
import {
  cursorSequence,
  printableText,
  showControls,
  showControlsInJson,
} from '../../src/notes/terminal-text.js';

const ESC = '\u001b';

/** Every character a terminal may obey: C0 but TAB and LF, DEL, C1, the bidi overrides and isolates. */
const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, code) => code).filter((code) => code !== 0x09 && code !== 0x0a),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, index) => 0x80 + index),
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e,
  0x2066,
  0x2067,
  0x2068,
  0x2069,
].map((code) => String.fromCharCode(code));

// eslint-disable-next-line no-control-regex -- looking for raw control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** Sequences a worker may plant: clipboard, title, link, clear screen, a C1 CSI, a bidi override. */
const ATTACKS = [
  `${ESC}]52;c;${Buffer.from('pwned').toString('base64')}\u0007`,
  `${ESC}]0;owned title\u0007`,
  `${ESC}]8;;https://example.invalid/${ESC}\\link${ESC}]8;;${ESC}\\`,
  `${ESC}[2J${ESC}[3J${ESC}[H`,
  '\u009b2J',
  'abc\u202edcba\u2066x\u2069',
  'over\rwrite\bback\u0000nul\u007fdel',
];

function captured(isTTY = false): { output: CliOutput; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (text) => out.push(text), err: (text) => err.push(text), isTTY }, out, err };
}

describe('the terminal sanitiser', () => {
  it('shows every control character as a visible escape, and keeps \\n and \\t', () => {
    for (const character of CONTROLS) {
      const shown = showControls(`a${character}b`);
      expect(shown, `U+${character.charCodeAt(0).toString(16)}`).not.toMatch(RAW);
      expect(shown).toMatch(/^a\\(x[0-9a-f]{2}|u[0-9a-f]{4})b$/);
    }
    expect(showControls(`${ESC}]0;T\u0007`)).toBe('\\x1b]0;T\\x07');
    expect(showControls('\u009b2J\u007f')).toBe('\\x9b2J\\x7f');
    expect(showControls('\u202eevil\u2066')).toBe('\\u202eevil\\u2066');
    expect(showControls('line 1\n\tline 2')).toBe('line 1\n\tline 2');
    expect(showControls('line 1\nline 2', 'one_line')).toBe('line 1\\x0aline 2');
    // Text that is not a control stays as it is (accents, emoji, arrows).
    expect(showControls('café ✅ → done')).toBe('café ✅ → done');
  });

  it('is idempotent: what it shows has nothing left to show', () => {
    for (const text of [...ATTACKS, CONTROLS.join(''), 'plain\ntext']) {
      const once = showControls(text);
      expect(showControls(once)).toBe(once);
      expect(printableText(once)).toBe(once);
      expect(once).not.toMatch(RAW);
    }
  });

  it('keeps JSON valid with the escapes as data: JSON.stringify escapes C0, the rest becomes \\u escapes', () => {
    const value = { command: ATTACKS.join(' '), all: CONTROLS.join('') };
    const json = JSON.stringify(value);
    // JSON.stringify escapes C0 by itself; DEL, C1 and bidi stay raw in its text.
    expect(json).not.toMatch(/[\u0000-\u001f]/); // eslint-disable-line no-control-regex -- the point
    expect(json).toMatch(/[\u007f-\u009f\u202a-\u202e]/);
    const printed = printableText(json);
    expect(printed).not.toMatch(RAW);
    expect(JSON.parse(printed)).toEqual(value);
    expect(showControlsInJson(printed)).toBe(printed);
    // Pretty JSON (status --json) too, its layout kept.
    const pretty = JSON.stringify(value, null, 2);
    expect(JSON.parse(printableText(pretty))).toEqual(value);
    expect(printableText(pretty).split('\n')).toHaveLength(pretty.split('\n').length);
  });

  it('makes the runner’s own cursor moves from coded moves only', () => {
    expect(cursorSequence({ kind: 'up', lines: 3 })).toBe(`${ESC}[3A`);
    expect(cursorSequence({ kind: 'up', lines: 0 })).toBe('');
    expect(cursorSequence({ kind: 'clear_line' })).toBe(`${ESC}[2K`);
    expect(cursorSequence({ kind: 'clear_below' })).toBe(`${ESC}[J`);
  });
});

describe('the safe output: every line agent-runner prints', () => {
  it('shows the controls of human lines, keeps JSON lines valid, and redacts first', () => {
    const redaction = new Redaction(['secret-value-123']);
    const { output, out, err } = captured();
    const safe = safeOutput(output, redaction);
    safe.err(`[00:01]   $ echo ${ATTACKS[1]} secret-value-123`);
    safe.out(JSON.stringify({ command: `${ATTACKS[4]} secret-value-123` }));
    expect(err).toEqual(['[00:01]   $ echo \\x1b]0;owned title\\x07 [REDACTED]']);
    expect(out).toEqual(['{"command":"\\u009b2J [REDACTED]"}']);
    expect(JSON.parse(out[0] ?? '')).toEqual({ command: '\u009b2J [REDACTED]' });
    expect(safe.printable(`ask ${ATTACKS[3]}?`)).toBe('ask \\x1b[2J\\x1b[3J\\x1b[H?');
  });

  it('writes the runner’s redraw with real moves while the text in it stays data', () => {
    const { output, err } = captured(true);
    safeOutput(output, new Redaction()).redraw([
      { kind: 'up', lines: 2 },
      { kind: 'clear_line' },
      `  a  running  $ echo ${ATTACKS[3]}`,
    ]);
    expect(err).toEqual([`${ESC}[2A${ESC}[2K  a  running  $ echo \\x1b[2J\\x1b[3J\\x1b[H`]);
  });

  it('progress lines of a worker’s command, path and the summary: one line each, nothing raw', () => {
    const { output, err } = captured();
    const safe = safeOutput(output, new Redaction());
    const print = createProgressPrinter((line) => safe.err(line), Date.parse('2026-01-01T00:00:00Z'));
    const at = '2026-01-01T00:00:01.000Z';
    for (const attack of ATTACKS) {
      print({ type: 'worker_event', run: 1, event: { kind: 'command_started', command: attack }, at });
      print({
        type: 'worker_event',
        run: 1,
        event: { kind: 'file_changed', path: attack, change: 'add' },
        at,
      });
    }
    print({ type: 'human', question: 'Which?\n[00:09] COMPLETE after 1s', answer: null, at });
    expect(err.length).toBe(ATTACKS.length * 2 + 1);
    for (const line of err) {
      expect(line).not.toMatch(RAW);
      expect(line).not.toContain('\n');
    }
    expect(err[0]).toBe('[00:01]   $ \\x1b]52;c;cHduZWQ=\\x07');
  });

  it('status: a reason with escape sequences is shown escaped, its columns measured as shown', () => {
    const task = {
      taskId: 'T-1',
      status: 'finished',
      state: 'FAILED',
      lastEventAt: '2026-01-01T00:00:00Z',
      reason: `boom ${ATTACKS[1]}${ATTACKS[5]}`,
      containers: [],
    } as unknown as TaskEntry;
    const lines = formatStatusTable([task]);
    for (const line of lines) expect(line).not.toMatch(RAW);
    expect(lines[1]).toContain('boom \\x1b]0;owned title\\x07abc\\u202edcba\\u2066x\\u2069');
  });
});
