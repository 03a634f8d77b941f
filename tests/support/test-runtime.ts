/**
 * The OCI runtime the suite's sandboxes run under. The `security-runsc` project (vitest.config.ts) runs the
 * security files with AGENT_RUNNER_RUNTIME=runsc: the CLI reads it like any run does (the harnesses pass
 * process.env on), and the helpers that create a sandbox themselves put it into the spec from here.
 */
import type { ContainerRuntime, SandboxRuntimeChoice } from '../../src/core/records.js';

const named = process.env.AGENT_RUNNER_RUNTIME;

/** `runsc` under the security-runsc project; undefined (the engine's default, runc) otherwise. */
export const TEST_RUNTIME: ContainerRuntime | undefined = named === 'runsc' ? 'runsc' : undefined;

/** True when this run's sandboxes are gVisor's. */
export const UNDER_RUNSC = TEST_RUNTIME === 'runsc';

/** The spec field for a sandbox a test creates itself. */
export const testRuntimeSpec: { runtime?: ContainerRuntime } = TEST_RUNTIME ? { runtime: TEST_RUNTIME } : {};

/** The choice a test hands to a provider, an integration sandbox or a combined check. */
export const testRuntimeChoice: { containerRuntime?: SandboxRuntimeChoice } = TEST_RUNTIME
  ? { containerRuntime: { runtime: TEST_RUNTIME, reason: 'AGENT_RUNNER_RUNTIME in the test environment' } }
  : {};
