/**
 * A sandbox on a Docker network (the `open` policy) must not reach link-local addresses, where cloud metadata
 * services hand out credentials (169.254.169.254, fd00:ec2::254). The sandbox has no NET_ADMIN, so it cannot
 * change its own routes; a one-shot helper container joined to its network namespace, with NET_ADMIN and
 * nothing else, adds `unreachable` routes for 169.254.0.0/16 and fd00:ec2::254/128 before anything runs in the
 * sandbox. The worker cannot remove them (that needs the capability), and a connection fails at once with
 * "No route to host". The routes have no device, so they stay when the sandbox moves between networks.
 *
 * The worker image has no `ip`; the routes go through rtnetlink from perl (perl-base is in every Debian
 * image): one RTM_NEWROUTE per prefix, each acknowledged. The script is fixed; the prefixes are constants.
 */
import type Docker from 'dockerode';
import type { ContainerRuntime } from '../core/records.js';
import { EnvironmentError } from '../errors.js';
import type { SandboxOwner } from './container-options.js';
import { runOneShotContainer } from './one-shot-container.js';

/** The blocked prefixes: `[family, prefix length, address as hex]`. */
export const BLOCKED_PREFIXES: readonly (readonly [4 | 6, number, string])[] = [
  [4, 16, 'a9fe0000'], // 169.254.0.0/16: link-local, AWS/GCP/Azure/OpenStack metadata
  [6, 128, 'fd0000ec000000000000000000000254'], // fd00:ec2::254: AWS metadata over IPv6
];

/** rtnetlink from perl: args are triples of family, prefix length, hex address. Exit 0 when every route holds. */
const ROUTE_SCRIPT = String.raw`
use strict; use warnings;
my $seq = 1; my $failed = 0;
socket(my $sock, 16, 3, 0) or die "netlink socket: $!\n";
while (@ARGV) {
  my ($family, $len, $hex) = splice(@ARGV, 0, 3);
  my $addr = pack('H*', $hex);
  my $rta = pack('SS', 4 + length($addr), 1) . $addr;
  my $rtm = pack('CCCCCCCCL', $family == 6 ? 10 : 2, $len, 0, 0, 254, 4, 0, 7, 0);
  my $body = $rtm . $rta;
  my $msg = pack('LSSLL', 16 + length($body), 24, 0x1 | 0x4 | 0x400 | 0x200, $seq++, 0) . $body;
  send($sock, $msg, 0) or die "send: $!\n";
  defined recv($sock, my $reply, 4096, 0) or die "recv: $!\n";
  my ($rlen, $rtype, $rflags, $rseq, $rpid, $errno) = unpack('LSSLLl', $reply);
  if ($rtype == 2 && $errno != 0 && -$errno != 17) {
    print STDERR "route $hex/$len: errno ", -$errno, "\n";
    $failed = 1;
  }
}
exit $failed;
`;

/** Adds the unreachable routes inside `sandboxId`'s network namespace; throws when they could not be added. */
export async function blockLinkLocal(
  docker: Docker,
  owner: SandboxOwner,
  request: { sandboxId: string; image: string; taskId: string; repoPath: string; runtime?: ContainerRuntime },
): Promise<void> {
  const result = await runOneShotContainer(docker, owner, {
    image: request.image,
    taskId: request.taskId,
    repoPath: request.repoPath,
    role: 'network-guard',
    entrypoint: ['perl', '-e', ROUTE_SCRIPT],
    cmd: BLOCKED_PREFIXES.flatMap(([family, length, hex]) => [String(family), String(length), hex]),
    capAdd: ['NET_ADMIN'],
    networkMode: `container:${request.sandboxId}`,
    pidsLimit: 8,
    memoryBytes: 64 * 1024 * 1024,
    ...(request.runtime ? { runtime: request.runtime } : {}),
  });
  if (result.statusCode !== 0) {
    throw new EnvironmentError(
      'sandbox_failed',
      `Could not block link-local and metadata addresses in sandbox ${request.sandboxId} (helper exit ` +
        `${result.statusCode}: ${result.logsTail}). The open network policy is not used without them; the worker image ` +
        'needs perl (perl-base), or use the gateway-only or allowlist policy.',
    );
  }
}
