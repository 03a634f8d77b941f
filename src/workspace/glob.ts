/**
 * Path globs for scope rules, with gitignore-like meaning so that people's habits carry over:
 * - paths are relative to the repository root, with `/`;
 * - a pattern without `/` (other than a trailing one) matches a name at any depth (`*.pem`, `.env`);
 * - `**` spans directories, `*` and `?` stay inside one name, `[...]` and `{a,b}` work as usual;
 * - a pattern that matches a directory covers everything below it (`docs`, `secrets/**`).
 * Written here (not minimatch) because the rules are small and this keeps the meaning in one place.
 */

function escapeRegExp(character: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(character) ? `\\${character}` : character;
}

function translate(pattern: string): string {
  let out = '';
  let index = 0;
  let braceDepth = 0;
  while (index < pattern.length) {
    const character = pattern[index] as string;
    if (character === '*') {
      if (pattern[index + 1] === '*') {
        const atStart = index === 0 || pattern[index - 1] === '/';
        const next = pattern[index + 2];
        if (atStart && next === '/') {
          out += '(?:.*/)?';
          index += 3;
          continue;
        }
        if (atStart && next === undefined) {
          out += '.*';
          index += 2;
          continue;
        }
        out += '[^/]*';
        index += 2;
        continue;
      }
      out += '[^/]*';
    } else if (character === '?') {
      out += '[^/]';
    } else if (character === '[') {
      const close = pattern.indexOf(']', index + 2);
      if (close === -1) {
        out += '\\[';
      } else {
        let body = pattern.slice(index + 1, close);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        out += `[${body.replace(/\\/g, '\\\\')}]`;
        index = close;
      }
    } else if (character === '{') {
      braceDepth += 1;
      out += '(?:';
    } else if (character === '}' && braceDepth > 0) {
      braceDepth -= 1;
      out += ')';
    } else if (character === ',' && braceDepth > 0) {
      out += '|';
    } else if (character === '\\' && index + 1 < pattern.length) {
      index += 1;
      out += escapeRegExp(pattern[index] as string);
    } else {
      out += escapeRegExp(character);
    }
    index += 1;
  }
  return out;
}

/** A compiled glob: `matches(path)` is true for the path itself or anything below a matched directory. */
export interface PathGlob {
  readonly pattern: string;
  matches(relativePath: string): boolean;
}

/** Compiles one pattern (see the module comment for its meaning). */
export function compileGlob(pattern: string): PathGlob {
  let body = pattern.trim().replace(/^\.\//, '').replace(/^\/+/, '');
  body = body.replace(/\/+$/, '');
  const anchored = body.includes('/');
  const source = `${anchored ? '' : '(?:.*/)?'}${translate(body)}`;
  // Matching the path or one of its ancestor directories: `(/.*)?` after the pattern.
  const regex = new RegExp(`^(?:${source})(?:/.*)?$`, 'u');
  return {
    pattern,
    matches: (relativePath: string) => regex.test(relativePath.replace(/^\.\//, '')),
  };
}

/** A set of patterns; `matches` is true when any of them matches. */
export function compileGlobs(patterns: readonly string[]): PathGlob {
  const globs = patterns.map(compileGlob);
  return {
    pattern: patterns.join(', '),
    matches: (relativePath: string) => globs.some((glob) => glob.matches(relativePath)),
  };
}
