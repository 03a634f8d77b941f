/**
 * The scripted model servers of one test file: the Meta-agent's (Chat Completions) and the worker's
 * (Responses), started before its tests and closed after them.
 */
import { afterAll, beforeAll } from 'vitest';
import { startScriptedChatServer, type ScriptedChatServer } from './scripted-chat-server.js';
import { ScriptedResponsesServer } from './scripted-responses-server.js';

export interface ScriptedModels {
  readonly chat: ScriptedChatServer;
  readonly responses: ScriptedResponsesServer;
}

export function scriptedModelServers(): ScriptedModels {
  let chat: ScriptedChatServer | undefined;
  let responses: ScriptedResponsesServer | undefined;
  beforeAll(async () => {
    chat = await startScriptedChatServer();
    responses = await new ScriptedResponsesServer().start();
  });
  afterAll(async () => {
    await chat?.close();
    await responses?.close();
  });
  const started = <T>(server: T | undefined): T => {
    if (server === undefined) throw new Error('the scripted model servers start in beforeAll');
    return server;
  };
  return {
    get chat() {
      return started(chat);
    },
    get responses() {
      return started(responses);
    },
  };
}
