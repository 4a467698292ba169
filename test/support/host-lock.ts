import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A lock across the test processes of one machine (vitest runs files in parallel workers), held by
 * a directory that only one process can create. A holder that died without releasing it is found by
 * its pid and its lock taken over. Resolves to the release function.
 */
export async function acquireHostLock(name: string, timeoutMs = 300_000): Promise<() => void> {
  const dir = join(tmpdir(), `timer-test-${name}.lock`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, "pid"), String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (!holderAlive(dir)) rmSync(dir, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`host lock ${name} still held after ${timeoutMs} ms`);
    else await new Promise((r) => setTimeout(r, 200));
  }
}

function holderAlive(dir: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dir, "pid"), "utf8"));
  } catch {
    return true; // just created, pid not written yet
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * Serializes the tests that mount a loop filesystem with those that start processes in network
 * namespaces: `ip netns exec` gives its process a copy of every mount of the moment, which keeps a
 * loop ext4 mounted (and its loop device attached) after the test unmounts it, until that process
 * exits; e2fsck and a new mount of the image then race the old instance (seen in fresh-clone CI runs).
 */
export const MOUNT_NAMESPACE_LOCK = "mount-namespaces";
