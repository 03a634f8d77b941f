/**
 * The memory bank on the server: its entries and the pending proposals of finished tasks (viewer), and an
 * operator's accept or reject of a proposal (audited as `memory.accept` / `memory.reject`, with the proposal's
 * id and its task). An accepted proposal becomes an entry file in the working tree, left for a person to review
 * and commit: the server commits nothing in the repository.
 */
import path from 'node:path';
import { loadConfig } from '../config/load.js';
import { readAllProposals } from '../memory/memory-proposals.js';
import { readMemoryDir } from '../memory/memory-store.js';
import { ProposalDecidedError, ProposalNotFoundError, decideProposal } from '../memory/proposal-decision.js';
import type { Redaction } from '../notes/redact.js';
import { STATE_DIR_NAME } from '../workspace/layout.js';
import { apiError } from './api-answers.js';
import { route, type ApiApp, type AuditSinks } from './api-auth.js';

export function registerMemoryRoutes(
  app: ApiApp,
  sinks: AuditSinks,
  options: { repoRoot: string; env: NodeJS.ProcessEnv; redaction: Redaction },
): void {
  const memoryDir = async () =>
    (await loadConfig({ repoRoot: options.repoRoot, env: options.env, flags: {} })).memory.dir;

  route(app, 'GET /api/memory', sinks, async (c) => {
    const dir = await memoryDir();
    const entries = await readMemoryDir(options.repoRoot, dir);
    const proposals = await readAllProposals(path.join(options.repoRoot, STATE_DIR_NAME, 'runs'));
    return c.json(
      options.redaction.value({
        dir,
        entries: entries.entries,
        proposals: proposals.proposals.filter((proposal) => proposal.status === 'pending'),
        problems: [...entries.problems, ...proposals.problems],
      }),
    );
  });

  for (const status of ['accepted', 'rejected'] as const) {
    const key =
      status === 'accepted'
        ? 'POST /api/memory/proposals/:id/accept'
        : 'POST /api/memory/proposals/:id/reject';
    route(app, key, sinks, async (c) => {
      const id = c.req.param('id') ?? '';
      const taskId = /^(.+)#\d+$/.exec(id)?.[1];
      try {
        const outcome = await decideProposal(
          { repoRoot: options.repoRoot, memoryDir: await memoryDir() },
          id,
          {
            status,
            by: c.get('actor').name,
            now: new Date(),
          },
        );
        if (taskId !== undefined) c.set('auditTaskId', taskId);
        return c.json(outcome);
      } catch (error) {
        if (error instanceof ProposalNotFoundError) return apiError(c, 404, 'not_found', error.message);
        if (error instanceof ProposalDecidedError) return apiError(c, 409, 'decided', error.message);
        throw error;
      }
    });
  }
}
