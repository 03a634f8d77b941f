/**
 * `verify`: the recorded DoD and criteria checks run again on the branch's current head, in a fresh sandbox
 * made as a task's is (same image resolution, set-up and gateway, no worker), then compared with the evidence.
 * The commands come from the evidence note, which only host git writes; they run inside the sandbox only, under
 * the same time limits as a task's checks. Nothing of the run is kept: sandbox, worktree, branch and run folder
 * go (src/parallel/combined-sandbox.ts).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Config, DodCheck } from '../config/schema.js';
import { startDockerSide } from '../compose/docker-side.js';
import type { HostDocker } from '../compose/task-host.js';
import type { AcceptanceCriterion } from '../core/types.js';
import { startTaskGateway } from '../gateway/task-gateway.js';
import type { Redaction } from '../notes/redact.js';
import { combinedCheck } from '../parallel/combined-sandbox.js';
import { taskLayout } from '../workspace/layout.js';
import { compareEvidence, type VerifyReport } from './compare-evidence.js';
import type { EvidenceRecord } from './evidence-record.js';
import { findEvidence } from './find-evidence.js';
import { resolveVerifyTarget } from './verify-target.js';

/** A DoD check's time limit when the configuration has no check of that name and command (the config's default). */
const DEFAULT_CHECK_TIMEOUT_MS = 600_000;

export interface VerifyInput {
  repoRoot: string;
  /** A task ID, a local branch or a remote branch. */
  argument: string;
  config: Config;
  env: NodeJS.ProcessEnv;
  redaction: Redaction;
  docker: () => Promise<HostDocker>;
  onNotice?: (line: string) => void;
  signal?: AbortSignal;
}

export interface VerifyResult {
  branch: string;
  /** The branch's head: what the checks ran on. */
  headSha: string;
  /** The commit the evidence is on. */
  evidenceHead: string;
  /** The branch moved since the evidence was recorded. */
  moved: boolean;
  evidence: EvidenceRecord;
  /** The image the checks ran in now. */
  image: string;
  report: VerifyReport;
  /** From the sandbox's creation to the last check's end. */
  durationMs: number;
  notices: string[];
}

/** Finds the evidence, runs its checks again on the branch's head and compares. */
export async function runVerify(input: VerifyInput): Promise<VerifyResult> {
  const { repoRoot, config, env } = input;
  const notice = (line: string) => {
    notices.push(line);
    input.onNotice?.(line);
  };
  const notices: string[] = [];
  // A pull/merge request URL is read through the forge with delivery's settings (its API, its remote).
  const target = await resolveVerifyTarget(repoRoot, input.argument, env, {
    remote: config.deliver.remote,
    ...(config.deliver.apiUrl ? { apiUrl: config.deliver.apiUrl } : {}),
    ...(config.deliver.forge !== 'auto' ? { forge: config.deliver.forge } : {}),
  });
  for (const line of target.notices) notice(line);
  const found = await findEvidence(repoRoot, target);
  const { evidence } = found;
  const moved = found.commit !== target.headSha;
  if (moved)
    notice(
      `the branch moved since the evidence was recorded (${found.commit.slice(0, 12)} → ${target.headSha.slice(0, 12)}): verifying ${target.headSha.slice(0, 12)} against the recorded checks`,
    );
  const engine = await input.docker();
  const { image, setup, containerRuntime } = await startDockerSide(
    engine.docker,
    engine.runtime,
    { config, env, repoRoot },
    notice,
  );
  if (evidence.image && evidence.image !== image)
    notice(`the task's checks ran in image ${evidence.image}; this run uses ${image}`);
  const verifyConfig = withRecordedDod(config, evidence);
  const criteria = recordedCriteria(evidence);
  const gateway = await startTaskGateway({ config, env, repoRoot, redaction: input.redaction });
  const taskId = `verify-${randomBytes(6).toString('hex')}`;
  // A reviewer's clone had no agent-runner state before: it has none after (the check's own bookkeeping goes).
  const stateDir = taskLayout(repoRoot, taskId).stateDir;
  const hadState = existsSync(stateDir);
  const checks = verifyConfig.dod.checks?.length ?? 0;
  notice(
    `running ${checks} DoD check(s) and ${criteria.length} criterion check(s) of task ${evidence.taskId} in a fresh sandbox on ${target.headSha.slice(0, 12)}`,
  );
  const startedAt = Date.now();
  try {
    const check = await combinedCheck({
      config: verifyConfig,
      repoRoot,
      runtime: engine.runtime,
      gateway,
      image,
      setup,
      taskId,
      headSha: target.headSha,
      label: 'verify',
      criteria: criteria.length > 0 ? [{ subtask: 'verify', criteria }] : [],
      dodSkipped: false,
      ...(input.signal ? { signal: input.signal } : {}),
      containerRuntime,
    });
    return {
      branch: target.branch,
      headSha: target.headSha,
      evidenceHead: found.commit,
      moved,
      evidence,
      image,
      report: compareEvidence(evidence, { dod: check.dod, criteria: check.criteria ?? [] }),
      durationMs: Date.now() - startedAt,
      notices,
    };
  } finally {
    await gateway.close().catch(() => undefined);
    if (!hadState) await rm(stateDir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The configuration with the recorded DoD commands as its checks (the repository's own list is not what is
 * verified): each keeps the time limit the configuration gives a check of that name and command, else the
 * default; a check recorded as skipped is not run.
 */
export function withRecordedDod(config: Config, evidence: Pick<EvidenceRecord, 'dod'>): Config {
  const configured = config.dod.checks ?? [];
  const checks: DodCheck[] = (evidence.dod?.results ?? [])
    .filter((result) => result.status !== 'skipped')
    .map((result) => ({
      name: result.name,
      command: result.command,
      timeout:
        configured.find((check) => check.name === result.name && check.command === result.command)?.timeout ??
        DEFAULT_CHECK_TIMEOUT_MS,
    }));
  return { ...config, dod: { ...config.dod, checks, skip: false } };
}

/** The recorded criteria that have a check, as the plan gave them. */
export function recordedCriteria(evidence: Pick<EvidenceRecord, 'criteria'>): AcceptanceCriterion[] {
  return evidence.criteria.flatMap((criterion) =>
    criterion.check
      ? [
          {
            id: criterion.id,
            description: criterion.description,
            type: criterion.type,
            critical: criterion.critical,
            check: criterion.check,
          },
        ]
      : [],
  );
}
