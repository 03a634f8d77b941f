/**
 * Whether two scope patterns (`.gitignore` meaning, see glob.ts) can match the same path, judged on the
 * patterns themselves rather than on the files that happen to exist: `**\/*.md` and `alpha/**` overlap on a base
 * without `alpha/` (their witness is `alpha/x.md`), `src/a/**` and `src/b/**` never do.
 *
 * A pattern is read as a list of path segments, each a small glob (`*`, `?`, `[...]`, literals), where `**`
 * spans any number of whole segments; an unanchored pattern (no slash but a trailing one) starts with `**`, and
 * every pattern also covers everything below what it matches (a matched directory covers its contents). Two
 * such lists intersect when one path can be walked through both at once until one of them ends (the rest of
 * the path is then free): a search over pairs of positions, each step one segment that both segment globs
 * accept (itself a search over pairs of positions in the two segment globs, one character at a time).
 *
 * Negated patterns (`!x`) are not read: they only take paths away, so leaving them out can say "overlap" where
 * the scopes do not, never the other way round. Pure; the scheduler is its user.
 */

/** One token of a segment glob. */
type Token =
  | { kind: 'char'; char: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; test: (char: string) => boolean; sample: string[] };

type Segment = { kind: 'globstar' } | { kind: 'glob'; tokens: Token[] };

/** Characters tried where a token admits many: a witness needs one that every constraint accepts. */
const FILLERS = ['x', 'y', 'z', 'q', '0', '_', '-'];

function parseClass(body: string): Token {
  const negated = body.startsWith('!') || body.startsWith('^');
  const inner = negated ? body.slice(1) : body;
  const ranges: [string, string][] = [];
  for (let index = 0; index < inner.length; index += 1) {
    let from = inner[index] as string;
    if (from === '\\' && index + 1 < inner.length) from = inner[(index += 1)] as string;
    if (inner[index + 1] === '-' && index + 2 < inner.length) {
      ranges.push([from, inner[index + 2] as string]);
      index += 2;
    } else ranges.push([from, from]);
  }
  const inRanges = (char: string) => ranges.some(([from, to]) => char >= from && char <= to);
  return {
    kind: 'class',
    negated,
    test: (char) => char !== '/' && inRanges(char) !== negated,
    sample: ranges.map(([from]) => from),
  };
}

function parseSegment(text: string): Segment {
  if (text === '**') return { kind: 'globstar' };
  const tokens: Token[] = [];
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index] as string;
    if (char === '\\' && index + 1 < text.length)
      tokens.push({ kind: 'char', char: text[(index += 1)] as string });
    else if (char === '*') {
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (char === '?') tokens.push({ kind: 'any' });
    else if (char === '[' && text.indexOf(']', index + 2) > index) {
      const end = text.indexOf(']', index + 2);
      tokens.push(parseClass(text.slice(index + 1, end)));
      index = end;
    } else tokens.push({ kind: 'char', char });
  }
  return { kind: 'glob', tokens };
}

/** A pattern read as segments, and whether it also stands for everything below what it matches. */
interface ReadPattern {
  segments: Segment[];
  coversBelow: boolean;
}

/**
 * The segments of a pattern, or null for a negated or empty one. A last segment with an extension (`*.md`,
 * `test_*.py`, `alpha.js`) is read as naming files only: git would also let it match a directory called `x.md`
 * and everything in it, which no scope means, and reading it so would make every two file patterns overlap
 * (`alpha.js` and `beta.js`, both at any depth, through `alpha.js/beta.js`). A trailing slash says directory.
 */
export function readPattern(pattern: string): ReadPattern | null {
  let text = pattern.trim();
  if (text === '' || text.startsWith('#') || text.startsWith('!')) return null;
  if (text.startsWith('\\!') || text.startsWith('\\#')) text = text.slice(1);
  const directory = /\/$/.test(text);
  text = text.replace(/\/+$/, '');
  const anchored = text.includes('/');
  text = text.replace(/^\/+/, '');
  const parts = text.split('/').filter((part) => part !== '');
  if (parts.length === 0) return null;
  const last = parts.at(-1) as string;
  // `name.ext` (not a hidden `.github`): a file; git would also let it name a directory `x.md` and its contents.
  const namesFiles = last !== '**' && /[^/.]\.[\w-]+$/.test(last);
  return {
    segments: [...(anchored ? [] : ['**']), ...parts].map(parseSegment),
    coversBelow: directory || !namesFiles,
  };
}

function tokenAccepts(token: Token, char: string): boolean {
  switch (token.kind) {
    case 'char':
      return token.char === char;
    case 'any':
    case 'star':
      return char !== '/';
    case 'class':
      return token.test(char);
  }
}

function candidates(tokens: (Token | undefined)[]): string[] {
  const found = new Set<string>();
  for (const token of tokens) {
    if (token?.kind === 'char') found.add(token.char);
    if (token?.kind === 'class') for (const char of token.sample) found.add(char);
  }
  for (const char of FILLERS) found.add(char);
  return [...found];
}

