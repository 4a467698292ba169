import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const LIBRARY_CANDIDATES = [
  "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/faketime/libfaketime.so.1",
];

/**
 * A wall-clock offset for one child process through libfaketime (Debian `faketime`), changeable
 * while the process runs: the offset lives in a file that libfaketime re-reads (cached for at most
 * 1 s). FAKETIME_DONT_FAKE_MONOTONIC=1 leaves CLOCK_MONOTONIC alone, so a change models an NTP step
 * or an operator's `date -s`: Date.now() jumps, setTimeout and performance.now() do not.
 */
export class FakeWallClock {
  private readonly dir = mkdtempSync(join(tmpdir(), "faketime-"));
  private readonly file = join(this.dir, "offset.rc");
  /** How long after `set` the process is sure to see the new offset (the library's cache). */
  static readonly SETTLE_MS = 1_200;

  constructor() {
    this.set(0);
  }

  static library(): string | undefined {
    return LIBRARY_CANDIDATES.find((path) => existsSync(path));
  }

  /** Undefined when libfaketime is here, else why not (for a visible skip). */
  static unavailableReason(): string | undefined {
    if (process.platform !== "linux") return "libfaketime needs Linux";
    if (FakeWallClock.library() === undefined) return "libfaketime is not installed (apt-get install -y faketime)";
    return undefined;
  }

  /** Environment for the child process. */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: FakeWallClock.library()!,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_CACHE_DURATION: "1",
      FAKETIME_DONT_FAKE_MONOTONIC: "1",
      // File times stay true (SQLite and the logs do not care, but nothing should be surprised).
      NO_FAKE_STAT: "1",
    };
  }

  /** Sets the wall clock `offsetMs` (a whole number of seconds) away from the real one. */
  set(offsetMs: number): void {
    const seconds = Math.round(offsetMs / 1000);
    writeFileSync(this.file, `${seconds >= 0 ? "+" : ""}${seconds}\n`);
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
