/**
 * Relative links and anchors of Markdown pages, read with a real Markdown parser (marked's lexer: links in
 * tables, lists and reference definitions included) and heading anchors made the way GitHub makes them
 * (github-slugger: lower case, punctuation dropped, `-1` for a repeated heading).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import { marked, type Token } from 'marked';

/** A link that does not resolve: where it is and why. */
export interface BrokenLink {
  file: string;
  href: string;
  problem: string;
}

/** Every token below `tokens`, depth first (tables' cells and lists' items included). */
function* allTokens(value: unknown): Generator<Token> {
  if (Array.isArray(value)) {
    for (const item of value) yield* allTokens(item);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const token = value as Token & Record<string, unknown>;
  if (typeof token.type === 'string') yield token;
  for (const key of ['tokens', 'items', 'header', 'rows'] as const)
    if (key in token) yield* allTokens(token[key]);
}

/** The text a heading shows (code spans without their backticks, links by their text). */
function plainText(tokens: readonly Token[] | undefined): string {
  return (tokens ?? [])
    .map((token) => {
      const inner = (token as { tokens?: Token[] }).tokens;
      if (inner) return plainText(inner);
      return 'text' in token ? String(token.text) : '';
    })
    .join('');
}

/** The anchors a page has: its headings' slugs, and the ids of HTML anchors written in it. */
export function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  for (const token of allTokens(marked.lexer(markdown))) {
    if (token.type === 'heading') anchors.add(slugger.slug(plainText(token.tokens)));
    if (token.type === 'html' || token.type === 'tag')
      for (const match of token.raw.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

/** The links and images of a page (their targets as written). */
export function linksOf(markdown: string): string[] {
  const links: string[] = [];
  for (const token of allTokens(marked.lexer(markdown)))
    if (token.type === 'link' || token.type === 'image') links.push(token.href);
  return links;
}

/**
 * The relative links of `file` (absolute path) that do not resolve: a missing file, or an anchor the
 * target page (a Markdown file) does not have. Links to other sites are not followed.
 */
export function brokenLinks(
  file: string,
  read = (target: string) => readFileSync(target, 'utf8'),
): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const anchors = new Map<string, Set<string>>();
  const anchorsAt = (target: string) =>
    anchors.get(target) ?? anchors.set(target, anchorsOf(read(target))).get(target)!;
  for (const href of linksOf(read(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue;
    const [target = '', anchor] = href.split('#', 2);
    const resolved = target ? path.resolve(path.dirname(file), decodeURIComponent(target)) : file;
    if (target && !existsSync(resolved)) {
      broken.push({ file, href, problem: `no such file: ${path.relative(process.cwd(), resolved)}` });
      continue;
    }
    if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) continue;
    if (!anchorsAt(resolved).has(decodeURIComponent(anchor)))
      broken.push({
        file,
        href,
        problem: `no heading with the anchor #${anchor} in ${path.basename(resolved)}`,
      });
  }
  return broken;
}
