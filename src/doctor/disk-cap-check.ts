/**
 * Whether this machine can make hard disk caps (`sandbox.disk.hard`): a small capped file system is really
 * made, written past and removed. Without them a task's caps are watched from the host, which one large write
 * can jump before the watch sees it (docs/disk-caps.md).
 */
import type { Config } from '../config/schema.js';
import { probeHardCap } from '../sandbox/cap-volume.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';

const NAME = 'Disk caps';

export async function checkDiskCaps(config: Config | undefined): Promise<DoctorCheck> {
  if (config && !config.sandbox.disk.hard)
    return passed(NAME, 'watched: sandbox.disk.hard is false in the configuration');
  const probe = await probeHardCap();
  if (probe.kind === 'hard')
    return passed(NAME, "hard: each capped directory gets a loop-mounted file system of the cap's size");
  return failed(
    NAME,
    `watched only: ${probe.reason}`,
    'Run agent-runner as root on Linux with loop devices (and e2fsprogs) for hard caps, or set sandbox.disk.hard: false to accept watched caps, which one large write can jump.',
  );
}
