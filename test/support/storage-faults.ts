import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import Database from "better-sqlite3";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { TimerServiceProcess } from "./timer-service-process.js";
import { commandConsumersState } from "./command-consumers.js";

/**
 * Storage faults for the real service process: a lock held by another SQLite connection, a full
 * filesystem (tmpfs), a filesystem that turns read-only under the service (ext4 errors=remount-ro),
 * and writes that fail with EROFS for a while (syscall fault injection with strace). The mount-based
 * ones need root; `storageFaultSupport` says which ones this machine can run.
 */

const isRoot = process.getuid?.() === 0;

function succeeds(command: string, args: readonly string[]): boolean {
  try {
    execFileSync(command, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Probed once, synchronously, at import, so that `it.skipIf` can use it. */
export const storageFaultSupport = (() => {
  let tmpfs = false;
  if (isRoot) {
    const dir = mkdtempSync(join(tmpdir(), "timer-probe-"));
    tmpfs = succeeds("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]);
    if (tmpfs) succeeds("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  const ext4 = tmpfs && existsSync("/dev/loop-control") && succeeds("mkfs.ext4", ["-V"]) && succeeds("e2fsck", ["-V"]);
  const strace = isRoot && succeeds("strace", ["-V"]);
  return { tmpfs, ext4, strace };
})();

// ---------------------------------------------------------------------------------------------
// Filesystems

/** A tmpfs of `sizeBytes` on a fresh folder; `fill` takes every free byte, `unfill` gives them back. */
export class SmallTmpfs {
  private readonly fillerPath: string;

  private constructor(readonly dir: string) {
    this.fillerPath = join(dir, "filler");
  }

  static mount(sizeBytes: number): SmallTmpfs {
    const dir = mkdtempSync(join(tmpdir(), "timer-tmpfs-"));
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", dir]);
    return new SmallTmpfs(dir);
  }

  get freeBytes(): number {
    const stats = statfsSync(this.dir);
    return stats.bavail * stats.bsize;
  }

  /** Writes a filler file until the filesystem says ENOSPC; returns the bytes written. */
  fill(): number {
    const fd = openSync(this.fillerPath, "w");
    let written = 0;
    try {
      for (const chunkSize of [1 << 20, 64 << 10, 4 << 10, 512, 1]) {
        const chunk = Buffer.alloc(chunkSize, 0x55);
        for (;;) {
          try {
            written += writeSync(fd, chunk);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === "ENOSPC") break;
            throw error;
          }
        }
      }
    } finally {
      closeSync(fd);
    }
    return written;
  }

  unfill(): void {
    rmSync(this.fillerPath, { force: true });
  }

  /** Unmounts (lazily if something still holds it) and removes the folder. Never throws. */
  dispose(): void {
    if (!succeeds("umount", [this.dir])) succeeds("umount", ["-l", this.dir]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * An ext4 filesystem on a loop device, mounted with errors=remount-ro: `failFilesystem` makes the
 * kernel report an ext4 error, which remounts it read-only at once — the way a real server's data
 * disk goes read-only under a running process. (`mount -o remount,ro` is refused with EBUSY while a
 * process holds a file open for writing, so it cannot model this.) The emergency read-only state
 * lasts until the filesystem is unmounted: `repair` unmounts, runs e2fsck and mounts it again.
 */
export class LoopExt4 {
  private constructor(
    readonly dir: string,
    private readonly image: string,
  ) {}

  static create(sizeMb: number): LoopExt4 {
    const dir = mkdtempSync(join(tmpdir(), "timer-ext4-"));
    const image = `${dir}.img`;
    execFileSync("truncate", ["-s", `${sizeMb}M`, image]);
    execFileSync("mkfs.ext4", ["-q", "-F", image]);
    const fs = new LoopExt4(dir, image);
    fs.mountImage();
    return fs;
  }

  private mountImage(): void {
    execFileSync("mount", ["-o", "loop,errors=remount-ro", this.image, this.dir]);
  }

  private get device(): string {
    return execFileSync("findmnt", ["-no", "SOURCE", this.dir]).toString().trim();
  }

  get mountOptions(): string {
    return execFileSync("findmnt", ["-no", "OPTIONS", this.dir]).toString().trim();
  }

  /** True when a new file cannot be created (EROFS). */
  get readOnly(): boolean {
    try {
      closeSync(openSync(join(this.dir, ".probe"), "w"));
      rmSync(join(this.dir, ".probe"));
      return false;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EROFS") return true;
      throw error;
    }
  }

  /** Reports an ext4 error through sysfs; errors=remount-ro turns the filesystem read-only. */
  failFilesystem(): void {
    execFileSync("sh", ["-c", `echo storage-fault-test > /sys/fs/ext4/${basename(this.device)}/trigger_fs_error`]);
  }

  /** What an operator does once the service is stopped: unmount, e2fsck, mount. Returns e2fsck's exit code. */
  repair(attempt = 1): number {
    execFileSync("umount", [this.dir]);
    // umount detaches the loop device asynchronously; until it is gone its last writes (the
    // superblock with the error state) can land after e2fsck and make the next mount read-only.
    this.waitUntilDetached();
    let fsckCode = 0;
    try {
      execFileSync("e2fsck", ["-fy", this.image], { stdio: "ignore" });
    } catch (error) {
      fsckCode = (error as { status?: number }).status ?? -1;
      // 1: errors corrected; anything above 3 is a failure of e2fsck itself.
      if (fsckCode > 3) throw error;
    }
    this.mountImage();
    if (this.readOnly && attempt < 2) {
      // Seen once under a loaded CI run: the fresh mount came up read-only. The operator's answer
      // is the same procedure again; the service is stopped throughout, so this tests nothing less.
      console.warn(`loop ext4 mounted read-only after e2fsck (exit ${fsckCode}); repairing again`);
      return this.repair(attempt + 1);
    }
    return fsckCode;
  }

  /**
   * Waits for the loop device's auto-clear. A process in another mount namespace holding a copy of
   * the mount keeps it attached (see MOUNT_NAMESPACE_LOCK in host-lock.ts).
   */
  private waitUntilDetached(timeoutMs = 10_000): void {
    const deadline = Date.now() + timeoutMs;
    while (execFileSync("losetup", ["-j", this.image]).toString().trim() !== "") {
      if (Date.now() > deadline) throw new Error(`loop device of ${this.image} still attached after ${timeoutMs} ms`);
      execFileSync("sleep", ["0.05"]);
    }
  }

  dispose(): void {
    if (!succeeds("umount", [this.dir])) succeeds("umount", ["-l", this.dir]);
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.image, { force: true });
  }
}

/**
 * Makes the file writes of a running process fail with `errno` (default EROFS, what writes on a
 * read-only filesystem return) by attaching strace to all its threads and injecting the error into
 * pwrite64/pwritev/ftruncate/fallocate — SQLite's writes; stdout (pino, `write`) and sockets are
 * untouched. Detaching ends the fault: the same open files are writable again.
 */
export class WriteFaultInjector {
  private stderr = "";
  private exited = false;

  private constructor(private readonly child: ChildProcess) {
    child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    child.once("exit", () => (this.exited = true));
  }

  static async attach(pid: number, errno = "EROFS"): Promise<WriteFaultInjector> {
    const syscalls = "pwrite64,pwritev,pwritev2,ftruncate,fallocate";
    const child = spawn(
      "strace",
      ["-f", "-p", String(pid), "-o", "/dev/null", "-e", `trace=${syscalls}`, "-e", `inject=${syscalls}:error=${errno}`],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    const injector = new WriteFaultInjector(child);
    const deadline = Date.now() + 5_000;
    while (!injector.stderr.includes("attached")) {
      if (injector.exited) throw new Error(`strace exited: ${injector.stderr}`);
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`strace did not attach within 5 s: ${injector.stderr}`);
      }
      await sleep(20);
    }
    await sleep(100); // the other threads are attached right after the first
    return injector;
  }

  /** Detaches strace (SIGINT) and waits for it to exit. */
  async detach(): Promise<void> {
    if (this.exited) return;
    const exit = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGINT");
    await Promise.race([exit, sleep(5_000)]);
    if (!this.exited) this.child.kill("SIGKILL");
  }
}

// ---------------------------------------------------------------------------------------------
// Observing the service

/** Watches the service process: `exit` is set should it end (it must not during a fault). */
export function watchProcess(service: TimerServiceProcess): { exit: { code: number | null; signal: NodeJS.Signals | null } | undefined } {
  const state: { exit: { code: number | null; signal: NodeJS.Signals | null } | undefined } = { exit: undefined };
  service.exited().then(
    (exit) => (state.exit = exit),
    () => undefined,
  );
  return state;
}

export interface HttpSample {
  readonly atMs: number;
  readonly latencyMs: number;
  /** 0 when the request failed. */
  readonly status: number;
  readonly body: string;
}

/**
 * Requests one path back to back (`gapMs` between an answer and the next request), recording each
 * answer. With `timeoutMs` it behaves like a Kubernetes probe (default timeoutSeconds: 1): a request
 * not answered in time counts as failed (status 0) and the next one is sent.
 */
export class HttpProbe {
  readonly samples: HttpSample[] = [];
  private stopped = false;
  private readonly running: Promise<void>;
  private readonly gapMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly url: string,
    options: { gapMs?: number; timeoutMs?: number } = {},
  ) {
    this.gapMs = options.gapMs ?? 50;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const atMs = Date.now();
      let status = 0;
      let body: string;
      try {
        const response = await fetch(this.url, { signal: AbortSignal.timeout(this.timeoutMs) });
        status = response.status;
        body = await response.text();
      } catch (error) {
        body = String(error);
      }
      this.samples.push({ atMs, latencyMs: Date.now() - atMs, status, body });
      await sleep(this.gapMs);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  /** Samples answered (or timed out) in [fromMs, toMs). */
  answeredBetween(fromMs: number, toMs: number): HttpSample[] {
    return this.samples.filter((s) => s.atMs + s.latencyMs >= fromMs && s.atMs + s.latencyMs < toMs);
  }

  /**
   * Answers in [fromMs, toMs): how many, by status (0 = failed or timed out), the slowest, and how
   * long in total requests were waiting 1 s or more (the time the server did not answer).
   */
  stats(
    fromMs: number,
    toMs: number,
  ): { answers: number; statuses: Record<number, number>; maxLatencyMs: number; waits1sOrMore: number; unansweredMs: number } {
    const samples = this.answeredBetween(fromMs, toMs);
    const statuses: Record<number, number> = {};
    for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
    // Requests overlap only by `gapMs`, so the union of the long waits is about their sum.
    const slow = this.samples.filter((s) => s.latencyMs >= 1_000 && s.atMs < toMs && s.atMs + s.latencyMs > fromMs);
    const unansweredMs = slow.reduce((sum, s) => sum + Math.min(toMs, s.atMs + s.latencyMs) - Math.max(fromMs, s.atMs), 0);
    return {
      answers: samples.length,
      statuses,
      maxLatencyMs: Math.max(0, ...slow.map((s) => s.latencyMs), ...samples.map((s) => s.latencyMs)),
      waits1sOrMore: slow.length,
      unansweredMs,
    };
  }
}

export interface CommandQueueState {
  /** Messages still in the (work-queue) commands stream: not acked or termed yet. */
  readonly inStream: number;
  readonly ackPending: number;
  readonly redelivered: number;
  /** Not yet delivered at all. */
  readonly pending: number;
  /** Deliveries so far (consumer sequence); more than the stream sequence when messages were redelivered. */
  readonly deliveries: number;
  readonly lastStreamSeq: number;
}

/** The commands stream and the service's durable consumer, as the broker sees them. */
export class CommandQueue {
  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly consumer: string,
  ) {}

  static async of(connection: NatsConnection, stream = "TIMER_COMMANDS", consumer = "timer-service"): Promise<CommandQueue> {
    return new CommandQueue(await jetstreamManager(connection), stream, consumer);
  }

  async state(): Promise<CommandQueueState> {
    const [stream, consumers] = await Promise.all([
      this.jsm.streams.info(this.stream),
      commandConsumersState(this.jsm, this.stream, this.consumer),
    ]);
    return {
      inStream: stream.state.messages,
      ackPending: consumers.ackPending,
      redelivered: consumers.redelivered,
      pending: consumers.pending,
      deliveries: consumers.deliveries,
      lastStreamSeq: stream.state.last_seq,
    };
  }
}

/** serviceCallId → state of the tenant's timers, read with a read-only connection while the service runs. */
export function readTimerStates(dbPath: string, tenantId: string): Map<string, string> {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT service_call_id AS id, state FROM timer_schedules WHERE tenant_id = ?").all(tenantId) as {
      id: string;
      state: string;
    }[];
    return new Map(rows.map((row) => [row.id, row.state]));
  } finally {
    db.close();
  }
}

/**
 * Holds SQLite's write lock on the service's database from another connection (BEGIN IMMEDIATE),
 * as a second process (a migration, an operator's sqlite3 shell, a backup tool) would.
 */
export class WriteLockHolder {
  private constructor(private readonly db: Database.Database) {}

  static acquire(dbPath: string): WriteLockHolder {
    const db = new Database(dbPath, { fileMustExist: true });
    db.pragma("busy_timeout = 2000");
    db.prepare("BEGIN IMMEDIATE").run();
    return new WriteLockHolder(db);
  }

  release(): void {
    if (!this.db.open) return;
    if (this.db.inTransaction) this.db.prepare("ROLLBACK").run();
    this.db.close();
  }
}

/** Moves the WAL into the database file and truncates it to 0 bytes, so that the next commit must grow it. */
export function truncateWal(dbPath: string): { busy: number; log: number; checkpointed: number } {
  const db = new Database(dbPath, { fileMustExist: true });
  try {
    db.pragma("busy_timeout = 2000");
    return (db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number; log: number; checkpointed: number }[])[0]!;
  } finally {
    db.close();
  }
}

/** Parsed log lines (from line `fromLine` on) whose message contains `msg`. */
export function logsWith(service: TimerServiceProcess, msg: string, fromLine = 0): Record<string, any>[] {
  return service.logLines.slice(fromLine).flatMap((text) => {
    try {
      const line = JSON.parse(text) as Record<string, any>;
      return typeof line.msg === "string" && line.msg.includes(msg) ? [line] : [];
    } catch {
      return [];
    }
  });
}

/** The SQLite error code of a logged error (`err.code`), e.g. SQLITE_BUSY. */
export function errorCode(line: Record<string, any>): string | undefined {
  return typeof line.err?.code === "string" ? line.err.code : undefined;
}

import { sleep, waitFor } from "./wait-for.js";

export { sleep, waitFor };
