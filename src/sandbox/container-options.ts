/**
 * The hardened container a task runs in, as Docker create options. Pure (no Docker call), so the hardening is
 * readable in one place and checked before anything starts.
 */
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import type { MountSpec, SandboxNetwork, SandboxSpec } from '../core/ports.js';
import { InternalError } from '../errors.js';
import { keeperIdsFor } from '../workspace/scope/permissions.js';

/** Label keys every sandbox carries; `task` and `pid`/`hostname` let a later run find orphans. */
export const SANDBOX_LABELS = {
  task: 'agent-runner.task',
  repo: 'agent-runner.repo',
  version: 'agent-runner.version',
  pid: 'agent-runner.pid',
  hostname: 'agent-runner.hostname',
  /** `uid:gid` every exec runs as (the container's own user is the keeper's, see keeperIdsFor). */
  user: 'agent-runner.user',
} as const;

/** The writable home of the sandbox user; the root filesystem is read-only. */
export const SANDBOX_HOME = '/home/agent';

/** The home tmpfs options: owned by the worker (uid=/gid= are honoured on every engine; mode= is not). */
export function homeTmpfsOptions(user: { uid: number; gid: number }): string {
  return `rw,nosuid,nodev,exec,uid=${user.uid},gid=${user.gid},mode=0755`;
}

/**
 * The `/tmp` tmpfs options. `exec`: Docker mounts a tmpfs `noexec` unless told, and toolchains execute what they
 * build under the temp dir (`go test` runs its test binaries from `/tmp/go-build…`); `noexec` protected nothing,
 * since the worker can execute anything in its writable workspace and home. `size`: half the container's memory
 * (a tmpfs is memory, charged to the container's limit), so a full `/tmp` is "No space left on device" for the
 * writer rather than an out-of-memory kill of the whole run.
 */
export function tmpTmpfsOptions(memoryBytes: number): string {
  return `rw,nosuid,nodev,exec,size=${Math.max(64 * 1024 ** 2, Math.floor(memoryBytes / 2))},mode=1777`;
}

/** Who creates the container, recorded in its labels. */
export interface SandboxOwner {
  version: string;
  pid: number;
  hostname: string;
}

/** Host paths of Docker sockets that must never be visible inside a sandbox. */
export function dockerSocketPaths(env: NodeJS.ProcessEnv): string[] {
  const paths = ['/var/run/docker.sock', '/run/docker.sock'];
  const host = env.DOCKER_HOST;
  if (host?.startsWith('unix://')) paths.push(host.slice('unix://'.length));
  return paths;
}

function resolvedPath(target: string): string {
  try {
    return realpathSync(target);
  } catch {
    return path.resolve(target);
  }
}

/** Refuses a mount that would expose a Docker socket (the socket itself or a directory holding it). */
export function assertNoDockerSocket(mounts: readonly MountSpec[], socketPaths: readonly string[]): void {
  const sockets = socketPaths.flatMap((socket) => [path.resolve(socket), resolvedPath(socket)]);
  for (const mount of mounts) {
    const host = resolvedPath(mount.hostPath);
    const exposes = sockets.some(
      (socket) => socket === host || socket.startsWith(host.endsWith('/') ? host : `${host}/`),
    );
    if (
      exposes ||
      path.basename(mount.hostPath) === 'docker.sock' ||
      path.basename(mount.containerPath) === 'docker.sock'
    ) {
      throw new InternalError(
        `Refusing to mount ${mount.hostPath} into a sandbox: it would expose the Docker socket, which is root on the host.`,
        { details: { mount } },
      );
    }
  }
}

function networkMode(network: SandboxNetwork): string {
  if (network.mode !== 'network') return network.mode;
  // `host` and `container:<id>` would share a namespace with something outside the sandbox.
  if (network.name === 'host' || network.name.startsWith('container:') || network.name === '') {
    throw new InternalError(
      `Refusing network "${network.name}" for a sandbox: only none, bridge or a named network.`,
    );
  }
  return network.name;
}

