/**
 * The workspace adapter: task branch and worktree, the sandbox repository with scope applied, bringing
 * commits back, facts and DoD checks. See docs/isolation.md for what is guaranteed and what it costs.
 */
export { inspectRepository, type RepositoryInfo } from './git/inspect-repository.js';
export {
  prepareTaskWorkspace,
  type PrepareTaskWorkspaceOptions,
  type PreparedWorkspace,
} from './prepare-task-workspace.js';
export {
  syncBack,
  fetchFromSandbox,
  type SyncBackOptions,
  type SyncBackResult,
  type ReplayedCommit,
} from './sandbox-repo/sync-back.js';
export {
  collectFacts,
  type CollectFactsOptions,
  type WorkspaceObservation,
  type ChangedFile,
  type ScopeViolation,
  type WorkerOutcome,
} from './task-facts.js';
export {
  runDodChecks,
  dodIsEvidenceOfDone,
  type DodResult,
  type DodStatus,
  type RunDodChecksOptions,
} from './checks/dod-checks.js';
export {
  detectDodChecks,
  resolveDodChecks,
  type DetectedDodChecks,
  type ResolvedDodChecks,
} from './checks/detect-dod-checks.js';
export { scopeStatement } from './scope/scope-statement.js';
export {
  compileScope,
  defaultScope,
  mergeScope,
  type Scope,
  type ScopeMatcher,
  type PathAccess,
} from './scope/scope.js';
export { taskLayout, SANDBOX_WORKDIR, sandboxGitEnvironment, type TaskLayout } from './layout.js';
export type { UserIds } from './scope/permissions.js';
export { removeTaskSandbox } from './sandbox-repo/remove-task-sandbox.js';
