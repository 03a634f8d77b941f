import { describe, expect, it } from 'vitest';
import { safeOutput, type CliOutput } from '../../src/cli/output.js';
import { validateConfig } from '../../src/config/load.js';
import { REDACTED, Redaction, configSecrets } from '../../src/notes/redact.js';

function captured(): { output: CliOutput; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (text) => out.push(text), err: (text) => err.push(text), isTTY: false }, out, err };
}

describe('the redaction point', () => {
  it('hides values added later from every holder of its redact function', () => {
    const redaction = new Redaction([], ['corp-[0-9]{6}']);
    const { redact } = redaction;
    expect(redact('token tok-1234567890 corp-123456')).toBe(`token tok-1234567890 ${REDACTED}`);
    redaction.add(['tok-1234567890']);
    expect(redact('token tok-1234567890 corp-123456')).toBe(`token ${REDACTED} ${REDACTED}`);
  });

  it('keeps JSON valid and catches a secret that JSON escapes', () => {
    const secret = 'pass"word\\with-escapes-9';
    const redaction = new Redaction([secret], ['internal-[0-9]+']);
    const line = JSON.stringify({ type: 'worker_event', event: { text: `x ${secret} internal-42 y` }, n: 1 });
    expect(line).not.toContain(secret);
    const redacted = redaction.redactJsonText(line);
    expect(JSON.parse(redacted)).toEqual({
      type: 'worker_event',
      event: { text: `x ${REDACTED} ${REDACTED} y` },
      n: 1,
    });
    // Plain text is redacted as text; untouched JSON is returned as it was.
    expect(redaction.redactJsonText(`say ${secret}`)).toBe(`say ${REDACTED}`);
    expect(redaction.redactJsonText('{"a": 1}')).toBe('{"a": 1}');
    // Pretty JSON stays pretty.
    expect(redaction.redactJsonText('{\n  "a": "internal-7"\n}\n')).toBe(`{\n  "a": "${REDACTED}"\n}\n`);
  });

  it('redacts everything the safe output prints, on stdout and stderr', () => {
    const redaction = new Redaction();
    const { output, out, err } = captured();
    const safe = safeOutput(output, redaction);
    redaction.add([], ['SECRET-[A-Z0-9]+']);
    safe.out(JSON.stringify({ reason: 'printed SECRET-ABC123' }));
    safe.err('[00:01]   $ echo SECRET-XYZ789 CANARY');
    expect(out).toEqual([JSON.stringify({ reason: `printed ${REDACTED}` })]);
    expect(err).toEqual([`[00:01]   $ echo ${REDACTED} CANARY`]);
  });

  it('takes both keys and redact.patterns from a configuration', () => {
    const config = validateConfig([
      { source: 'test', values: { worker: { apiKeyEnv: 'W_KEY' }, redact: { patterns: ['p-\\d+'] } } },
    ]);
    expect(configSecrets(config, { OPENAI_API_KEY: 'meta-key-value', W_KEY: 'worker-key-value' })).toEqual({
      values: ['meta-key-value', 'worker-key-value'],
      patterns: ['p-\\d+'],
    });
  });

  it('refuses a redact pattern that is not a regular expression', () => {
    expect(() =>
      validateConfig([{ source: 'test', values: { redact: { patterns: ['(unclosed'] } } }]),
    ).toThrow(/redact\.patterns\[0\]: expected a regular expression/);
  });
});

describe('masking a binary file in place', () => {
  it('hides every secret and pattern match by as many characters, so nothing after it moves', () => {
    const redaction = new Redaction(['sk-live-0123456789abcdef'], ['internal-secret-\\d+']);
    const binary = 'page\0sk-live-0123456789abcdef\0row internal-secret-42 end\0';
    const masked = redaction.mask(binary);
    expect(masked).toBe('page\0[REDACTED]**************\0row [REDACTED]******** end\0');
    expect(masked.length).toBe(binary.length);
    // Shorter than the marker: stars only.
    expect(new Redaction([], ['pw=\\w{3}']).mask('a pw=abc b')).toBe('a ****** b');
  });
});
