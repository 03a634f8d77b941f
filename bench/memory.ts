/**
 * agent-runner's own memory: `process.memoryUsage().rss` sampled on a timer, and the kernel's high-water mark
 * (VmHWM in /proc/self/status), which sees peaks between samples. Writing `5` to /proc/self/clear_refs resets
 * the high-water mark (Linux 4.0+), so each measured section gets its own peak.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const MIB = 1024 * 1024;

/** VmHWM in bytes, or null where /proc is not there. */
export function peakRssFromKernel(): number | null {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return match?.[1] === undefined ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}

/** Resets VmHWM to the current RSS; false when the kernel does not allow it. */
export function resetKernelPeak(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

export interface MemoryPeak {
  /** Highest sampled `process.memoryUsage().rss`. */
  sampledPeakMiB: number;
  /** VmHWM since the reset; null when it could not be read or reset. */
  kernelPeakMiB: number | null;
  samples: number;
}

/** Samples RSS every `intervalMs` until `stop()`. */
export class RssSampler {
  private peak = process.memoryUsage().rss;
  private samples = 1;
  private readonly timer: NodeJS.Timeout;
  private readonly kernelReset: boolean;

  /** `resetKernelPeak: false` keeps VmHWM over the process's whole life. */
  constructor(intervalMs = 5, options: { resetKernelPeak?: boolean } = {}) {
    this.kernelReset = options.resetKernelPeak === false ? false : resetKernelPeak();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    this.samples += 1;
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
  }

  stop(): MemoryPeak {
    clearInterval(this.timer);
    this.sample();
    const kernel = this.kernelReset ? peakRssFromKernel() : null;
    return {
      sampledPeakMiB: Math.round((this.peak / MIB) * 10) / 10,
      kernelPeakMiB: kernel === null ? null : Math.round((kernel / MIB) * 10) / 10,
      samples: this.samples,
    };
  }
}
