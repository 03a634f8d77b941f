/**
 * The audit log of one server: `.agent-runner/audit.jsonl` in the repository's state directory (mode 0600),
 * one entry per line, appended. A line that is not an entry (a torn last line after a crash) is skipped.
 */
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { auditRecordSchema, type AuditLog, type AuditRecord } from './audit-entry.js';

export const AUDIT_FILE = 'audit.jsonl';

export class FileAuditLog implements AuditLog {
  readonly file: string;

  constructor(private readonly stateDir: string) {
    this.file = path.join(stateDir, AUDIT_FILE);
  }

  async append(record: AuditRecord): Promise<void> {
    await mkdir(this.stateDir, { recursive: true });
    await appendFile(this.file, `${JSON.stringify(auditRecordSchema.parse(record))}\n`, { mode: 0o600 });
  }

  async list(options: { since?: Date } = {}): Promise<AuditRecord[]> {
    const text = await readFile(this.file, 'utf8').catch(() => '');
    const records: AuditRecord[] = [];
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue;
      }
      const parsed = auditRecordSchema.safeParse(value);
      if (!parsed.success) continue;
      if (options.since !== undefined && Date.parse(parsed.data.at) < options.since.getTime()) continue;
      records.push(parsed.data);
    }
    return records;
  }
}
