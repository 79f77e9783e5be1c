// What the numbers were measured on, recorded with every result file.
import { cpus, freemem, loadavg, release, totalmem, type as osType } from 'node:os';
import { readFileSync } from 'node:fs';

export interface MachineInfo {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryBytes: number;
  readonly freeMemoryBytes: number;
  readonly os: string;
  readonly distro: string;
  readonly node: string;
  /** Other work on the machine when the run started (the load generator shares it too). */
  readonly loadAverage1m: number;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    freeMemoryBytes: freemem(),
    os: `${osType()} ${release()}`,
    distro: readDistro(),
    node: process.version,
    loadAverage1m: loadavg()[0] ?? 0,
  };
}

function readDistro(): string {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    return /^PRETTY_NAME="?([^"\n]*)"?/m.exec(text)?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
