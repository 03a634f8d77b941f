/**
 * The model endpoint checks: the API key variable is set and the base URL answers HTTP. Any HTTP answer
 * counts (a 401 or 404 still proves the server is there); a refused connection, a DNS failure or no answer
 * within the timeout does not.
 */
import { failed, passed, type DoctorCheck } from './doctor-check.js';
import { timeoutSignal } from '../core/timeout-signal.js';

/** How long a base URL may take to answer. */
export const PROBE_TIMEOUT_MS = 3_000;

/** The outcome of one HTTP probe. */
export type ProbeResult = { reachable: true; status: number } | { reachable: false; reason: string };

/** Sends one GET to `url` and reports whether any HTTP answer came back within `timeoutMs`. */
export async function probeUrl(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  try {
    const response = await fetch(url, {
      method: 'GET',
      redirect: 'manual',
      signal: timeoutSignal(timeoutMs),
    });
    await response.body?.cancel();
    return { reachable: true, status: response.status };
  } catch (error) {
    return { reachable: false, reason: describeFetchError(error, timeoutMs) };
  }
}

function describeFetchError(error: unknown, timeoutMs: number): string {
  const failure = error as Error & { cause?: { code?: string; message?: string } };
  if (failure.name === 'TimeoutError' || failure.name === 'AbortError')
    return `no answer within ${timeoutMs} ms`;
  const cause = failure.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? failure.message;
}

export interface EndpointCheckInput {
  /** "Meta endpoint" or "Worker endpoint". */
  name: string;
  baseUrl: string;
  apiKeyEnv: string;
  env: NodeJS.ProcessEnv;
  /** Where the values come from, for the fix text (e.g. "meta.baseUrl / OPENAI_BASE_URL"). */
  baseUrlSetting: string;
  apiKeySetting: string;
  probe: (url: string) => Promise<ProbeResult>;
}

/** Checks one endpoint: key variable set, base URL answering. */
export async function checkEndpoint(input: EndpointCheckInput): Promise<DoctorCheck> {
  const keySet = Boolean(input.env[input.apiKeyEnv]);
  const probe = await input.probe(input.baseUrl);
  const answer = probe.reachable ? `answers HTTP ${probe.status}` : `unreachable: ${probe.reason}`;
  const detail = `${input.baseUrl} ${answer}; ${input.apiKeyEnv} ${keySet ? 'is set' : 'is not set'}`;
  const fixes: string[] = [];
  if (!keySet)
    fixes.push(
      `export ${input.apiKeyEnv}=<your key> (the variable's name comes from ${input.apiKeySetting})`,
    );
  if (!probe.reachable) {
    fixes.push(`start the endpoint or point ${input.baseUrlSetting} at one that answers from here`);
  }
  return fixes.length ? failed(input.name, detail, fixes.join('; ')) : passed(input.name, detail);
}
