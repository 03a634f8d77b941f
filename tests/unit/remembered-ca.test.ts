import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { rememberCa, rememberedCa } from '../../src/sandbox/remembered-ca.js';
import { demuxStdout } from '../../src/toolchain/run-in-image.js';

describe('the remembered CA bundle', () => {
  it('is what the last build trusted, while the file exists', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rp-ca-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const env = { XDG_STATE_HOME: path.join(dir, 'state') };
    expect(await rememberedCa(env)).toBeUndefined();
    const bundle = path.join(dir, 'ca.crt');
    writeFileSync(bundle, '-----BEGIN CERTIFICATE-----\n');
    await rememberCa(env, bundle);
    expect(await rememberedCa(env)).toBe(bundle);
    rmSync(bundle);
    expect(await rememberedCa(env)).toBeUndefined();
  });
});

describe('demuxStdout', () => {
  it("keeps stdout frames of Docker's multiplexed logs", () => {
    const frame = (stream: number, text: string) => {
      const body = Buffer.from(text);
      const header = Buffer.alloc(8);
      header[0] = stream;
      header.writeUInt32BE(body.length, 4);
      return Buffer.concat([header, body]);
    };
    expect(demuxStdout(Buffer.concat([frame(1, 'v20.'), frame(2, 'warning'), frame(1, '11.1\n')]))).toBe(
      'v20.11.1\n',
    );
  });
});
