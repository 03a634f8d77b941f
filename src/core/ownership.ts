/**
 * The shapes of an ownership pass (src/workspace/scope/ownership-pass.ts), which the sandbox runtime's port carries:
 * the plan's steps and what a pass did.
 */
/**
 * One step of an ownership plan: a path relative to the planned directory, its owner, its mode (null: leave),
 * and what the listing saw there (`kind`: `d` directory, `l` symlink, `f` anything else; its inode number):
 * the pass applies the step only to that very entry.
 */
export interface OwnershipEntry {
  path: string;
  uid: number;
  gid: number;
  mode: number | null;
  kind: 'd' | 'l' | 'f';
  ino: number;
}

/** Why a step of an ownership plan was not applied. */
export type OwnershipSkipReason =
  /** Another kind of entry, or another inode, is there now (a link swapped in, a directory replaced). */
  | 'changed'
  /** Nothing is there any more. */
  | 'gone'
  /** chown or chmod failed (the detail says how). */
  | 'failed';

/** What an ownership pass did: the steps applied, and the ones skipped (at most 50 listed, all counted). */
export interface OwnershipPassReport {
  applied: number;
  skippedCount: number;
  skipped: { path: string; reason: OwnershipSkipReason; detail?: string }[];
}
