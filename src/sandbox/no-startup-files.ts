/**
 * The start of every argv the runner itself runs through a shell in the sandbox (set-up commands, DoD and
 * criteria checks): bash with no login profile, no ~/.bashrc, and BASH_ENV/ENV removed by `env` before bash
 * starts (bash reads BASH_ENV before its script). The worker can write all of those files and variables.
 * Append the script (and its arguments).
 */
export const BASH_WITHOUT_STARTUP_FILES: readonly string[] = [
  '/usr/bin/env',
  '-u',
  'BASH_ENV',
  '-u',
  'ENV',
  '/bin/bash',
  '--noprofile',
  '--norc',
  '-c',
];
