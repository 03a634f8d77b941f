/**
 * A project Dockerfile trusting the extra CA bundle: every stage from its start, `FROM scratch` left alone, a
 * FROM continued over lines, and nothing else of the Dockerfile changed.
 */
import { describe, expect, it } from 'vitest';
import { CONTEXT_CA_FILE, dockerfileTrustingCa } from '../../src/toolchain/project-ca.js';

describe('dockerfileTrustingCa', () => {
  it('follows every FROM (any case, --platform, AS) with the trust lines; the rest is unchanged', () => {
    const text = [
      '# syntax=docker/dockerfile:1',
      'ARG BASE=debian:bookworm',
      'FROM --platform=linux/amd64 ${BASE} AS build',
      'RUN curl -fsS https://example.com/tool > /tool',
      'from debian:bookworm',
      'COPY --from=build /tool /tool',
      '',
    ].join('\n');
    const out = dockerfileTrustingCa(text).split('\n');
    const firstFrom = out.indexOf('FROM --platform=linux/amd64 ${BASE} AS build');
    expect(out[firstFrom + 1]).toBe(
      `COPY ${CONTEXT_CA_FILE} /usr/local/share/ca-certificates/agent-runner-extra-ca.crt`,
    );
    expect(out[firstFrom + 2]).toMatch(/^RUN if command -v update-ca-certificates/);
    expect(out[firstFrom + 3]).toBe(
      'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/agent-runner-extra-ca.crt',
    );
    expect(out[firstFrom + 4]).toBe('RUN curl -fsS https://example.com/tool > /tool');
    const secondFrom = out.indexOf('from debian:bookworm');
    expect(out[secondFrom + 1]).toMatch(/^COPY /);
    // Without the added lines, the Dockerfile as written.
    expect(
      out
        .filter((line) => !/agent-runner-extra-ca/.test(line) && !/^RUN if command -v/.test(line))
        .join('\n'),
    ).toBe(text);
  });

  it('leaves FROM scratch alone (no shell to run in) and reads a FROM continued over lines', () => {
    const out = dockerfileTrustingCa('FROM scratch\nCOPY x /x\nFROM \\\n  debian:bookworm\nRUN true\n').split(
      '\n',
    );
    expect(out.slice(0, 2)).toEqual(['FROM scratch', 'COPY x /x']);
    expect(out.slice(2, 5)).toEqual([
      'FROM \\',
      '  debian:bookworm',
      `COPY ${CONTEXT_CA_FILE} /usr/local/share/ca-certificates/agent-runner-extra-ca.crt`,
    ]);
  });
});
