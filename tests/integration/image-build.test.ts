import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAgentRunnerError } from '../../src/errors.js';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import {
  buildWorkerImage,
  resolveBaseImage,
  type WorkerImageBuildResult,
} from '../../src/sandbox/image-builder.js';

const docker = createDockerClient();
const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';
const taskLabel = `agent-runner.task=image-build-${randomUUID()}`;

async function dockerRun(image: string, argv: string[]) {
  return execa('docker', ['run', '--rm', '--label', taskLabel, image, ...argv], { reject: false });
}

afterAll(async () => {
  const left = await execa('docker', ['ps', '-aq', '--filter', `label=${taskLabel}`]);
  expect(left.stdout.trim()).toBe('');
});

describe('the real worker image', () => {
  let baseImage: string;
  let first: WorkerImageBuildResult;
  const lines: string[] = [];

  beforeAll(async () => {
    baseImage = await resolveBaseImage(docker, 'node:22-bookworm-slim');
    // After scripts/setup.sh this is a reuse; on a fresh machine it is the real (minutes long) build.
    first = await buildWorkerImage(docker, {
      baseImage,
      ...(existsSync(HOST_CA) ? { extraCaCertPath: HOST_CA } : {}),
      onProgress: (line) => lines.push(line),
    });
  }, 1_200_000);

  it('has the pinned codex and a non-root default user', async () => {
    expect(first.tag).toMatch(/^agent-runner-worker:codex-0\.169\.0-[0-9a-f]{12}$/);
    const version = await dockerRun(first.tag, ['codex', '--version']);
    expect(version.exitCode).toBe(0);
    expect(version.stdout.trim()).toBe('codex-cli 0.169.0');
    const uid = await dockerRun(first.tag, ['id', '-u']);
    expect(uid.exitCode).toBe(0);
    expect(uid.stdout.trim()).not.toBe('0');
  });

  it("runs an official Node build (V8's startup snapshot) of the base's own Node version", async () => {
    const probe = ['node', '-p', 'process.version + " " + process.config.variables.node_use_node_snapshot'];
    const base = await dockerRun(baseImage, probe);
    const worker = await dockerRun(first.tag, probe);
    expect(base.exitCode).toBe(0);
    expect(worker.exitCode).toBe(0);
    const [baseVersion, baseSnapshot] = base.stdout.trim().split(' ');
    expect(baseVersion).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(worker.stdout.trim()).toBe(`${baseVersion} true`);
    // Debian's Node (the base scripts/ensure-docker.sh builds) has no snapshot: the registry's build is in front.
    const resolved = await dockerRun(first.tag, ['readlink', '-f', '/usr/local/bin/node']);
    if (baseSnapshot === 'false')
      expect(resolved.stdout.trim()).toMatch(/^\/opt\/agent-runner\/base-node\/.*\/bin\/node$/);
  });

  it('is reused, with the same image id, when nothing changed', async () => {
    const again = await buildWorkerImage(docker, {
      baseImage,
      ...(existsSync(HOST_CA) ? { extraCaCertPath: HOST_CA } : {}),
    });
    expect(again).toEqual({ tag: first.tag, imageId: first.imageId, reused: true });
  });
});

describe('a tiny Dockerfile variant', () => {
  let baseImage: string;
  const images = new Set<string>();
  const marker = randomUUID().slice(0, 8);
  const variant = (text: string) =>
    `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nARG CODEX_VERSION\nRUN echo "${text}" > /marker && cat /marker\n`;
  const remember = (result: WorkerImageBuildResult) => {
    images.add(result.tag).add(result.imageId);
    return result;
  };

  beforeAll(async () => {
    baseImage = await resolveBaseImage(docker, 'node:22-bookworm-slim');
  });

  afterAll(async () => {
    // Tags first, then ids left dangling by rebuilds of the same tag.
    const ordered = [...images].sort(
      (a, b) => Number(a.startsWith('sha256:')) - Number(b.startsWith('sha256:')),
    );
    for (const image of ordered)
      await docker
        .getImage(image)
        .remove({ force: true })
        .catch(() => undefined);
    for (const image of images) {
      await expect(docker.getImage(image).inspect()).rejects.toMatchObject({ statusCode: 404 });
    }
  });

  it('builds, reports progress, then reuses the same image', async () => {
    const lines: string[] = [];
    const built = remember(
      await buildWorkerImage(docker, {
        baseImage,
        dockerfile: variant(marker),
        onProgress: (line) => lines.push(line),
      }),
    );
    expect(built.reused).toBe(false);
    expect(lines.some((line) => line.startsWith('Step 1/'))).toBe(true);
    expect(lines).toContain(marker);

    const info = await docker.getImage(built.tag).inspect();
    expect(info.Id).toBe(built.imageId);
    expect(info.Config.Labels).toMatchObject({
      'agent-runner.base-image': baseImage,
      'agent-runner.codex-version': '0.169.0',
      'agent-runner.version': expect.any(String),
    });

    const again = await buildWorkerImage(docker, { baseImage, dockerfile: variant(marker) });
    expect(again).toEqual({ ...built, reused: true });
  });

  it('gets a new tag and a new build when the Dockerfile changes', async () => {
    const before = remember(await buildWorkerImage(docker, { baseImage, dockerfile: variant(marker) }));
    const changed = remember(
      await buildWorkerImage(docker, { baseImage, dockerfile: variant(`${marker}-changed`) }),
    );
    expect(changed.tag).not.toBe(before.tag);
    expect(changed.reused).toBe(false);
    expect(changed.imageId).not.toBe(before.imageId);
  });

  it('rebuilds the same tag when the CA bundle differs, and on force', async () => {
    const before = remember(await buildWorkerImage(docker, { baseImage, dockerfile: variant(marker) }));
    const withCa = remember(
      await buildWorkerImage(docker, {
        baseImage,
        dockerfile: variant(marker),
        extraCa: `not a real CA ${marker}\n`,
      }),
    );
    expect(withCa.tag).toBe(before.tag);
    expect(withCa.reused).toBe(false);
    expect(withCa.imageId).not.toBe(before.imageId);
    const labels = (await docker.getImage(withCa.tag).inspect()).Config.Labels;
    expect(labels['agent-runner.extra-ca-sha256']).not.toBe(
      (await docker.getImage(before.imageId).inspect()).Config.Labels['agent-runner.extra-ca-sha256'],
    );

    const forced = remember(
      await buildWorkerImage(docker, {
        baseImage,
        dockerfile: variant(marker),
        extraCa: `not a real CA ${marker}\n`,
        force: true,
      }),
    );
    expect(forced.reused).toBe(false);
  });

  it('turns a failing build into image_build_failed with the last lines of output', async () => {
    const failing = `ARG BASE_IMAGE\nFROM \${BASE_IMAGE}\nRUN echo "about to fail ${marker}" && exit 3\n`;
    const error = await buildWorkerImage(docker, { baseImage, dockerfile: failing }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isAgentRunnerError(error) && error.code).toBe('image_build_failed');
    const message = (error as Error).message;
    expect(message).toContain(`about to fail ${marker}`);
    expect(message).toContain('returned a non-zero code: 3');
    expect((error as { exitCode: number }).exitCode).toBe(4);
  });
});
