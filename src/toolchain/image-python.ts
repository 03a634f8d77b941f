/**
 * What an image's own Python offers a project without a virtual environment: whether `python3 -m venv` can
 * make one (Debian's venv needs ensurepip, which only `python3-venv` installs), the distributions installed
 * where `python3` sees them, and the values PEP 508 environment markers compare. Asked once per image id in a
 * throwaway container (image-answers.ts), remembered in `image-python.json`.
 */
import type Docker from 'dockerode';
import * as z from 'zod';
import { rememberedImageAnswer } from './image-answers.js';
import { runInImage } from './run-in-image.js';

export const IMAGE_PYTHON_FILE = 'image-python.json';

const imagePythonSchema = z.object({
  /** `python3 -m venv` can make an environment with pip (ensurepip and venv are importable). */
  venv: z.boolean(),
  /** Installed distributions by their PEP 503 normalized name: their version. */
  distributions: z.record(z.string().max(200), z.string().max(100)),
  /** PEP 508 marker variables (`python_version`, `sys_platform`, ...). */
  markers: z.record(z.string().max(100), z.string().max(300)),
});
export type ImagePython = z.infer<typeof imagePythonSchema>;

/** PEP 503: names compare lower-cased with runs of `-`, `_` and `.` as one `-`. */
export function normalizePythonName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

// -I: isolated (no working directory or user site on sys.path, no PYTHON* variables), so only the image speaks.
const PROBE = `
import json, os, platform, sys, importlib.metadata as metadata, importlib.util as util
found = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name and name not in found:
        found[name] = dist.version
info = sys.implementation.version
implementation = "%d.%d.%d" % (info.major, info.minor, info.micro)
if info.releaselevel != "final":
    implementation += info.releaselevel[0] + str(info.serial)
print(json.dumps({
    "venv": util.find_spec("ensurepip") is not None and util.find_spec("venv") is not None,
    "distributions": found,
    "markers": {
        "python_version": "%d.%d" % sys.version_info[:2],
        "python_full_version": platform.python_version(),
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_version": platform.version(),
        "platform_python_implementation": platform.python_implementation(),
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation,
    },
}))
`;

/** Reads the probe's output; null when it is not the probe's answer. */
export function parseImagePython(output: string): ImagePython | null {
  try {
    const parsed = imagePythonSchema.safeParse(JSON.parse(output));
    if (!parsed.success) return null;
    const distributions: Record<string, string> = {};
    for (const [name, version] of Object.entries(parsed.data.distributions))
      distributions[normalizePythonName(name)] ??= version;
    return { ...parsed.data, distributions };
  } catch {
    return null;
  }
}

/** The image's `python3` as the probe sees it; null when the image has none (or it could not be asked). */
export async function imagePython(
  docker: Docker,
  image: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ImagePython | null> {
  const output = await rememberedImageAnswer(docker, image, { name: IMAGE_PYTHON_FILE, env }, () =>
    runInImage(docker, image, ['sh', '-c', 'exec python3 -I -c "$1"', 'sh', PROBE]).catch(() => ''),
  );
  return parseImagePython(output);
}
