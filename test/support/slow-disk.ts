import { spawn, spawnSync, type ChildProcess } from "node:child_process";

/** SQLite's file writes and syncs (WAL frames, checkpoints, fsync/fdatasync of FULL). */
export const DISK_SYSCALLS = "pwrite64,pwritev,pwritev2,fsync,fdatasync";

/**
 * A slow disk for one running process: strace attaches to all its threads and holds every write
 * and sync syscall on entry for `delayUs` (`inject=…:delay_enter=`), as a saturated or throttled
 * volume would. Sockets (`write`/`sendmsg` on other syscalls) are untouched, and `--seccomp-bpf`
 * stops the process only on those syscalls. dm-delay would delay the device itself, but this
 * kernel has no device-mapper (`dmsetup targets` fails), so the delay is per syscall instead.
 */
export class SlowDiskInjector {
  private stderr = "";
  private exited = false;

  private constructor(private readonly child: ChildProcess) {
    child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    child.once("exit", () => (this.exited = true));
  }

  /** Undefined when strace can attach here, else why not (for a visible skip). */
  static unavailableReason(): string | undefined {
    if (process.platform !== "linux") return "strace needs Linux";
    if (process.getuid?.() !== 0) return "attaching strace needs root";
    const result = spawnSync("strace", ["-V"], { stdio: "ignore" });
    if (result.error !== undefined || result.status !== 0) return "strace is not installed (apt-get install -y strace)";
    return undefined;
  }

  static async attach(pid: number, delayUs: number, syscalls = DISK_SYSCALLS): Promise<SlowDiskInjector> {
    const child = spawn(
      "strace",
      [
        "-f",
        "--seccomp-bpf",
        "-p",
        String(pid),
        "-o",
        "/dev/null",
        "-e",
        `trace=${syscalls}`,
        "-e",
        `inject=${syscalls}:delay_enter=${delayUs}`,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    const injector = new SlowDiskInjector(child);
    const deadline = Date.now() + 5_000;
    while (!injector.stderr.includes("attached")) {
      if (injector.exited) throw new Error(`strace exited: ${injector.stderr}`);
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`strace did not attach within 5 s: ${injector.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 200)); // the other threads are attached right after the first
    return injector;
  }

  /** Detaches strace (SIGINT) and waits for it to exit: the disk is fast again. */
  async detach(): Promise<void> {
    if (this.exited) return;
    const exit = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGINT");
    await Promise.race([exit, new Promise((r) => setTimeout(r, 5_000))]);
    if (!this.exited) this.child.kill("SIGKILL");
  }
}
