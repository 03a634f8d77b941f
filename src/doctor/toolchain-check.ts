/**
 * The checks of a run's start that need no container, as `doctor` shows them: the toolchain the repository
 * declares can be given (the same plan `run` makes before building the task's image: a `go` line or a
 * `requires-python` Debian cannot satisfy fails here with the same message and fix), and which Definition of
 * Done a task would run (configured or detected). Whether each check's program is in the sandbox is the run's
 * preflight, which needs the image.
 */
import type { Config } from '../config/schema.js';
import { detectSystemToolchains, systemLayerPlan } from '../toolchain/system-toolchains.js';
import { resolveDodChecks } from '../workspace/checks/detect-dod-checks.js';
import { resolveSetup } from '../workspace/checks/detect-setup.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';

export async function checkToolchain(config: Config, repoRoot: string): Promise<DoctorCheck> {
  const name = 'Toolchain';
  if (config.sandbox.toolchain === 'image')
    return passed(name, 'the worker image as it is (sandbox.toolchain: image)');
  if (config.sandbox.dockerfile) return passed(name, `the project image from ${config.sandbox.dockerfile}`);
  try {
    const plan = systemLayerPlan(await detectSystemToolchains(repoRoot), config.sandbox.toolchains);
    return passed(
      name,
      plan.layers.length > 0
        ? plan.layers.join('; ')
        : 'no Go, Python or Rust declared (Node and its package manager are resolved by the run)',
    );
  } catch (error) {
    return failed(
      name,
      (error as Error).message,
      'Set the version in agent-runner.yaml (sandbox.toolchains), or give your own toolchain in sandbox.dockerfile.',
    );
  }
}

export async function checkDefinitionOfDone(config: Config, repoRoot: string): Promise<DoctorCheck> {
  const name = 'Definition of Done';
  const resolved = await resolveDodChecks({ checks: config.dod.checks, skip: config.dod.skip }, repoRoot);
  if (resolved.skip) return passed(name, 'skipped (dod.skip)');
  if (resolved.checks.length === 0)
    return passed(
      name,
      "none configured or detected: a task can complete only on its acceptance criteria's own checks (dod.checks)",
    );
  const from =
    resolved.source === 'config' ? 'agent-runner.yaml' : `detected: ${resolved.detectedFrom.join('; ')}`;
  return passed(
    name,
    `${resolved.checks.map((check) => `${check.name}: ${check.command}`).join('; ')} (${from}); baseline ${config.dod.baseline}, red base ${config.dod.redBase}`,
  );
}

/** The set-up a task would run before the worker: `sandbox.setup`, or detected with the file that decided it. */
export async function checkSetup(config: Config, repoRoot: string): Promise<DoctorCheck> {
  const name = 'Set-up';
  const resolved = await resolveSetup(config.sandbox.setup, repoRoot);
  if (resolved.commands.length === 0)
    return passed(
      name,
      resolved.source === 'config'
        ? 'none (sandbox.setup: [])'
        : 'none detected (no lockfile, Python project or go.mod requirement); sandbox.setup adds commands',
    );
  const commands = resolved.commands.map((item) =>
    resolved.source === 'config' ? item.command : `${item.command} (from ${item.detectedFrom})`,
  );
  return passed(
    name,
    `${commands.join('; ')} (${resolved.source === 'config' ? 'agent-runner.yaml sandbox.setup' : 'detected; sandbox.setup overrides it'})`,
  );
}
