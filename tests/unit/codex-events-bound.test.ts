/**
 * The worker writes codex's stream itself (its output reaches codex's stdout), so the parser's summary keeps a
 * bounded number of items per list and says how many more there were.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ITEMS_PER_LIST, parseCodexJsonl, toWorkerRunResult } from '../../src/worker/codex-events.js';

const commandLine = (index: number) =>
  JSON.stringify({
    type: 'item.completed',
    item: { id: `item_${index}`, type: 'command_execution', command: `echo ${index}`, status: 'completed' },
  });

describe('codex stream summary bounds', () => {
  it('keeps the first items of each list and counts the rest; every event still goes out live', () => {
    const lines = Array.from({ length: MAX_ITEMS_PER_LIST + 500 }, (_, index) => commandLine(index));
    lines.push(
      ...Array.from({ length: MAX_ITEMS_PER_LIST + 7 }, (_, index) =>
        JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: `m${index}` } }),
      ),
    );
    let live = 0;
    const summary = parseCodexJsonl(lines.join('\n'), () => (live += 1));
    expect(summary.commands).toHaveLength(MAX_ITEMS_PER_LIST);
    expect(summary.commands[0]?.command).toBe('echo 0');
    expect(summary.agentMessages).toHaveLength(MAX_ITEMS_PER_LIST);
    expect(summary.itemsNotKept).toBe(507);
    // Each command past the bound is reported started and finished; each message once.
    expect(live).toBe(MAX_ITEMS_PER_LIST * 2 + 500 * 2 + MAX_ITEMS_PER_LIST + 7);
    const result = toWorkerRunResult(
      summary,
      {
        exitCode: 0,
        signal: null,
        timedOut: false,
        interrupted: false,
        oomKilled: false,
        durationMs: 1,
        stdoutTail: '',
        stderrTail: '',
      },
      { timeoutMs: 1000 },
    );
    expect(result.notices?.at(-1)).toBe(
      "507 more items of the stream not kept (all are in the run's codex.jsonl)",
    );
  });
});
