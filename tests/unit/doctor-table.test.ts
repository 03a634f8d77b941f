import { describe, expect, it } from 'vitest';
import { formatDoctorTable } from '../../src/cli/doctor-command.js';
import { failed, passed } from '../../src/doctor/doctor-check.js';

describe('formatDoctorTable', () => {
  it('aligns the columns and prints the fix under a failed check only', () => {
    const table = formatDoctorTable([
      passed('Docker engine', 'Docker 20.10'),
      failed('Git repository', '/tmp/x is not inside a git repository', 'Run it from your repository.'),
    ]);
    expect(table.split('\n')).toEqual([
      'CHECK           STATUS  DETAIL',
      'Docker engine   ok      Docker 20.10',
      'Git repository  FAIL    /tmp/x is not inside a git repository',
      '                        fix: Run it from your repository.',
      '',
      '1 check(s) failed.',
    ]);
  });

  it('indents the extra lines of a multi-line detail and says when all passed', () => {
    const table = formatDoctorTable([passed('Configuration', 'line one\nline two')]);
    expect(table.split('\n')).toEqual([
      'CHECK          STATUS  DETAIL',
      'Configuration  ok      line one',
      '                       line two',
      '',
      'All checks passed.',
    ]);
  });
});
