/**
 * The services a task and a project both start from: the model gateway with its log, and the Meta-agent's
 * model checked against that gateway's replay. One function each, so a task, a project and (next) a
 * server start them the same way.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import { GatewayCheckedMetaModel } from '../gateway/gateway-guards.js';
import {
  requireWorkerKeys,
  startTaskGateway,
  type TaskGateway,
  type TaskGatewayInput,
} from '../gateway/task-gateway.js';
import { createOpenAiChatModel } from '../meta/openai-chat-model.js';
import { showControls } from '../notes/terminal-text.js';
import type { TaskHost } from './task-host.js';

/** The gateway's input besides what the host and the run directory give. */
export type GatewayOptions = Omit<TaskGatewayInput, 'config' | 'env' | 'repoRoot' | 'redaction' | 'onLog'>;

/**
 * Starts the gateway of a task or a project: its log lines (redacted, time-stamped, terminal controls shown as
 * escapes) go to `gateway.log` in the run directory, and it adds its tokens to the host's redaction point.
 */
export async function openGateway(
  host: TaskHost,
  where: { config: Config; env: NodeJS.ProcessEnv; repoRoot: string; runDir: string },
  options: GatewayOptions = {},
): Promise<TaskGateway> {
  const redact = host.redaction.redact;
  // A real worker needs its key (a replay answers from its cassette; a host's own worker is a test's).
  if (options.replay === undefined && host.dependencies.worker === undefined)
    requireWorkerKeys(where.config, where.env);
  return startTaskGateway({
    config: where.config,
    env: where.env,
    repoRoot: where.repoRoot,
    redaction: host.redaction,
    onLog: (line) => {
      try {
        // One entry per line, whatever the worker put into a request target or a refusal's detail.
        const entry = showControls(redact(line), 'one_line');
        appendFileSync(path.join(where.runDir, 'gateway.log'), `${host.stamp()} ${entry}\n`);
      } catch {
        // A full disk stops the task through its journal; the gateway keeps answering meanwhile.
      }
    },
    ...options,
  });
}

/**
 * The Meta-agent's model: the host's (tests), else the OpenAI SDK pointed at the gateway's loopback route;
 * either way a replay's divergence surfaces as itself. The caller counts each call in its ledger.
 */
export function checkedMetaModel(
  host: TaskHost,
  config: Config,
  env: NodeJS.ProcessEnv,
  gateway: TaskGateway,
  options: { replay?: boolean } = {},
): GatewayCheckedMetaModel {
  const key = env[config.meta.apiKeyEnv];
  return new GatewayCheckedMetaModel(
    host.dependencies.metaModel ??
      createOpenAiChatModel(
        config,
        // Under --replay no key is needed: the gateway answers from the cassette.
        options.replay ? { ...env, [config.meta.apiKeyEnv]: key || 'replay' } : env,
        { baseUrl: gateway.meta.baseUrl, apiKey: gateway.meta.apiKey, displayUrl: config.meta.baseUrl },
      ),
    gateway.gateway,
  );
}
