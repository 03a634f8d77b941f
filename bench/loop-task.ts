/**
 * One whole task through the real loop: TaskRunner, the real Meta-agent (prompt assembly within
 * `meta.promptBudgetTokens`, constrained-YAML parsing, its call log on disk) over a zero-latency
 * ScriptedMetaModel, the real pattern library, event journal, note writer and memory reader, and the no-op
 * ports of noop-ports.ts. Iterations 1..N-1 are assessed "not complete" with a failing DoD; iteration N
 * passes, so the task ends COMPLETE after exactly N worker runs and 1 + 2N Meta-agent calls.
 */
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { systemClock } from '../src/app.js';
import { workerPromptTemplate } from '../src/patterns/worker-prompt.js';
import type { Config } from '../src/config/schema.js';
import type {
  AssessmentEvidence,
  MetaAgentPort,
  MetaView,
  PreparedTask,
  SandboxRuntime,
  SandboxSpec,
} from '../src/core/ports.js';
import { TaskRunner } from '../src/core/task-runner.js';
import type { TaskSummary } from '../src/core/types.js';
import { createMetaAgent } from '../src/meta/meta-agent.js';
import { MetaAgentPortAdapter } from '../src/meta/meta-agent-port.js';
import type { MetaMessage } from '../src/meta/meta-model.js';
import { estimateTokens } from '../src/meta/prompt-context.js';
import { ScriptedMetaModel } from '../src/meta/scripted-meta-model.js';
import { EventJournal } from '../src/notes/event-journal.js';
import { readNoteMemory } from '../src/notes/memory.js';
import { writeTaskNote } from '../src/notes/note-writer.js';
import { createRedactor } from '../src/notes/redact.js';
import { loadPatternLibrary } from '../src/patterns/pattern-library.js';
import { taskLayout } from '../src/workspace/layout.js';
import { assessmentReply, planReply, runWorkerReply } from '../tests/support/meta-replies.js';
import { ExecWorkspace, NoopWorker, RuntimeSandboxes } from './noop-ports.js';

const CRITERIA = [
  { id: 'AC-1', description: 'slugify("Hello World") returns "hello-world"' },
  { id: 'AC-2', description: 'runs of separators collapse to one dash' },
  { id: 'AC-3', description: 'the existing tests still pass' },
];

/** A PRD of ordinary size (~1.8 KB). */
export const BENCH_PRD = [
  '# Add slugify',
  '',
  'Add a `slugify(text)` function to `src/slugify.ts` and export it from `src/index.ts`.',
  '',
  ...Array.from(
    { length: 14 },
    (_, line) =>
      `- Requirement ${line + 1}: separators, case and unicode are handled as described in section ${line + 1}.`,
  ),
  '',
  'Tests go to `tests/slugify.test.ts`; `npm test` must pass.',
].join('\n');

/** The worker instruction the scripted Meta-agent writes each time (~1.3 KB). */
function workerInstruction(run: number): string {
  return [
    `Iteration ${run}. Make the failing slugify tests pass.`,
    ...Array.from(
      { length: 12 },
      (_, line) => `Step ${line + 1}: read the failing case, change src/slugify.ts, run npm test, commit.`,
    ),
    'Do not touch files outside src/ and tests/.',
  ].join('\n');
}

/** The scripted model's replies for a task of `iterations` worker runs. */
export function loopScript(taskId: string, iterations: number): string[] {
  const ids = CRITERIA.map((criterion) => criterion.id);
  const replies = [planReply(taskId, CRITERIA)];
  for (let run = 1; run <= iterations; run += 1) {
    replies.push(
      runWorkerReply(workerInstruction(run), { reason: `Run ${run}: the tests still fail.` }),
      assessmentReply(
        run === iterations,
        ids,
        run === iterations ? 'Every criterion holds.' : `Run ${run}: one test still fails.`,
      ),
    );
  }
  return replies;
}

/** Estimated tokens of what one model call was sent (chars / 4, as the Meta-agent budgets). */
export function promptTokens(messages: readonly MetaMessage[]): number {
  return estimateTokens(messages.map((message) => message.content).join(''));
}

/** Calls both Meta-agents with the same views; the loop goes on with the first one's answers. */
class TeeMetaPort implements MetaAgentPort {
  constructor(
    private readonly primary: MetaAgentPort,
    private readonly shadow: MetaAgentPort,
  ) {}
  async plan(input: Parameters<MetaAgentPort['plan']>[0]) {
    await this.shadow.plan(input);
    return this.primary.plan(input);
  }
  async nextAction(view: MetaView) {
    await this.shadow.nextAction(view);
    return this.primary.nextAction(view);
  }
  async assess(view: MetaView, evidence: AssessmentEvidence) {
    await this.shadow.assess(view, evidence);
    return this.primary.assess(view, evidence);
  }
}

