import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";

// A client that opens thousands of sockets and never finishes a request (~20,000 such
// sockets made /readyz stop answering; a slowloris request stayed open 73 s). The test process may
// hold 20,000 descriptors (ulimit -n here), so it opens 19,000; the service runs with 4,096, a
// common default, so that without a connection cap the sockets would exhaust its descriptors.

const IDLE_SOCKETS = 19_000;
const CHUNK = 1_000;
const SERVICE_FD_LIMIT = 4_096;

let nats: NatsServerProcess;
let service: TimerServiceProcess;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(
    nats.url,
    { TIMER_LOG_LEVEL: "warn" },
    {
      command: ["/bin/sh", "-c", `ulimit -n ${SERVICE_FD_LIMIT} && exec "$0" dist/main.js`, process.execPath],
    },
  );
});

afterAll(async () => {
  await service?.dispose();
  await nats?.dispose();
});

/** Opens a socket to the service's HTTP port; resolves once connected (or failed). */
function openSocket(port: number, onClose: () => void): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => undefined); // a reset by the server is expected
    socket.resume();
    socket.once("close", onClose);
    socket.once("connect", () => resolve(socket));
    socket.once("error", () => resolve(socket));
  });
}

/** Status of GET `path`, or the error, within `timeoutMs`. */
async function probe(path: string, timeoutMs: number): Promise<number | string> {
  return fetch(`${service.baseUrl}${path}`, { signal: AbortSignal.timeout(timeoutMs) }).then(
    (response) => response.status,
    (error: unknown) => String(error),
  );
}

describe("health endpoints under socket exhaustion", () => {
  it(`when a client holds ${IDLE_SOCKETS} idle or half-sent sockets, then /healthz and /readyz still answer within 3 s`, async () => {
    const sockets: Socket[] = [];
    let closedByServer = 0;
    try {
      for (let opened = 0; opened < IDLE_SOCKETS; opened += CHUNK) {
        const chunk = await Promise.all(Array.from({ length: CHUNK }, () => openSocket(service.httpPort, () => (closedByServer += 1))));
        // Half of them start a request and never finish it.
        chunk.forEach((socket, i) => i % 2 === 0 && !socket.destroyed && socket.write("GET /readyz HTTP/1.1\r\nHost: x\r\n"));
        sockets.push(...chunk);
      }

      expect(await probe("/healthz", 3_000)).toBe(200);
      expect(await probe("/readyz", 3_000)).toBe(200);
      // The cap closed the least recently used sockets instead of letting them pile up.
      expect(closedByServer).toBeGreaterThan(IDLE_SOCKETS / 2);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it("when a slowloris client sends one header line per second and never ends its headers, then the service closes the socket within 8 s", async () => {
    const socket = connect(service.httpPort, "127.0.0.1");
    socket.on("error", () => undefined);
    socket.resume(); // reads the server's 408, so that its close shows here
    const startedAt = Date.now();
    const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - startedAt)));
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => socket.write(`X-Slow-${Date.now()}: 1\r\n`), 1_000);
    try {
      const closedAfterMs = await Promise.race([closed, new Promise<string>((r) => setTimeout(() => r("still open after 8 s"), 8_000))]);

      expect(closedAfterMs).toBeLessThan(8_000);
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
  });

  it("when a client connects and sends nothing, then the service closes the socket within 8 s", async () => {
    const socket = connect(service.httpPort, "127.0.0.1");
    socket.on("error", () => undefined);
    socket.resume(); // reads the server's 408, so that its close shows here
    const startedAt = Date.now();
    const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - startedAt)));
    try {
      const closedAfterMs = await Promise.race([closed, new Promise<string>((r) => setTimeout(() => r("still open after 8 s"), 8_000))]);

      expect(closedAfterMs).toBeLessThan(8_000);
    } finally {
      socket.destroy();
    }
  });
});
