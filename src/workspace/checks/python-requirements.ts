/**
 * What a Python project declares it needs installed, read from its files (requirements files, pyproject.toml),
 * and whether an image's Python already has it. pip's requirements syntax around the PEP 508 lines (options,
 * includes, editable installs, hashes) is read here; each PEP 508 line is parsed by `pip-requirements-js`,
 * versions compared by `@renovatebot/pep440`. What cannot be judged without pip is kept apart as unchecked.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { satisfies, valid } from '@renovatebot/pep440';
import { parsePipRequirementsLine, type EnvironmentMarker } from 'pip-requirements-js';
import { normalizePythonName, type ImagePython } from '../../toolchain/image-python.js';

/** One requirement a set-up would install: `pytest>=7` from `requirements-dev.txt`. */
export interface PythonRequirement {
  name: string;
  /** PEP 440 specifiers joined by commas (`>=7,<9`); '' for any version. */
  specifier: string;
  marker?: EnvironmentMarker;
  /** Where it was declared: a file, or the rule that added it. */
  from: string;
}

/** What a project declares: requirements to judge, lines only pip can judge, and whether it installs itself. */
export interface DeclaredRequirements {
  requirements: PythonRequirement[];
  /** Declarations that cannot be judged from the files (`setup.py`'s install_requires, a URL, a local path). */
  unchecked: string[];
}

/** How deep `-r` includes are followed. */
const MAX_INCLUDE_DEPTH = 5;

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** The logical lines of a requirements file: continuations joined, comments and blank lines dropped. */
function logicalLines(text: string): string[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line.length > 0);
}

/** The project itself (`.`, `.[test]`, `-e .`): installed by the set-up's `pip install -e .`, nothing to judge. */
function isProjectItself(target: string): boolean {
  return /^\.\/?(\[[^\]]*\])?$/.test(target);
}

/** One PEP 508 line (`name[extras] specifiers ; marker`), or null when it names no package by name. */
export function parseRequirement(line: string, from: string): PythonRequirement | null {
  try {
    const parsed = parsePipRequirementsLine(line);
    if (parsed?.type !== 'ProjectName') return null;
    return {
      name: parsed.name,
      specifier: (parsed.versionSpec ?? []).map((spec) => `${spec.operator}${spec.version}`).join(','),
      ...(parsed.environmentMarkerTree ? { marker: parsed.environmentMarkerTree } : {}),
      from,
    };
  } catch {
    return null;
  }
}

/** Reads a requirements file of `root` the way pip does, following `-r` includes inside the repository. */
export async function readRequirementsFile(
  root: string,
  file: string,
  into: DeclaredRequirements,
  depth = 0,
): Promise<void> {
  const text = await readText(path.join(root, file));
  if (text === null) {
    into.unchecked.push(`${file} (not readable)`);
    return;
  }
  for (const line of logicalLines(text)) {
    const option = /^(-[a-zA-Z]|--[a-z-]+)(?:[=\s]\s*(.*))?$/.exec(line);
    if (option) {
      const [, flag, value = ''] = option;
      if (flag === '-r' || flag === '--requirement') {
        const included = path.posix.normalize(path.posix.join(path.posix.dirname(file), value));
        if (depth < MAX_INCLUDE_DEPTH && !included.startsWith('..') && !path.posix.isAbsolute(included))
          await readRequirementsFile(root, included, into, depth + 1);
        else into.unchecked.push(`${file}: ${line}`);
      } else if ((flag === '-e' || flag === '--editable') && !isProjectItself(value))
        into.unchecked.push(`${file}: ${line}`);
      // Other options (-c, --index-url, --find-links, --pre, ...) name no package.
      continue;
    }
    if (isProjectItself(line)) continue;
    // Per-requirement options (--hash=..., --config-settings) follow the requirement.
    const requirement = parseRequirement(line.split(/\s--/)[0] as string, file);
    if (requirement) into.requirements.push(requirement);
    else into.unchecked.push(`${file}: ${line}`);
  }
}

/** Evaluates a PEP 508 marker; undefined when it compares something unknown (then the requirement counts). */
export function markerHolds(marker: EnvironmentMarker, values: Record<string, string>): boolean | undefined {
  if ('right' in marker && (marker.operator === 'and' || marker.operator === 'or')) {
    const left = markerHolds(marker.left as EnvironmentMarker, values);
    const right = markerHolds(marker.right as EnvironmentMarker, values);
    if (marker.operator === 'and')
      return left === false || right === false ? false : left && right ? true : undefined;
    return left === true || right === true ? true : left === false && right === false ? false : undefined;
  }
  const side = (value: unknown): string | undefined => {
    if (typeof value !== 'string') return undefined;
    if (/^(["']).*\1$/s.test(value)) return value.slice(1, -1);
    // `extra` is empty outside an extra's own requirements: `extra == "test"` does not hold here.
    return value === 'extra' ? '' : values[value];
  };
  const left = side(marker.left);
  const right = side(marker.right);
  if (left === undefined || right === undefined) return undefined;
  const operator = marker.operator as string;
  if (operator === 'in') return right.includes(left);
  if (operator === 'not in') return !right.includes(left);
  if (valid(left) && valid(right)) {
    try {
      return satisfies(left, `${operator}${right}`);
    } catch {
      return undefined;
    }
  }
  if (operator === '==' || operator === '===') return left === right;
  if (operator === '!=') return left !== right;
  return undefined;
}

/** How `requirements` stand in an image's Python. */
export interface RequirementsJudged {
  /** Installed at a version the specifier allows: `pytest 7.2.1 (requirements-dev.txt: pytest>=7)`. */
  met: string[];
  /** Absent, or at a version the specifier refuses: `requests>=2 (requirements.txt; not installed)`. */
  unmet: string[];
  /** Present but its specifier could not be compared. */
  unchecked: string[];
}

function label(requirement: PythonRequirement): string {
  return `${requirement.name}${requirement.specifier}`;
}

/** Judges each requirement against the image's installed distributions. Pure. */
export function judgeRequirements(
  requirements: readonly PythonRequirement[],
  image: ImagePython,
): RequirementsJudged {
  const judged: RequirementsJudged = { met: [], unmet: [], unchecked: [] };
  for (const requirement of requirements) {
    if (requirement.marker && markerHolds(requirement.marker, image.markers) === false) continue;
    const installed = image.distributions[normalizePythonName(requirement.name)];
    const where = `${requirement.from}: ${label(requirement)}`;
    if (installed === undefined) {
      judged.unmet.push(`${label(requirement)} (${requirement.from}; not installed)`);
      continue;
    }
    let allowed: boolean | undefined = true;
    if (requirement.specifier)
      try {
        allowed = satisfies(installed, requirement.specifier) ? true : valid(installed) ? false : undefined;
      } catch {
        allowed = undefined;
      }
    if (allowed === true) judged.met.push(`${requirement.name} ${installed} (${where})`);
    else if (allowed === false)
      judged.unmet.push(`${label(requirement)} (${requirement.from}; ${installed} installed)`);
    else judged.unchecked.push(`${where} (${installed} installed)`);
  }
  return judged;
}
