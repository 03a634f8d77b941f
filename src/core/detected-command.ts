/**
 * A command agent-runner chose from the repository's own files when agent-runner.yaml gives none (a DoD check,
 * a set-up command), with what decided it, so the progress, the note and `doctor` can say "detected" and why.
 */
export interface DetectedCommand {
  command: string;
  /** The file (and the rule) that decided it: `package-lock.json`, `yarn.lock (yarn 1 lockfile)`. */
  detectedFrom: string;
}
