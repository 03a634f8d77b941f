/**
 * The extra CA bundle of a task's images (behind a TLS-inspecting proxy): named by its digest, so the images
 * built with it get their own tags, and read only when a build needs its content. It comes from a file
 * (`sandbox.extraCaCert`, `--ca-cert`, the one remembered from the last build) or from the worker image, whose
 * label names the bundle it was built with.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type Docker from 'dockerode';
import { UserError } from '../errors.js';
import { EMPTY_SHA256, EXTRA_CA_LABEL } from '../sandbox/worker-image.js';

/** An extra CA bundle: its digest, and its content when a build needs it. */
export interface ExtraCa {
  sha256: string;
  content: () => Promise<string>;
}

/** An extra CA bundle from a file: read once (it is small), named by its digest. */
export async function caOfFile(file: string): Promise<ExtraCa> {
  const text = await readFile(file, 'utf8').catch((error: unknown) => {
    throw new UserError(
      'config_invalid',
      `sandbox.extraCaCert: cannot read ${file}: ${(error as Error).message}`,
    );
  });
  return { sha256: createHash('sha256').update(text).digest('hex'), content: async () => text };
}

/**
 * The extra CA bundle the worker image was built with, named by its label (no container needed); its content
 * is read from the image only when a build asks for it. Null when it trusts none.
 */
export async function caOfImage(
  docker: Docker,
  image: string,
  read: () => Promise<string>,
): Promise<ExtraCa | null> {
  const labels = (await docker.getImage(image).inspect()).Config?.Labels ?? {};
  const sha256 = labels[EXTRA_CA_LABEL];
  if (!sha256 || sha256 === EMPTY_SHA256) return null;
  let content: Promise<string> | null = null;
  return { sha256, content: () => (content ??= read()) };
}
