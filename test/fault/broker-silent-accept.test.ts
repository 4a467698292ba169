import { afterEach, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { FreezeProxy } from "../support/freeze-proxy.js";

/**
 * A reconnect attempt that lands on a port which accepts the TCP connection but never speaks (a
 * container engine's port forwarder before the broker behind it listens: the published-port
 * failures of ADR-0007) must not hold the service's reconnect for the NATS client's default 20 s
 * connect time-out. The broker restarts behind a relay that swallows the connections made while
 * it is down; once it is up again the service must be ready within a few seconds.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error: unknown) => console.error(error));
});

describe("broker port that accepts and stays silent during a restart", () => {
  it("when reconnect attempts are accepted by a silent listener while the broker restarts, then the service reconnects within 8 s of the broker being back", async () => {
    const nats = await NatsServerProcess.start();
    cleanups.push(() => nats.dispose());
    const proxy = await FreezeProxy.start(nats.port);
    cleanups.push(() => proxy.close());
    const service = await TimerServiceProcess.start(`nats://127.0.0.1:${proxy.port}`, { TIMER_STORE: "sqlite" });
    cleanups.push(() => service.dispose());

    proxy.swallowNew = true;
    await nats.stop(true);
    await proxy.close().catch(() => undefined); // drops the live connection, as a container stop does
    const reopened = await FreezeProxy.start(nats.port, proxy.port);
    cleanups.push(() => reopened.close());
    reopened.swallowNew = true;
    await service.waitForReadyz(503, 10_000);
    // Let reconnect attempts land on the silent listener.
    await new Promise((r) => setTimeout(r, 1_500));
    await nats.restart();
    reopened.swallowNew = false;
    const backAtMs = Date.now();
    await service.waitForReadyz(200, 30_000);
    const readyAfterMs = Date.now() - backAtMs;
    console.info(`reconnect after a silent accept: ready ${readyAfterMs} ms after the broker was back`);
    expect(readyAfterMs).toBeLessThan(8_000);
  }, 60_000);
});
