/**
 * The extra CA bundle (behind a TLS-inspecting proxy) for a project's own Dockerfile: its build steps fetch over
 * HTTPS too (`apt-get`, `pip`, `curl`), so every stage trusts the bundle from its start. The bundle is added to
 * the build context under a reserved name (in the context stream, never in the person's directory) and each
 * `FROM` (but `FROM scratch`, which has no shell) is followed by three lines that copy it in, add it to the
 * system's trust store where the image has one (`update-ca-certificates`, `update-ca-trust`, else appended to
 * `/etc/ssl/certs/ca-certificates.crt` when that exists) and point Node at it. Without a bundle the Dockerfile
 * is built exactly as written. A stage whose base image does not run as root cannot change its trust store: it
 * gets the file and NODE_EXTRA_CA_CERTS only (docs/toolchains.md).
 */

/** The bundle's name in the build context and where each stage gets it. */
export const CONTEXT_CA_FILE = '.agent-runner-extra-ca.crt';
export const STAGE_CA_PATH = '/usr/local/share/ca-certificates/agent-runner-extra-ca.crt';

const TRUST_LINES = [
  `COPY ${CONTEXT_CA_FILE} ${STAGE_CA_PATH}`,
  'RUN if command -v update-ca-certificates >/dev/null 2>&1; then update-ca-certificates >/dev/null 2>&1 || true; ' +
    `elif command -v update-ca-trust >/dev/null 2>&1; then cp ${STAGE_CA_PATH} /etc/pki/ca-trust/source/anchors/ 2>/dev/null && update-ca-trust 2>/dev/null || true; ` +
    `elif [ -w /etc/ssl/certs/ca-certificates.crt ]; then cat ${STAGE_CA_PATH} >> /etc/ssl/certs/ca-certificates.crt; fi`,
  `ENV NODE_EXTRA_CA_CERTS=${STAGE_CA_PATH}`,
];

/** The Dockerfile with every stage trusting the bundle first (see the module comment). */
export function dockerfileTrustingCa(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] as string;
    out.push(line);
    if (!/^\s*FROM\s/i.test(line)) continue;
    // A FROM continued over lines (`\` at the end) ends on the first line that does not continue.
    let instruction = line;
    while (/\\\s*$/.test(instruction) && index + 1 < lines.length) {
      index += 1;
      instruction = lines[index] as string;
      out.push(instruction);
    }
    const image = /^\s*FROM\s+(?:--\S+\s+)*(\S+)/i.exec(line)?.[1] ?? '';
    if (image.toLowerCase() === 'scratch') continue;
    out.push(...TRUST_LINES);
  }
  return out.join('\n');
}
