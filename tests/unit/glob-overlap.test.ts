/**
 * Overlap judged on the patterns: every witness is checked against the real `.gitignore` matcher the scopes
 * use (glob.ts), so a witness is a path both patterns really match, not only what the search believes.
 */
import { describe, expect, it } from 'vitest';
import { compileGlob } from '../../src/workspace/scope/glob.js';
import { patternsOverlap } from '../../src/workspace/scope/glob-overlap.js';

function expectOverlap(left: string, right: string): string {
  const witness = patternsOverlap(left, right);
  expect(witness, `${left} ∩ ${right}`).not.toBeNull();
  const path = witness as string;
  // A pattern ending in /** covers what is below the directory, not the directory's own name.
  const matchedBoth = [path, `${path}/x`].some(
    (candidate) => compileGlob(left).matches(candidate) && compileGlob(right).matches(candidate),
  );
  expect(matchedBoth, `${left} ∩ ${right}: witness ${path}`).toBe(true);
  return path;
}

describe('patternsOverlap', () => {
  it('finds paths no file of the base has yet: **/*.md against alpha/** gives alpha/<name>.md', () => {
    expect(expectOverlap('**/*.md', 'alpha/**')).toMatch(/^alpha\/.+\.md$/);
    expectOverlap('*.md', 'alpha/');
    expectOverlap('docs/', 'docs/api/*.md');
    expectOverlap('src/**/test/*.ts', 'src/a/**');
    expectOverlap('/src/a*', 'src/ab/c.ts');
  });

  it('nested and equal patterns overlap; a directory covers what is below it', () => {
    expectOverlap('src/api/**', 'src/api/**');
    expectOverlap('src', 'src/deep/file.ts');
    expectOverlap('package.json', 'package.json');
    expectOverlap('package.json', 'packages/a/package.json');
  });

  it('character classes, ? and * inside a name', () => {
    expect(expectOverlap('[ab]x.ts', '[bc]x.ts')).toBe('bx.ts');
    expectOverlap('a?c.ts', '*c.ts');
    expectOverlap('v*-old.js', '*2-old.js');
    expectOverlap('[!a]*.ts', 'b*');
  });

  it('disjoint patterns do not overlap', () => {
    expect(patternsOverlap('src/a/**', 'src/b/**')).toBeNull();
    expect(patternsOverlap('/*.md', '/*.ts')).toBeNull();
    expect(patternsOverlap('/[ab]x', '/[cd]x')).toBeNull();
    expect(patternsOverlap('/src/*.ts', '/lib/**')).toBeNull();
    expect(patternsOverlap('/a?c', '/abcd')).toBeNull();
    expect(patternsOverlap('/alpha/**', '/beta/*.md')).toBeNull();
    expect(patternsOverlap('/[!a]x', '/ax')).toBeNull();
  });

  it('an unanchored name matches at any depth, so it meets any directory pattern below it', () => {
    // `lib` (no slash) covers src/lib/...; `src` covers everything below src/: both write src/lib/x.
    expect(['src/lib', 'lib/src']).toContain(expectOverlap('src', 'lib'));
    expectOverlap('[ab]x', '[cd]x');
  });

  it('a wildcard name with an extension names files: *.md and *.ts never meet, *.ts and *.test.ts do', () => {
    expect(patternsOverlap('*.md', '*.ts')).toBeNull();
    expect(patternsOverlap('src/**/*.ts', 'src/**/*.js')).toBeNull();
    // Two files named without a slash (at any depth) are two files, not a directory holding the other.
    expect(patternsOverlap('alpha.js', 'beta.js')).toBeNull();
    expect(patternsOverlap('alpha.js', 'test/beta.test.js')).toBeNull();
    expect(expectOverlap('alpha.js', 'lib/**')).toBe('lib/alpha.js');
    // A hidden directory is still a directory.
    expectOverlap('.github', 'ci.yml');
    expect(expectOverlap('src/**/*.ts', '**/*.test.ts')).toMatch(/^src\/.*\.test\.ts$/);
    // A trailing slash says directory: it covers what is below again.
    expectOverlap('*.d/', '*.ts');
  });

  it('a negated pattern takes paths away only: it never makes an overlap', () => {
    expect(patternsOverlap('!src/**', 'src/**')).toBeNull();
  });

  it('is quick on patterns with many stars', () => {
    const started = performance.now();
    expect(patternsOverlap('**/a*b*c*d*e*f*g/**/x*y*z', '**/*g*f*e*d*c*b*a/**/z*y*x')).not.toBeNull();
    expect(performance.now() - started).toBeLessThan(500);
  });
});
