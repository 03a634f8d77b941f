/**
 * The CI templates' structure, read with the `yaml` library: the GitHub Action is a composite action whose
 * every input it uses is declared, every `run:` step names its shell, and no `run:` script interpolates
 * `${{ inputs... }}` or the event (an issue's text would become shell code); the GitLab job runs
 * agent-runner-ci and keeps the note. The package runs them: `prepack` builds, `bin` names the CI script.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Step {
  id?: string;
  name?: string;
  run?: string;
  shell?: string;
  uses?: string;
}
const actionText = read('action.yml');
const action = parse(actionText) as {
  inputs: Record<string, { description?: string; default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
};

describe('action.yml', () => {
  it('decides from the event first, and every later step is skipped when the event asks for nothing', () => {
    const [first, ...rest] = action.runs.steps as (Step & { if?: string })[];
    expect(first?.id).toBe('decide');
    expect(first?.run).toContain('"$GITHUB_ACTION_PATH/scripts/ci/forge-event.mjs"');
    for (const later of rest) expect(later.if, later.name).toContain("steps.decide.outputs.kind != 'ignore'");
  });

  it('is a composite action', () => {
    expect(action.runs.using).toBe('composite');
    expect(action.runs.steps.length).toBeGreaterThan(0);
  });

  it('declares every input it references, and uses every input it declares', () => {
    const referenced = new Set(
      [...actionText.matchAll(/inputs\.([a-z0-9-]+)/g)].map((match) => match[1] ?? ''),
    );
    expect([...referenced].filter((name) => !(name in action.inputs))).toEqual([]);
    expect(Object.keys(action.inputs).filter((name) => !referenced.has(name))).toEqual([]);
    for (const [name, input] of Object.entries(action.inputs))
      expect(input.description, `inputs.${name}`).toBeTruthy();
  });

  it('gives every run step a shell and passes inputs to scripts through env only', () => {
    for (const step of action.runs.steps) {
      expect(Boolean(step.run) !== Boolean(step.uses), step.name).toBe(true);
      if (!step.run) continue;
      expect(step.shell, step.name).toBe('bash');
      expect(step.run, step.name).not.toMatch(/\$\{\{/);
    }
  });

  it('takes its outputs from the decide and run steps, and the step ids it refers to exist', () => {
    const ids = new Set(action.runs.steps.map((step) => step.id).filter(Boolean));
    for (const match of actionText.matchAll(/steps\.([a-z0-9-]+)\./g)) expect(ids).toContain(match[1]);
    for (const output of Object.values(action.outputs))
      expect(output.value).toMatch(/steps\.(run|decide)\.outputs\./);
  });

  it('runs agent-runner-ci with every flag the script reads', () => {
    const run = action.runs.steps.find((step) => step.id === 'run')?.run ?? '';
    const script = read('scripts/ci/agent-runner-ci.mjs');
    for (const flag of run.matchAll(/\(?(--[a-z-]+)/g))
      if (flag[1] !== '--') expect(script).toMatch(new RegExp(`\\s'?${flag[1]?.slice(2)}'?: \\{ type:`));
    expect(run).toMatch(/agent-runner-ci /);
  });
});

describe('templates/ci/gitlab-ci.yml', () => {
  const gitlab = parse(read('templates/ci/gitlab-ci.yml')) as Record<
    string,
    { script?: string[]; artifacts?: { paths?: string[]; when?: string }; services?: unknown[] }
  >;
  const job = gitlab['.agent-runner'];

  it('is a hidden job to extend that runs agent-runner-ci and keeps .agent-runner/ always', () => {
    expect(job).toBeDefined();
    expect(job?.script?.join('\n')).toMatch(/agent-runner-ci /);
    expect(job?.artifacts?.paths).toContain('.agent-runner/');
    expect(job?.artifacts?.when).toBe('always');
  });
});

describe('package.json', () => {
  const manifest = JSON.parse(read('package.json')) as {
    scripts: Record<string, string>;
    bin: Record<string, string>;
    files: string[];
  };

  it('builds before packing and installs both commands', () => {
    expect(manifest.scripts.prepack).toBe('npm run build');
    expect(manifest.bin).toEqual({
      'agent-runner': 'bin/agent-runner.js',
      'agent-runner-ci': 'scripts/ci/agent-runner-ci.mjs',
    });
    expect(manifest.files).toContain('scripts/ci/agent-runner-ci.mjs');
  });
});
