/**
 * Loading the configuration: defaults < agent-runner.yaml < environment < flags.
 * `validateConfig` is pure; reading the file is separate so tests can feed raw objects.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type * as z from 'zod';
import { UserError } from '../errors.js';
import { checkConfigPaths } from './config-paths.js';
import { configSchema, type Config } from './schema.js';

export const CONFIG_FILE_NAME = 'agent-runner.yaml';

type Plain = Record<string, unknown>;

/** One layer of configuration and where it came from, for error messages. */
export interface ConfigLayer {
  source: string;
  values: Plain;
}

/** Formats a zod issue path as `dod.checks[1].command`. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out || '(top level)';
}

/** Turns zod issues into `path: message` lines, one unknown key per line. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`${formatPath([...issue.path, key])}: unknown key`);
    } else if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) {
      lines.push(`${formatPath(issue.path)}: Required`);
    } else {
      lines.push(`${formatPath(issue.path)}: ${issue.message}`);
    }
  }
  return lines;
}

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep merge of plain objects; arrays and scalars of later layers replace earlier ones. */
export function mergeLayers(layers: readonly Plain[]): Plain {
  const out: Plain = {};
  for (const layer of layers) mergeInto(out, layer);
  return out;
}

function mergeInto(target: Plain, source: Plain): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const existing = target[key];
    if (isPlain(value) && isPlain(existing)) mergeInto(existing, value);
    else target[key] = isPlain(value) ? mergeLayers([value]) : value;
  }
}

function collectPaths(value: Plain, prefix = ''): string[] {
  return Object.entries(value).flatMap(([key, inner]) => {
    const dotted = prefix ? `${prefix}.${key}` : key;
    return isPlain(inner) ? collectPaths(inner, dotted) : inner === undefined ? [] : [dotted];
  });
}

/**
 * Validates merged layers. Pure. Throws a `UserError` (`config_invalid`, exit 2) whose message has one
 * `path: problem` line per issue and names the layer (file, environment, flags) the bad value came from.
 */
export function validateConfig(layers: readonly ConfigLayer[]): Config {
  const merged = mergeLayers(layers.map((layer) => layer.values));
  // Parsed once per process: zod's compiled fast path would cost more to build (~4 ms at every start) than it saves.
  const result = configSchema.safeParse(merged, { jitless: true });
  if (result.success) return result.data;
  const origins = new Map<string, string>();
  for (const layer of layers)
    for (const dotted of collectPaths(layer.values)) origins.set(dotted, layer.source);
  const lines = formatIssues(result.error.issues).map((line) => {
    const dotted = line.slice(0, line.indexOf(':')).replace(/\[\d+\].*$/, '');
    const origin =
      origins.get(dotted) ?? [...origins.entries()].find(([key]) => key.startsWith(`${dotted}.`))?.[1];
    return origin ? `${line} (in ${origin})` : line;
  });
  throw new UserError('config_invalid', `Invalid configuration:\n  ${lines.join('\n  ')}`, {
    details: { issues: lines },
  });
}

/** Reads `agent-runner.yaml` from the repository root; absent file → empty layer. Invalid YAML → exit 2. */
export async function readConfigFile(repoRoot: string, fileName = CONFIG_FILE_NAME): Promise<ConfigLayer> {
  const file = path.resolve(repoRoot, fileName);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { source: file, values: {} };
    throw new UserError('config_invalid', `Cannot read ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const firstError = document.errors[0];
  if (firstError) {
    const position = firstError.linePos?.[0];
    const where = position ? `${file}:${position.line}:${position.col}` : file;
    throw new UserError(
      'config_invalid',
      `${where}: invalid YAML: ${firstError.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`,
      {
        cause: firstError,
      },
    );
  }
  const values: unknown = document.toJS();
  if (values === null || values === undefined) return { source: file, values: {} };
  if (!isPlain(values)) {
    throw new UserError('config_invalid', `${file}: expected a map of settings at the top level`);
  }
  return { source: file, values };
}

/**
 * The environment variables that set a configuration key: the standard OpenAI one plus AGENT_RUNNER_*
 * overrides (docs/configuration.md lists them from here). The forge's two are for a self-hosted forge named
 * outside the repository (CI): `run --repo` reads no config before its clone.
 */
export const ENVIRONMENT_KEYS = {
  OPENAI_BASE_URL: 'meta.baseUrl',
  AGENT_RUNNER_MODEL: 'meta.model',
  AGENT_RUNNER_WORKER: 'worker.type',
  AGENT_RUNNER_WORKER_MODEL: 'worker.model',
  AGENT_RUNNER_WORKER_BASE_URL: 'worker.baseUrl',
  AGENT_RUNNER_IMAGE: 'sandbox.image',
  AGENT_RUNNER_NETWORK: 'sandbox.network',
  AGENT_RUNNER_RUNTIME: 'sandbox.runtime',
  AGENT_RUNNER_CONTROL_URL: 'control.url',
  AGENT_RUNNER_CONTROL_LEASE_SECONDS: 'control.leaseSeconds',
  AGENT_RUNNER_FORGE: 'deliver.forge',
  AGENT_RUNNER_FORGE_API_URL: 'deliver.apiUrl',
  AGENT_RUNNER_WEBHOOK_SECRET: 'forge.webhookSecret',
  AGENT_RUNNER_FORGE_LABEL: 'forge.label',
} as const;

/** The environment layer: each variable of {@link ENVIRONMENT_KEYS} that is set and not empty. */
export function environmentLayer(env: NodeJS.ProcessEnv): ConfigLayer {
  const values: Plain = {};
  for (const [name, dotted] of Object.entries(ENVIRONMENT_KEYS)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const [group, key] = dotted.split('.') as [string, string];
    const inner = (values[group] ??= {}) as Plain;
    inner[key] = value;
  }
  return { source: 'environment', values };
}

export interface LoadConfigOptions {
  repoRoot: string;
  env?: NodeJS.ProcessEnv;
  /** Values from command-line flags, already shaped like the config file. */
  flags?: Plain;
  /** An explicit `--config FILE`. */
  configFile?: string;
}

/** Reads and validates the whole configuration. */
export async function loadConfig(options: LoadConfigOptions): Promise<Config> {
  const fileLayer = await readConfigFile(options.repoRoot, options.configFile ?? CONFIG_FILE_NAME);
  const config = validateConfig([
    fileLayer,
    environmentLayer(options.env ?? process.env),
    { source: 'command-line flags', values: options.flags ?? {} },
  ]);
  await checkConfigPaths(config, options.repoRoot);
  return config;
}