/** A non-empty name both segment globs match, or null. */
function segmentWitness(left: Token[], right: Token[]): string | null {
  // States are positions in both token lists; a star may stay (consume) or be passed (epsilon).
  const closure = (i: number, j: number): [number, number][] => {
    const out: [number, number][] = [];
    const seen = new Set<string>();
    const stack: [number, number][] = [[i, j]];
    while (stack.length > 0) {
      const [a, b] = stack.pop() as [number, number];
      const key = `${a},${b}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push([a, b]);
      if (left[a]?.kind === 'star') stack.push([a + 1, b]);
      if (right[b]?.kind === 'star') stack.push([a, b + 1]);
    }
    return out;
  };
  const seen = new Map<string, string>();
  let frontier: { state: [number, number]; text: string }[] = closure(0, 0).map((state) => ({
    state,
    text: '',
  }));
  for (const { state } of frontier) seen.set(`${state[0]},${state[1]}`, '');
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const { state, text } of frontier) {
      const [a, b] = state;
      if (a === left.length && b === right.length && text !== '') return text;
      const tokenA = left[a];
      const tokenB = right[b];
      if (!tokenA || !tokenB) continue;
      for (const char of candidates([tokenA, tokenB])) {
        if (!tokenAccepts(tokenA, char) || !tokenAccepts(tokenB, char)) continue;
        const after: [number, number] = [
          tokenA.kind === 'star' ? a : a + 1,
          tokenB.kind === 'star' ? b : b + 1,
        ];
        for (const reached of closure(...after)) {
          const key = `${reached[0]},${reached[1]}`;
          if (seen.has(key)) continue;
          seen.set(key, text + char);
          next.push({ state: reached, text: text + char });
        }
      }
    }
    frontier = next;
  }
  return null;
}

/** Some name a segment matches, for the free part of a witness after one pattern has ended. */
function anyName(segment: Segment): string | null {
  if (segment.kind === 'globstar') return null;
  // A name that starts like a word reads better than the shortest one (`x.md`, not `.md`).
  return (
    segmentWitness(segment.tokens, [{ kind: 'char', char: 'x' }, { kind: 'star' }]) ??
    segmentWitness(segment.tokens, [{ kind: 'star' }])
  );
}

/**
 * A path both patterns match, or null when no path can (within what {@link readPattern} reads: a negated
 * pattern never overlaps). The witness is a real example, shown to the person in the scheduler's wait reason.
 */
export function patternsOverlap(leftPattern: string, rightPattern: string): string | null {
  const leftRead = readPattern(leftPattern);
  const rightRead = readPattern(rightPattern);
  if (!leftRead || !rightRead) return null;
  const left = leftRead.segments;
  const right = rightRead.segments;
  const seen = new Set<string>();
  let best: string[] | null = null;
  // Shortest witness first: passing a `**` costs no segment, so it goes to the front of the queue.
  const queue: { i: number; j: number; path: string[] }[] = [{ i: 0, j: 0, path: [] }];
  while (queue.length > 0) {
    const { i, j, path } = queue.shift() as { i: number; j: number; path: string[] };
    // Paths come out of the queue shortest first: none after this one can beat what was found.
    if (best && path.length >= best.length) break;
    const key = `${i},${j}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const leftEnded = i === left.length;
    const rightEnded = j === right.length;
    if (
      (leftEnded && rightEnded) ||
      (leftEnded && leftRead.coversBelow) ||
      (rightEnded && rightRead.coversBelow)
    ) {
      // One pattern has ended where it covers what is below: the other's rest is any path it matches.
      const rest = (leftEnded ? right.slice(j) : left.slice(i)).map(anyName);
      const tail = rest.filter((name): name is string => name !== null);
      const found = [...path, ...tail, ...(path.length + tail.length === 0 ? ['x'] : [])];
      if (!best || found.length < best.length) best = found;
      continue;
    }
    if (leftEnded || rightEnded) {
      // Ended on a file name: the path ends here too, so only the other's `**` may still pass (as nothing).
      const other = leftEnded ? right[j] : left[i];
      if (other?.kind === 'globstar')
        queue.unshift(leftEnded ? { i, j: j + 1, path } : { i: i + 1, j, path });
      continue;
    }
    const a = left[i] as Segment;
    const b = right[j] as Segment;
    if (a.kind === 'globstar') queue.unshift({ i: i + 1, j, path });
    if (b.kind === 'globstar') queue.unshift({ i, j: j + 1, path });
    const name =
      a.kind === 'globstar' && b.kind === 'globstar'
        ? 'x'
        : a.kind === 'globstar'
          ? anyName(b)
          : b.kind === 'globstar'
            ? anyName(a)
            : segmentWitness(a.tokens, b.tokens);
    if (name === null) continue;
    queue.push({
      i: a.kind === 'globstar' ? i : i + 1,
      j: b.kind === 'globstar' ? j : j + 1,
      path: [...path, name],
    });
  }
  return best ? (best as string[]).join('/') : null;
}
