import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { round } from "./log.js";

// /proc readings

let clockTicks: number | undefined;
function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds of a process (all its threads) so far. */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / clkTck();
  } catch {
    return undefined;
  }
}

/** VmRSS and VmHWM (peak RSS) of a process, in MB. */
export function memoryOf(pid: number | undefined): { rssMB: number; peakRssMB: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rssMB: round(kb("VmRSS") / 1024), peakRssMB: round(kb("VmHWM") / 1024) };
  } catch {
    return undefined;
  }
}

/**
 * From /proc/<pid>/task/<tid>/schedstat: seconds on a CPU and seconds runnable but waiting for one
 * (run-queue wait), for the main thread (the JS event loop) and summed over all threads.
 */
export function schedOf(pid: number | undefined): { mainCpuS: number; mainWaitS: number; allWaitS: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const read = (tid: string): [number, number] => {
      const [cpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
      return [(cpu ?? 0) / 1e9, (wait ?? 0) / 1e9];
    };
    const [mainCpuS, mainWaitS] = read(String(pid));
    let allWaitS = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        allWaitS += read(tid)[1];
      } catch {
        // thread ended
      }
    }
    return { mainCpuS, mainWaitS, allWaitS };
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds of each thread of a process so far, by thread id. */
export function threadCpuOf(pid: number | undefined): Map<string, number> | undefined {
  if (pid === undefined) return undefined;
  try {
    const threads = new Map<string, number>();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        threads.set(tid, (Number(fields[11]) + Number(fields[12])) / clkTck());
      } catch {
        // thread ended
      }
    }
    return threads;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of a process's threads between two readings: its main thread, its busiest other thread
 * (for the service: the SQLite writer thread) and the rest (V8's GC helpers, libuv's pool, …).
 * Node names none of its threads, so the second is told by its CPU alone.
 */
function threadSplit(before: Map<string, number>, after: Map<string, number>, pid: number): { main: number; second: number; rest: number } {
  const spent = [...after].map(([tid, cpu]) => ({ tid, cpu: cpu - (before.get(tid) ?? 0) }));
  const main = spent.find((t) => t.tid === String(pid))?.cpu ?? 0;
  const others = spent.filter((t) => t.tid !== String(pid)).sort((a, b) => b.cpu - a.cpu);
  const second = others[0]?.cpu ?? 0;
  return { main, second, rest: others.slice(1).reduce((sum, t) => sum + t.cpu, 0) };
}

/** Bytes and calls of write(2)-family syscalls (files and sockets) and fsync-ish bytes to storage. */
export function ioOf(pid: number | undefined): { wchar: number; syscw: number; writeBytes: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)`, "m").exec(io)?.[1] ?? NaN);
    return { wchar: field("wchar"), syscw: field("syscw"), writeBytes: field("write_bytes") };
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds of some processes (by name) and of the bench itself over a measured window, with
 * scheduler figures that tell a busy process from a starved one on a loaded machine:
 *  - <name>Busy: CPU seconds / wall seconds (all threads; 1.0 = one core);
 *  - <name>MainBusy: the main thread alone (for Node: the event loop, where SQLite runs too);
 *  - <name>MainStarved: share of the wall time the main thread was runnable but waiting for a CPU.
 *    MainBusy + MainStarved ≈ 1 means the thread wanted a core all the time (CPU-bound); the rest
 *    is time it waited on I/O or the network.
 *  - <name>MainUsPerItem / SecondUsPerItem / RestUsPerItem: the CPU per item split by thread (threadSplit).
 *  - <name>WrittenMB / WrittenKBPerItem: bytes written by write syscalls (SQLite WAL and database
 *    pages, socket writes); <name>DiskWrittenMB: what reached the block device.
 */
export class CpuMeter {
  private readonly startCpu: Map<string, number | undefined>;
  private readonly startSched: Map<string, ReturnType<typeof schedOf>>;
  private readonly startIo: Map<string, ReturnType<typeof ioOf>>;
  private readonly startThreads: Map<string, ReturnType<typeof threadCpuOf>>;
  private readonly startWall = performance.now();

  constructor(private readonly pids: Readonly<Record<string, number | undefined>>) {
    this.startCpu = new Map(Object.entries(pids).map(([name, pid]) => [name, cpuSecondsOf(pid)]));
    this.startCpu.set("bench", benchCpu());
    this.startSched = new Map(Object.entries(pids).map(([name, pid]) => [name, schedOf(pid)]));
    this.startSched.set("bench", schedOf(process.pid));
    this.startIo = new Map(Object.entries(pids).map(([name, pid]) => [name, ioOf(pid)]));
    this.startThreads = new Map(Object.entries(pids).map(([name, pid]) => [name, threadCpuOf(pid)]));
  }

  /** `{wallS, <name>CpuS, <name>Busy, <name>UsPerItem, <name>MainBusy, <name>MainStarved}` since construction. */
  read(perItems?: number): Record<string, number> {
    const wallS = (performance.now() - this.startWall) / 1000;
    const out: Record<string, number> = { wallS: round(wallS, 2) };
    for (const [name, before] of this.startCpu) {
      const pid = name === "bench" ? process.pid : this.pids[name];
      const now = name === "bench" ? benchCpu() : cpuSecondsOf(pid);
      if (before === undefined || now === undefined) continue;
      const cpuS = now - before;
      out[`${name}CpuS`] = round(cpuS, 2);
      out[`${name}Busy`] = round(cpuS / wallS, 2);
      if (perItems !== undefined && perItems > 0) out[`${name}UsPerItem`] = round((cpuS * 1e6) / perItems, 1);
      const s0 = this.startSched.get(name);
      const s1 = schedOf(pid);
      if (s0 !== undefined && s1 !== undefined) {
        out[`${name}MainBusy`] = round((s1.mainCpuS - s0.mainCpuS) / wallS, 2);
        out[`${name}MainStarved`] = round((s1.mainWaitS - s0.mainWaitS) / wallS, 2);
      }
      const threads0 = this.startThreads.get(name);
      const threads1 = threadCpuOf(pid);
      if (threads0 !== undefined && threads1 !== undefined && pid !== undefined && perItems !== undefined && perItems > 0) {
        const split = threadSplit(threads0, threads1, pid);
        out[`${name}MainUsPerItem`] = round((split.main * 1e6) / perItems, 1);
        out[`${name}SecondUsPerItem`] = round((split.second * 1e6) / perItems, 1);
        out[`${name}RestUsPerItem`] = round((split.rest * 1e6) / perItems, 1);
      }
      const io0 = this.startIo.get(name);
      const io1 = ioOf(pid);
      if (io0 !== undefined && io1 !== undefined) {
        // written through write(2)/pwrite(2) (files and sockets), and what reached the block device
        out[`${name}WrittenMB`] = round((io1.wchar - io0.wchar) / 1048576, 1);
        out[`${name}DiskWrittenMB`] = round((io1.writeBytes - io0.writeBytes) / 1048576, 1);
        if (perItems !== undefined && perItems > 0) out[`${name}WrittenKBPerItem`] = round((io1.wchar - io0.wchar) / 1024 / perItems, 2);
      }
    }
    return out;
  }
}

/**
 * Items per second the service could do if its CPU cost per item stayed the same and it had one
 * core to itself: a load-independent reading of a figure measured on a busy machine.
 */
export function serviceCoreBoundPerSec(cpu: Record<string, number>): number | undefined {
  const us = cpu.serviceUsPerItem;
  return us === undefined || us <= 0 ? undefined : Math.round(1e6 / us);
}

function benchCpu(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}
