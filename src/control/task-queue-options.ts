/**
 * The pg-boss queue every node takes tasks from, and how a job's lease works.
 *
 * pg-boss 10 cannot renew an active job's expiry, so the lease has two parts: the job's own expiry (a bound on
 * a task's whole run, after which pg-boss itself fails it and retries it on any node), and the nodes'
 * heartbeats (`agent_runner.nodes.heartbeat_at`): a job whose node has not beaten for {@link NODE_STALE_SECONDS}
 * is failed by whichever node sees it first, and pg-boss's retry gives it to another node at once.
 */
import type PgBoss from 'pg-boss';

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
