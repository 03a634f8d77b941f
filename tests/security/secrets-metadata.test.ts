/**
 * Under the `open` network policy the sandbox is on Docker's bridge, where a cloud VM's metadata service
 * (169.254.169.254, fd00:ec2::254) would hand out the machine's credentials. The routes to link-local and
 * metadata addresses are unreachable, and the worker cannot remove them. Canary: the same probe reaches a
 * server of the host over the bridge, which `open` allows.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { journalEvents } from '../support/faults-harness.js';
import { HOSTILE_YAML, runHostileTask } from '../support/hostile-worker.js';
import { taskContainers } from '../support/task-containers.js';
import { UNDER_RUNSC } from '../support/test-runtime.js';

/** bash: tries a TCP connection and prints `<label> ok` or `<label> <error>`. */
function connect(label: string, host: string, port: number): string {
  return `timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/tmp/e && echo "${label} ok" || echo "${label} $(tail -c 120 /tmp/e)"`;
}

/** perl: asks rtnetlink to delete the 169.254.0.0/16 route (needs NET_ADMIN, which the sandbox lacks). */
const DELETE_ROUTE = String.raw`perl -e 'socket(my $s,16,3,0) or die; my $a=pack("H*","a9fe0000"); my $b=pack("CCCCCCCCL",2,16,0,0,254,4,0,7,0).pack("SS",8,1).$a; send($s,pack("LSSLL",16+length($b),25,5,1,0).$b,0); recv($s,my $r,4096,0); my @f=unpack("LSSLLl",$r); print "delete errno ", -$f[5], "\n"'`;

describe('the open policy and cloud metadata', () => {
  // Under gVisor there is no bridge to reach metadata over: the open policy itself is refused.
  it.runIf(UNDER_RUNSC)('runsc with the open policy is refused before anything starts (exit 2)', async () => {
    const taskId = `sec-secrets-meta-${randomUUID().slice(0, 6)}`;
    const run = await runHostileTask(taskId, {
      yaml: `${HOSTILE_YAML}sandbox:\n  network: open\n`,
      commands: ['echo never-run'],
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /sandbox\.network: open needs the container's own network, which a runsc sandbox lacks .*sandbox\.runtime: runc/,
    );
    expect(await taskContainers(taskId, run.task.root)).toEqual([]);
  });

  it.skipIf(UNDER_RUNSC)(
    'link-local and metadata addresses are unreachable, and the worker cannot lift that',
    async () => {
      const marker = `HOST-REACHED-${randomUUID().slice(0, 8)}`;
      const server = createServer((_request, response) => response.end(marker));
      await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
      onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
      const port = (server.address() as AddressInfo).port;
      const taskId = `sec-secrets-meta-${randomUUID().slice(0, 6)}`;
      const run = await runHostileTask(taskId, {
        yaml: `${HOSTILE_YAML}sandbox:\n  network: open\n`,
        commands: [
          [
            // The host as seen from the bridge: the container's default gateway.
            'gw=$(awk \'$2 == "00000000" { printf "%d.%d.%d.%d", "0x" substr($3,7,2), "0x" substr($3,5,2), "0x" substr($3,3,2), "0x" substr($3,1,2) }\' /proc/net/route)',
            'echo "gateway $gw"',
            connect('bridge-host', '$gw', port),
            connect('metadata', '169.254.169.254', 80),
            connect('link-local', '169.254.1.1', 80),
            connect('metadata-v6', 'fd00:ec2::254', 80),
            DELETE_ROUTE,
            connect('metadata-after-delete', '169.254.169.254', 80),
          ].join('\n'),
        ],
      });
      const recorded = JSON.stringify(
        journalEvents(run.task.root, taskId).filter((e) => e.type === 'run_recorded'),
      );
      // Canary: the probe connects where `open` allows.
      expect(recorded, run.stderr).toContain('bridge-host ok');
      for (const label of ['metadata', 'link-local', 'metadata-after-delete']) {
        expect(recorded).toMatch(new RegExp(`${label} [^"]*No route to host`));
      }
      expect(recorded).toMatch(/metadata-v6 [^"]*(No route to host|Network is unreachable|Cannot assign)/);
      expect(recorded).toMatch(/delete errno 1\b/);
    },
  );
});
