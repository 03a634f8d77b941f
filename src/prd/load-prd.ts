/**
 * Reading the PRD with clear errors: missing, empty, binary, or over the size limit.
 */
import { readFile, stat } from 'node:fs/promises';
import { UserError } from '../errors.js';

/** PRDs larger than this are refused: they would not fit the Meta-agent's prompt budget anyway. */
export const MAX_PRD_BYTES = 256 * 1024;

export async function loadPrd(file: string): Promise<string> {
  let size: number;
  try {
    const info = await stat(file);
    if (!info.isFile())
      throw new UserError(
        'prd_invalid',
        `The PRD ${file} is not a file. Pass a Markdown file: --prd spec.md`,
      );
    size = info.size;
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError(
      'prd_invalid',
      `The PRD ${file} does not exist. Pass an existing Markdown file: --prd spec.md`,
      {
        cause: error,
      },
    );
  }
  if (size > MAX_PRD_BYTES) {
    throw new UserError(
      'prd_invalid',
      `The PRD ${file} is ${Math.round(size / 1024)} KiB; the limit is ${MAX_PRD_BYTES / 1024} KiB. Split it into smaller tasks or link to details instead of inlining them.`,
    );
  }
  return prdFromBytes(await readFile(file), file);
}

/** The PRD's text from its bytes (read by the caller, within {@link MAX_PRD_BYTES}): refused when binary or empty. */
export function prdFromBytes(bytes: Buffer, file: string): string {
  if (bytes.includes(0)) {
    throw new UserError(
      'prd_invalid',
      `The PRD ${file} looks binary (it contains NUL bytes). Pass a text (Markdown) file.`,
    );
  }
  const text = bytes.toString('utf8');
  if (!text.trim())
    throw new UserError('prd_invalid', `The PRD ${file} is empty. Write what the task should achieve in it.`);
  return text;
}
