/**
 * The result of one `agent-runner doctor` check: plain data the command prints as a table or as JSON.
 */

export interface DoctorCheck {
  /** Short name, e.g. "Docker engine". */
  name: string;
  ok: boolean;
  /** What was found (a version, a tag, a URL and its answer). Never a secret. */
  detail: string;
  /** How to fix it; present when the check failed. */
  fix?: string;
}

/** A passed check. */
export function passed(name: string, detail: string): DoctorCheck {
  return { name, ok: true, detail };
}

/** A failed check with its fix. */
export function failed(name: string, detail: string, fix: string): DoctorCheck {
  return { name, ok: false, detail, fix };
}
