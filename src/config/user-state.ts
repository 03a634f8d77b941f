/**
 * Files agent-runner keeps for the person across repositories and runs, in their state directory
 * (`$XDG_STATE_HOME/agent-runner/`, default `~/.local/state/agent-runner/`). Each is a cache or a remembered
 * choice: losing one costs time, never correctness, so every write is best effort.
 */
import { homedir } from 'node:os';
import path from 'node:path';

export function userStateFile(env: NodeJS.ProcessEnv, name: string): string {
  const base = env.XDG_STATE_HOME || path.join(env.HOME || homedir(), '.local', 'state');
  return path.join(base, 'agent-runner', name);
}
