/**
 * Path patterns for scope rules, with exactly the meaning of `.gitignore` (the `ignore` package, the matcher
 * eslint and many others use, implements it): paths are relative to the repository root with `/`; a pattern
 * without a slash (other than a trailing one) matches a name at any depth (`*.pem`, `.env`); a leading `/`
 * anchors it to the root; `**` spans directories; a trailing `/` matches directories only; a pattern that
 * matches a directory covers everything below it; `!pattern` re-includes what an earlier pattern matched,
 * except below a directory that is itself matched (git's own rule). No brace expansion: `.gitignore` has none.
 */
import ignore, { type Ignore } from 'ignore';

/** A compiled pattern list: `matches(path)` is true when the list, read as a `.gitignore`, ignores the path. */
export interface PathGlob {
  readonly pattern: string;
  matches(relativePath: string): boolean;
}

/** `./a/b` and `/a/b` are `a/b`; `''` and `.` (the root itself) are never matched. */
function normalize(relativePath: string): string | null {
  const trimmed = relativePath.replace(/^(?:\.\/)+/, '').replace(/^\/+/, '');
  return trimmed === '' || trimmed === '.' ? null : trimmed;
}

/**
 * Compiles the patterns once; every later `matches` reuses the compiled rules (and the matcher's cache of
 * parent directories, so 100k paths of one tree cost one test per directory, not one per path and level).
 */
export function compileGlobs(patterns: readonly string[]): PathGlob {
  const matcher: Ignore = ignore({ allowRelativePaths: true }).add([...patterns]);
  return {
    pattern: patterns.join(', '),
    matches: (relativePath: string) => {
      const normalized = normalize(relativePath);
      return normalized !== null && matcher.ignores(normalized);
    },
  };
}

/** Compiles one pattern (see the module comment for its meaning). */
export function compileGlob(pattern: string): PathGlob {
  return { ...compileGlobs([pattern]), pattern };
}
