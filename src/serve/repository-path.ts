/**
 * Paths an API client names (a PRD, a scripted model, a file or directory of a configuration override), resolved
 * inside the repository the server serves. An API client is not the machine's owner: whatever it names is read
 * by the server and may end up in a Meta-agent prompt, a journal, a note or an image, so it must be a file of
 * the repository, symbolic links included, and never the repository's git directory or a path its `scope.exclude`
 * keeps out of the sandbox (the client could read the answer in the note). The CLI's own flags (`run --prd`) are
 * the owner's and do not come here.
 */
import { constants } from 'node:fs';
import { lstat, open, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../errors.js';

/** A request field that names something the server will not read: answered 400 naming the field. */
export class RequestFieldError extends UserError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('usage', `${field}: ${message}`);
  }
}

export interface RepositoryPathOptions {
  /** The request field, as the 400 names it (`prdPath`, `config.sandbox.dockerfile`). */
  field: string;
  /** What the path must be: a regular file (never a FIFO, device or socket) or a directory. */
  kind: 'file' | 'directory';
  /** Repository-relative paths (with `/`) the server must not read: the repository's `scope.exclude`. */
  refused?: (relativePath: string) => boolean;
}

function inside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The real path of `candidate`: the realpath of its deepest existing ancestor, then the rest as written. */
async function realPathOf(candidate: string): Promise<string> {
  const rest: string[] = [];
  let current = candidate;
  for (;;) {
    try {
      return path.join(await realpath(current), ...rest.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      const parent = path.dirname(current);
      if (parent === current) return candidate;
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * Resolves `given` (relative to the repository root, or absolute) to its real path inside the repository, or
 * throws {@link RequestFieldError}: outside the repository (absolute elsewhere, `..`, a symbolic link of any
 * component leading out), in `.git`, refused by `scope.exclude`, missing, or not of the `kind` asked.
 */
export async function resolveInRepository(
  repoRoot: string,
  given: string,
  options: RepositoryPathOptions,
): Promise<string> {
  const { field } = options;
  if (given.includes('\0')) throw new RequestFieldError(field, 'a path cannot contain a NUL character.');
  const root = await realpath(repoRoot);
  const outside = () =>
    new RequestFieldError(
      field,
      `${JSON.stringify(given)} is outside the repository; the server reads only files of the repository it serves ` +
        '(give a path relative to its root, with no symbolic link leading out of it).',
    );
  const written = path.resolve(repoRoot, given);
  // Lexically first: a path that is written to leave the repository is refused without a look at the disk.
  if (!inside(path.resolve(repoRoot), written) && !inside(root, written)) throw outside();
  const real = await realPathOf(written);
  if (!inside(root, real)) throw outside();
  const relative = path.relative(root, real).split(path.sep).join('/');
  if (relative.split('/').includes('.git'))
    throw new RequestFieldError(field, `${JSON.stringify(given)} is in the repository's git directory.`);
  if (relative !== '' && options.refused?.(relative))
    throw new RequestFieldError(
      field,
      `${JSON.stringify(given)} is excluded by scope.exclude (kept out of the sandbox, so out of the API's reach too).`,
    );
  const info = await lstat(real).catch(() => null);
  if (info === null) throw new RequestFieldError(field, `${JSON.stringify(given)} does not exist.`);
  if (options.kind === 'directory' ? !info.isDirectory() : !info.isFile())
    throw new RequestFieldError(
      field,
      `${JSON.stringify(given)} is not a ${options.kind === 'file' ? 'regular file' : 'directory'}.`,
    );
  return real;
}

/**
 * Reads a file of the repository as {@link resolveInRepository} finds it, at most `maxBytes`: opened without
 * following a link and without blocking (a FIFO swapped in after the check does not hold the server), read only
 * when the opened descriptor is a regular file within the bound, and (where `/proc` tells) only when the
 * descriptor is still inside the repository, so a directory swapped for a link between the check and the open
 * reads nothing.
 */
export async function readRepositoryFile(
  repoRoot: string,
  given: string,
  options: Omit<RepositoryPathOptions, 'kind'> & { maxBytes: number },
): Promise<{ path: string; bytes: Buffer }> {
  const real = await resolveInRepository(repoRoot, given, { ...options, kind: 'file' });
  const { field } = options;
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    () => {
      throw new RequestFieldError(field, `${JSON.stringify(given)} cannot be opened as a regular file.`);
    },
  );
  try {
    const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
    if (opened !== null && !inside(await realpath(repoRoot), opened))
      throw new RequestFieldError(field, `${JSON.stringify(given)} moved out of the repository.`);
    const info = await handle.stat();
    if (!info.isFile()) throw new RequestFieldError(field, `${JSON.stringify(given)} is not a regular file.`);
    if (info.size > options.maxBytes)
      throw new RequestFieldError(
        field,
        `${JSON.stringify(given)} is ${info.size} bytes; the limit is ${options.maxBytes}.`,
      );
    const buffer = Buffer.alloc(options.maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    // It grew after the check (a file being written): refused as over the bound, never read without end.
    if (length > options.maxBytes)
      throw new RequestFieldError(field, `${JSON.stringify(given)} is over ${options.maxBytes} bytes.`);
    return { path: real, bytes: buffer.subarray(0, length) };
  } finally {
    await handle.close();
  }
}

/** Whether `file` (absolute) is inside the repository once every link is resolved (the owner's CLI asks). */
export async function isInRepository(repoRoot: string, file: string): Promise<boolean> {
  const real = await realPathOf(path.resolve(file));
  return inside(await realpath(repoRoot), real) && (await stat(real).catch(() => null)) !== null;
}
