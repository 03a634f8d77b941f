/**
 * The settings every host git call runs with. Much of what host git reads was written by the hostile worker:
 * the trees it checks out and merges into the person's worktrees, the `.gitattributes` in them, the commits it
 * diffs. An attribute can name any filter, diff or merge driver configured in a scope git reads, the person's
 * own included (git-lfs is the common one), and that program would then run on the host with the worker's data.
 * So no call runs a clean, smudge or process filter, a merge driver, a textconv or an external diff, a hook, an
 * fsmonitor or a signing program; links are checked out as plain files and the NTFS/HFS path protections are on.
 *
 * Exceptions: `keepSymlinks` for the sandbox repository's first checkout (the person's own tree, before any
 * worker ran), where the project's links must stay links for the worker and the DoD; and plumbing that never
 * reads attributes or the working tree skips the lookup of configured programs ({@link mayApplyAttributes}).
 */

/** A setting in git's command-line scope: `key` as git names it, `value` as git reads it. */
export type GitSetting = readonly [key: string, value: string];

/** Settings that hold for every call, whatever the repository or the person configured. */
export const HOST_GIT_SETTINGS: readonly GitSetting[] = [
  // No hook of the person's repository (reference-transaction, post-checkout, post-merge, ...) runs.
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.protectNTFS', 'true'],
  ['core.protectHFS', 'true'],
  // A worker's gitlink and .gitmodules never make host git check out or fetch another repository.
  ['submodule.recurse', 'false'],
  // No gpg (or other gpg.program) on worker commits: no signing of replayed commits, no verification either.
  ['commit.gpgSign', 'false'],
  ['merge.verifySignatures', 'false'],
  ['log.showSignature', 'false'],
  // A merge prints no diffstat: nothing of a diff driver is asked for outside the diffs below.
  ['merge.stat', 'false'],
];

/** Checked-out links become plain files holding the link's target: nothing on the host follows one. */
export const LINKS_AS_FILES: GitSetting = ['core.symlinks', 'false'];

/** Subcommands that can print a diff, and the options that keep every diff driver out of it. */
const DIFF_SUBCOMMANDS: ReadonlySet<string> = new Set(['diff', 'log', 'show']);
export const NO_DIFF_PROGRAMS: readonly string[] = ['--no-ext-diff', '--no-textconv'];

/** Options of `git` itself that take a value as the next argument. */
const GLOBAL_OPTIONS_WITH_VALUE: ReadonlySet<string> = new Set(['-c', '-C']);

/** The section names of the configured programs an attribute can name. */
export const FILTER_SECTION = 'filter';
export const MERGE_SECTION = 'merge';

/** What `git config --get-regexp` has to list for {@link configuredPrograms}. */
export const CONFIGURED_PROGRAMS_PATTERN = `^(${FILTER_SECTION}|${MERGE_SECTION})\\.`;

/** Names of the filters and merge drivers configured in the scopes a call reads. */
export interface ConfiguredPrograms {
  filters: string[];
  mergeDrivers: string[];
}

/**
 * The filter and merge driver names in `git config --null --name-only --get-regexp` output: keys of the form
 * `<section>.<name>.<key>`, the name being everything between the first and the last dot.
 */
export function configuredPrograms(names: string): ConfiguredPrograms {
  const filters = new Set<string>();
  const mergeDrivers = new Set<string>();
  for (const key of names.split('\0')) {
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    if (first === -1 || last <= first + 1) continue;
    const section = key.slice(0, first).toLowerCase();
    const name = key.slice(first + 1, last);
    if (section === FILTER_SECTION) filters.add(name);
    else if (section === MERGE_SECTION && key.slice(last + 1).toLowerCase() === 'driver')
      mergeDrivers.add(name);
  }
  return { filters: [...filters], mergeDrivers: [...mergeDrivers] };
}

/**
 * Overrides that make each configured program inert. An empty filter command is git's own "no filter" (the
 * content passes unchanged), and `required=false` keeps git from failing for want of one. A merge driver has no
 * such empty form (an empty command would silently keep our side), so it becomes `false`: a path whose
 * attributes name a configured driver conflicts instead of running it.
 */
export function inertPrograms(programs: ConfiguredPrograms): GitSetting[] {
  return [
    ...programs.filters.flatMap((name): GitSetting[] => [
      [`${FILTER_SECTION}.${name}.clean`, ''],
      [`${FILTER_SECTION}.${name}.smudge`, ''],
      [`${FILTER_SECTION}.${name}.process`, ''],
      [`${FILTER_SECTION}.${name}.required`, 'false'],
    ]),
    ...programs.mergeDrivers.map((name): GitSetting => [`${MERGE_SECTION}.${name}.driver`, 'false']),
  ];
}

/**
 * Settings as git's command-line scope in the environment (GIT_CONFIG_COUNT, _KEY_n, _VALUE_n): any name and
 * value passes unparsed, and git's own child processes (the checkout under `worktree add`, say) inherit them.
 * Later entries win.
 */
export function settingsEnvironment(settings: readonly GitSetting[]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([key, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = key;
    env[`GIT_CONFIG_VALUE_${index}`] = value;
  });
  return env;
}

/** Where the subcommand is in `args` (after git's own options), or -1 when there is none. */
function subcommandIndex(args: readonly string[]): number {
  let index = 0;
  while (index < args.length && (args[index] as string).startsWith('-'))
    index += GLOBAL_OPTIONS_WITH_VALUE.has(args[index] as string) ? 2 : 1;
  return index < args.length ? index : -1;
}

/** `args` with the diff options of {@link NO_DIFF_PROGRAMS} right after a diff-printing subcommand. */
export function withoutDiffPrograms(args: readonly string[]): string[] {
  const index = subcommandIndex(args);
  if (index === -1 || !DIFF_SUBCOMMANDS.has(args[index] as string)) return [...args];
  return [...args.slice(0, index + 1), ...NO_DIFF_PROGRAMS, ...args.slice(index + 1)];
}

/**
 * Plumbing that never reads attributes or the working tree, so no filter or driver can run under it: the
 * per-call lookup of configured programs is skipped for these (it would double the cost of the many small
 * calls of a replay). The settings of {@link HOST_GIT_SETTINGS} still hold for them.
 */
const NO_ATTRIBUTE_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'rev-parse',
  'rev-list',
  'merge-base',
  'update-ref',
  'symbolic-ref',
  'show-ref',
  'for-each-ref',
  'commit-tree',
  'write-tree',
  'ls-tree',
  'pack-objects',
  'branch',
  'init',
  'config',
  'cat-file',
]);
/** Options with which `cat-file` does apply filters or a textconv. */
const CAT_FILE_CONVERSIONS: readonly string[] = ['--filters', '--textconv', '--path'];

/** Whether a call with `args` may apply attributes (then every configured filter and driver is made inert). */
export function mayApplyAttributes(args: readonly string[]): boolean {
  const index = subcommandIndex(args);
  if (index === -1 || !NO_ATTRIBUTE_SUBCOMMANDS.has(args[index] as string)) return true;
  return args.some((arg) => CAT_FILE_CONVERSIONS.some((option) => arg.startsWith(option)));
}
