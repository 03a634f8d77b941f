/** Types of forge-event.mjs (the one source of the forge-event decision; src/forge-events/ imports them). */
export interface ForgeSettings {
  label?: string;
  trigger?: string;
  assignee?: string;
}
export declare const FORGE_DEFAULTS: Readonly<Required<ForgeSettings>>;

export type Forge = 'github' | 'gitlab';

export interface EventIssue {
  number: number;
  title: string;
  body: string;
  author: string;
  labels: string[];
  assignees: string[];
}
export interface EventRequest {
  number: number;
  /** Undefined for a GitHub comment on a pull request (its payload does not carry the branch). */
  headBranch: string | undefined;
  sameRepository: boolean | undefined;
}
interface EventBase {
  forge: Forge;
  name: string;
  action: string;
  repository: { fullName: string; cloneUrl: string; projectId?: number };
  /** Who acted: the author, the labeller, the assigner, the commenter or reviewer. */
  sender: string;
  text: string;
  commentId?: number;
}
export type ForgeEvent =
  | (EventBase & { on: 'issue'; issue: EventIssue; label?: string; assignee?: string })
  | (EventBase & { on: 'request'; request: EventRequest; reviewState?: string })
  | { ignore: string };

/** Where a task or a follow-up came from: numbers and names only, from the signed payload. */
export interface EventOrigin {
  forge: Forge;
  repository: string;
  event: string;
  action: string;
  issue?: number;
  request?: number;
  commentId?: number;
}

export type ForgeDecision =
  | { kind: 'task'; issue: number; prd: string; actor: string; why: string; origin: EventOrigin }
  | {
      kind: 'followup';
      request: number;
      taskId: string | undefined;
      actor: string;
      why: string;
      origin: EventOrigin;
    }
  | { kind: 'ignore'; reason: string; refused?: boolean; origin?: EventOrigin };

export interface ForgeAccess {
  canWrite(user: string): Promise<boolean>;
  headBranch(number: number): Promise<{ ref: string | undefined; sameRepository: boolean } | undefined>;
}

export declare function normaliseGithub(name: string, payload: unknown): ForgeEvent;
export declare function normaliseGitlab(payload: unknown): ForgeEvent;
export declare function mentions(body: string, trigger: string): boolean;
export declare function decide(event: ForgeEvent, settings?: ForgeSettings): ForgeDecision;
export declare function taskIdOf(branch: string | undefined): string | undefined;
export declare function issuePrd(issue: EventIssue): string;
export declare function authorise(decision: ForgeDecision, access: ForgeAccess): Promise<ForgeDecision>;
export declare function githubAccess(options: {
  api: string;
  repository: string;
  token?: string;
  /** Ends the forge's answers (the server's webhook answers within the forge's 10 s). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
}): ForgeAccess;
export declare function gitlabAccess(options: {
  api: string;
  projectId: number;
  token?: string;
  /** Ends the forge's answers (the server's webhook answers within the forge's 10 s). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
}): ForgeAccess;
export declare function followupInstruction(text: string, where: string): string;
