/** What the figures were measured on. */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { docker } from './docker-cli.js';

export interface MachineInfo {
  date: string;
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  kernel: string;
  dockerServer: string;
  dockerClient: string;
  node: string;
  /** 1, 5 and 15 minute load averages when the run started and ended: other work on the machine skews figures. */
  loadAverageAtStart: number[];
  loadAverageAtEnd?: number[];
}

/** The load averages, two decimals. */
export function loadAverage(): number[] {
  return os.loadavg().map((value) => Math.round(value * 100) / 100);
}

async function osName(): Promise<string> {
  try {
    const text = await readFile('/etc/os-release', 'utf8');
    return /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(text)?.[1] ?? os.type();
  } catch {
    return os.type();
  }
}

export async function machineInfo(): Promise<MachineInfo> {
  const versions = await docker(['version', '--format', '{{.Server.Version}} {{.Client.Version}}']);
  const [server = 'unknown', client = 'unknown'] = versions.split(' ');
  return {
    date: new Date().toISOString(),
    cores: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: await osName(),
    kernel: os.release(),
    dockerServer: server,
    dockerClient: client,
    node: process.version,
    loadAverageAtStart: loadAverage(),
  };
}
