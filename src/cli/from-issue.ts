/**
 * `run --from-issue <URL>`: the task's PRD is an issue (`https://HOST/OWNER/NAME/issues/N`, GitLab's
 * `https://HOST/GROUP/NAME/-/issues/N`), read through the forge's API with the host's token and fenced as the
 * forge user's quoted words (the same PRD the Action and the webhooks make); the request then closes the issue
 * and replies on it (`deliver.closes`). The person who runs the command is the one who instructs: the issue's
 * author is not checked here, as the Action and `serve` check theirs.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { issuePrd } from '../../scripts/ci/forge-event.mjs';
import { defaultForgeFactory, type ForgeFactory } from '../deliver/deliver-task.js';
import { ForgeError } from '../deliver/forge-error.js';
import { UserError } from '../errors.js';
import { forgeToken } from '../remote/remote-credentials.js';
import {
  changeRequestApiUrl,
  parseForgePageUrl,
  type ChangeRequestUrl,
} from '../verify/change-request-target.js';

/** Reads an issue's page URL; null when it is none (the same shape as a request's: forge, host, repository, number). */
export function parseIssueUrl(argument: string): ChangeRequestUrl | null {
  return parseForgePageUrl(argument, 'issue');
}

/** The issue as a PRD file (outside the repository) and the number the request closes. */
export async function issueTask(
  argument: string,
  env: NodeJS.ProcessEnv,
  forgeFactory: ForgeFactory = defaultForgeFactory,
): Promise<{ prdPath: string; closes: number }> {
  const issue = parseIssueUrl(argument);
  if (issue === null)
    throw new UserError(
      'usage',
      `--from-issue ${argument}: not an issue's page; give https://github.com/OWNER/NAME/issues/N or https://GITLAB-HOST/GROUP/NAME/-/issues/N.`,
    );
  const token = forgeToken(issue.forge, env)?.token;
  if (!token)
    throw new UserError(
      'usage',
      `Reading ${argument} needs a token: set ${issue.forge === 'github' ? 'GH_TOKEN or GITHUB_TOKEN' : 'GITLAB_TOKEN'}.`,
    );
  const apiUrl = changeRequestApiUrl(issue, env.AGENT_RUNNER_FORGE_API_URL || undefined);
  const client = forgeFactory({ forge: issue.forge, repository: issue.repository, token, apiUrl });
  let read;
  try {
    read = await client.getIssue(issue.number);
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    throw new UserError(
      'usage',
      `Could not read ${argument} (${error.failure.kind}: ${error.failure.message}). Check the URL and the token's access to the repository.`,
      { cause: error },
    );
  }
  const directory = await mkdtemp(path.join(tmpdir(), 'agent-runner-issue-'));
  const prdPath = path.join(directory, `issue-${issue.number}.md`);
  await writeFile(
    prdPath,
    issuePrd({
      number: issue.number,
      title: read.title,
      body: read.body,
      author: '',
      labels: [],
      assignees: [],
    }),
    { mode: 0o600 },
  );
  return { prdPath, closes: issue.number };
}
