#!/usr/bin/env node
// Writes tests/file-durations.json (seconds per test file, what the suite's sequencer orders by) from a
// vitest JSON report: `npx vitest run --reporter=default --reporter=json --outputFile.json=report.json`,
// then `node scripts/test-durations.mjs report.json`. Also prints the files longest first.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const reportPath = process.argv[2];
if (!reportPath) {
  console.error('usage: node scripts/test-durations.mjs REPORT.json');
  process.exit(2);
}
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const rows = report.testResults
  .map((file) => [
    /(tests\/.*)$/.exec(file.name)?.[1] ?? file.name,
    Math.round((file.endTime - file.startTime) / 100) / 10,
  ])
  .sort((a, b) => b[1] - a[1]);
writeFileSync(
  path.join(root, 'tests', 'file-durations.json'),
  JSON.stringify(Object.fromEntries(rows), null, 2) + '\n',
);
for (const [file, seconds] of rows) console.log(`${String(seconds).padStart(7)} s  ${file}`);