export interface LoopTaskOptions {
  iterations: number;
  runtime: SandboxRuntime;
  spec: SandboxSpec;
  config: Config;
  /** A scratch directory; the task gets its own repository root below it. */
  scratch: string;
  /** Also runs a shadow Meta-agent with this budget on the same views (section 5: the unbounded size). */
  shadowBudgetTokens?: number;
}

export interface PromptSample {
  call: number;
  purpose: string;
  tokens: number;
  shadowTokens?: number;
}

export interface LoopTaskResult {
  summary: TaskSummary;
  /** From before the task's set-up (patterns, Meta-agent) until `run()` returned. */
  wallMs: number;
  /** This process's CPU time (user + system) over the same span: not inflated by waiting for a busy CPU. */
  cpuMs: number;
  prompts: PromptSample[];
}

/** Runs one task; throws when it does not end COMPLETE after exactly `iterations` runs. */
export async function runLoopTask(options: LoopTaskOptions): Promise<LoopTaskResult> {
  const repoRoot = await mkdtemp(path.join(options.scratch, 'repo-'));
  const taskId = options.spec.taskId;
  const layout = taskLayout(repoRoot, taskId);
  const model = new ScriptedMetaModel(loopScript(taskId, options.iterations));
  const shadowModel =
    options.shadowBudgetTokens === undefined
      ? undefined
      : new ScriptedMetaModel(loopScript(taskId, options.iterations));
  const task: PreparedTask = {
    branch: layout.branch,
    baseSha: '0'.repeat(40),
    worktreePath: layout.worktreePath,
    dirtyStart: false,
    scopeStatement: 'You may change src/ and tests/; .env files and secrets/ are excluded.',
  };

  const startedAt = performance.now();
  const cpuAtStart = process.cpuUsage();
  const { config } = options;
  const redact = createRedactor([], config.redact.patterns);
  const patterns = await loadPatternLibrary([]);
  const primary = new MetaAgentPortAdapter(
    createMetaAgent({ model, config, logDir: path.join(layout.runDir, 'meta') }),
  );
  const meta = shadowModel
    ? new TeeMetaPort(
        primary,
        new MetaAgentPortAdapter(
          createMetaAgent({
            model: shadowModel,
            config: { meta: { ...config.meta, promptBudgetTokens: options.shadowBudgetTokens ?? 0 } },
          }),
        ),
      )
    : primary;
  const journal = new EventJournal(layout.runDir, redact);
  const runner = new TaskRunner(
    {
      taskId,
      prd: BENCH_PRD,
      limits: {
        maxIterations: options.iterations,
        maxMetaCalls: 2 * options.iterations + 5,
        wallClock: 30 * 60_000,
        maxStalls: 3,
      },
      worker: { type: 'noop', model: 'none', timeoutMs: 60_000, graceMs: 1_000 },
      prices: config.prices,
      dodSkipped: false,
      headless: true,
      patterns,
      runDir: layout.runDir,
    },
    {
      meta,
      workspace: new ExecWorkspace(options.runtime, task, options.iterations),
      sandboxes: new RuntimeSandboxes(options.runtime, options.spec),
      worker: new NoopWorker(options.runtime),
      human: { ask: async () => null },
      notes: { readMemory: (exclude) => readNoteMemory(layout.stateDir, exclude) },
      workerPrompt: workerPromptTemplate,
      clock: systemClock,
      writeNote: (record) =>
        writeTaskNote(record, {
          agentRunnerDir: layout.stateDir,
          repository: repoRoot,
          prdPath: 'PRD.md',
          workerModel: 'none',
          redact,
        }),
      onEvent: (event) => journal.append(event),
    },
  );
  const summary = await runner.run();
  const wallMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuAtStart);
  const cpuMs = (cpu.user + cpu.system) / 1000;

  if (summary.state !== 'COMPLETE' || summary.runs !== options.iterations) {
    throw new Error(
      `bench task ${taskId} ended ${summary.state} after ${summary.runs} run(s), expected COMPLETE after ${options.iterations}: ${summary.reason}`,
    );
  }
  model.assertComplete();
  shadowModel?.assertComplete();
  const prompts = model.calls.map((call, index) => {
    const shadow = shadowModel?.calls[index];
    return {
      call: index + 1,
      purpose: call.purpose ?? 'unknown',
      tokens: promptTokens(call.messages),
      ...(shadow ? { shadowTokens: promptTokens(shadow.messages) } : {}),
    };
  });
  return { summary, wallMs, cpuMs, prompts };
}
