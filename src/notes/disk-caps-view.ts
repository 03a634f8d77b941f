/**
 * The note's disk caps row: which kind each cap of the sandbox was (docs/disk-caps.md).
 */
import type { DiskCapKind, DiskCapKinds } from '../core/records.js';
import { inlineText, NOTE_LIMITS } from './markdown-text.js';

/** The disk caps row: each cap's kind, and why a watched one is not hard. */
export function diskCapsView(caps: DiskCapKinds | null | undefined): { diskCaps: string } {
  if (!caps) return { diskCaps: '' };
  const one = (name: string, cap: DiskCapKind) =>
    cap.kind === 'hard'
      ? `${name}: hard (a file system of its own; no write passes the cap)`
      : `${name}: watched (${cap.reason})`;
  return {
    diskCaps: inlineText(
      `${one('repository', caps.repository)}; ${one('CODEX_HOME', caps.codexHome)}`,
      NOTE_LIMITS.longLine,
    ),
  };
}