/** `agent-runner-<taskId>-<6 hex>`, with characters Docker does not accept in names replaced. */
export function sandboxName(taskId: string): string {
  const safe = taskId.replace(/[^a-zA-Z0-9_.-]/g, '-');
  return `agent-runner-${safe}-${randomBytes(3).toString('hex')}`;
}

/** `uid:gid` as Docker's User field takes it. */
export function userField(user: { uid: number; gid: number }): string {
  return `${user.uid}:${user.gid}`;
}

/**
 * Docker create options for `spec`: non-root, no capabilities, read-only root, bounded pids/memory/cpu. The
 * container's own user (its init, the keeper and the gateway relay) is the keeper uid, not the worker's: with
 * no capabilities and `no-new-privileges`, nothing the worker runs can signal, ptrace or outlive-by-proxy
 * them, and the reaper may end every process of the worker's uid. Every exec names the worker's user
 * (`agent-runner.user`, DockerSandboxRuntime.exec).
 */
export function containerCreateOptions(
  spec: SandboxSpec,
  owner: SandboxOwner,
  socketPaths: readonly string[],
): Docker.ContainerCreateOptions {
  if (
    !Number.isInteger(spec.user.uid) ||
    !Number.isInteger(spec.user.gid) ||
    spec.user.uid < 0 ||
    spec.user.gid < 0
  ) {
    throw new InternalError(`Sandbox user ${spec.user.uid}:${spec.user.gid} is not a numeric uid:gid.`);
  }
  if (spec.user.uid === 0) {
    throw new InternalError('Refusing to run a sandbox as uid 0: the worker must run as a non-root user.');
  }
  assertNoDockerSocket(spec.mounts, socketPaths);
  const memory = Math.floor(spec.limits.memoryBytes);
  return {
    name: sandboxName(spec.taskId),
    Image: spec.image,
    // Entrypoint rather than Cmd: an image entrypoint (node's docker-entrypoint.sh) must not wrap the keeper.
    Entrypoint: spec.keeper ?? ['sleep'],
    Cmd: spec.keeper === undefined ? ['infinity'] : [],
    User: userField(keeperIdsFor(spec.user)),
    WorkingDir: spec.workdir,
    Env: [`HOME=${SANDBOX_HOME}`, ...Object.entries(spec.env).map(([key, value]) => `${key}=${value}`)],
    Labels: {
      ...spec.labels,
      [SANDBOX_LABELS.task]: spec.taskId,
      [SANDBOX_LABELS.repo]: spec.repoPath,
      [SANDBOX_LABELS.version]: owner.version,
      [SANDBOX_LABELS.pid]: String(owner.pid),
      [SANDBOX_LABELS.hostname]: owner.hostname,
      [SANDBOX_LABELS.user]: userField(spec.user),
    },
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    OpenStdin: false,
    Tty: false,
    HostConfig: {
      // `bind` mounts rather than Binds strings: a path with a colon stays one path, and a missing host path is
      // an error instead of a root-owned directory created by the engine.
      Mounts: spec.mounts.map((mount) => ({
        Type: 'bind' as const,
        Source: mount.hostPath,
        Target: mount.containerPath,
        ReadOnly: mount.readOnly ?? false,
      })),
      Tmpfs: {
        '/tmp': tmpTmpfsOptions(memory),
        // Owned by the worker's uid through uid=/gid=: Docker 20.10 ignores mode= on a tmpfs mounted over a
        // directory the image already has (the home does), which left it root-owned and `npm ci` failing.
        [SANDBOX_HOME]: homeTmpfsOptions(spec.user),
      },
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Init: true,
      PidsLimit: spec.limits.pids,
      Memory: memory,
      // Equal to Memory: no swap, so exceeding the limit is an OOM kill rather than a slow crawl.
      MemorySwap: memory,
      NanoCpus: Math.round(spec.limits.cpus * 1e9),
      NetworkMode: networkMode(spec.network),
      ExtraHosts: spec.extraHosts ?? [],
      Privileged: false,
      ...(spec.runtime ? { Runtime: spec.runtime } : {}),
      RestartPolicy: { Name: 'no' },
      AutoRemove: false,
    },
  };
}
