import { createServer } from "node:net";

/**
 * Ports are chosen here and bound later by another process (a service, a Postgres), so the port must
 * not be taken meanwhile: they are drawn below the kernel's ephemeral range (which outgoing
 * connections take their local ports from, and `listen(0)` draws from), and never handed out twice
 * by this process.
 */
const RANGE = { from: 20_000, to: 32_000 };
const handedOut = new Set<number>();

/** A TCP port that was free a moment ago on 127.0.0.1, and not handed out before by this process. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = RANGE.from + Math.floor(Math.random() * (RANGE.to - RANGE.from));
    if (handedOut.has(port) || !(await isFree(port))) continue;
    handedOut.add(port);
    return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
