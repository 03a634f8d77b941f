/**
 * The pg-boss queue every node takes tasks from, and how a job's lease works.
 *
 * pg-boss 10 cannot renew an active job's expiry, so the lease has two parts: the job's own expiry (a bound on
 * a task's whole run, after which pg-boss itself fails it and retries it on any node), and the nodes'
 * heartbeats (`agent_runner.nodes.heartbeat_at`): a job whose node has not beaten for {@link NODE_STALE_SECONDS}
 * is failed by whichever node sees it first, and pg-boss's retry gives it to another node at once.
 */
import type PgBoss from 'pg-boss';
import type { DeliverySettings } from '../deliver/deliver-task.js';

/** The queue's name. */
export const TASK_QUEUE = 'tasks';
/** The channel a new job is announced on (payload: the task id): an idle node woken by it takes the task at once. */
export const QUEUE_CHANNEL = 'agent_runner_queue';
/** A node heartbeats this often... */
export const HEARTBEAT_SECONDS = 5;
/** ...and is stale (its jobs given to others, `control status` marks it) after this long without one. */
export const NODE_STALE_SECONDS = 30;

/** The queue's options, set by `control migrate` (a job's lease, its retries after a lost node). */
export const TASK_QUEUE_OPTIONS: PgBoss.Queue = {
  name: TASK_QUEUE,
  policy: 'standard',
  // A task that outlives this is taken from its node whatever its heartbeat says (a hung node).
  expireInSeconds: 12 * 60 * 60,
  // Each retry is a resume on another node (the branch and the WIP ref on the remote, the journal in the database).
  retryLimit: 3,
  retryDelay: 0,
  retentionMinutes: 7 * 24 * 60,
};

/** What a queued job carries: the task's row holds the rest (PRD, repository, base). */
export interface TaskJobData {
  taskId: string;
  /** A follow-up of the ended task (`POST /api/tasks/{id}/followup` on a node): the person's instruction. */
  followup?: FleetFollowup;
  /** A follow-up from the review of the ended task's pull/merge request (a review's webhook on a node). */
  review?: FleetReviewFollowup;
  /**
   * Delivered once it ends, as `run --pr --closes N` (a webhook's task from an issue): the node that ends it opens
   * the request with its own token, the rest of `deliver.*` the repository's own. The job, not the row, carries
   * it: a job given to another node after its node died is the same job, with the same data.
   */
  deliver?: FleetDelivery;
}

/** What a fleet's task asks of its delivery: a pull/merge request, closing an issue of the repository. */
export type FleetDelivery = { pr: true } & Pick<DeliverySettings, 'closes'>;

/**
 * The delivery a job's data asks for, checked as the database hands it back (only `pr: true` and an issue's
 * number, a positive safe integer, are taken); undefined when it asks for none or for something else.
 */
export function fleetDelivery(raw: unknown): FleetDelivery | undefined {
  if (typeof raw !== 'object' || raw === null || (raw as { pr?: unknown }).pr !== true) return undefined;
  const closes = (raw as { closes?: unknown }).closes;
  if (closes === undefined) return { pr: true };
  return isIssueNumber(closes) ? { pr: true, closes } : undefined;
}

/** What a job asks of the task beyond running it: a follow-up, one from review, its delivery (checked). */
export function jobRequests(data: TaskJobData): Pick<TaskJobData, 'followup' | 'review' | 'deliver'> {
  const deliver = fleetDelivery(data.deliver);
  return {
    ...(data.followup ? { followup: data.followup } : {}),
    ...(data.review ? { review: data.review } : {}),
    ...(deliver ? { deliver } : {}),
  };
}

/** Whether `value` can be an issue's number: a positive safe integer. */
export function isIssueNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/**
 * A follow-up from review queued on the fleet: the node that takes it reads the request's review as
 * `followup --from-review <requestUrl>` does (writers' comments since the last read, a reaction, one reply).
 */
export interface FleetReviewFollowup {
  /** The request's page, built by the webhook from the forge's address and the event's numbers. */
  requestUrl: string;
}

/** A follow-up queued on the fleet: the instruction, and whether the same pull/merge request is updated after. */
export interface FleetFollowup {
  message: string;
  pr?: boolean;
}
