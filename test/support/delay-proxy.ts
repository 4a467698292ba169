import { createServer, connect, type Server, type Socket } from "node:net";

/**
 * A TCP relay on 127.0.0.1 that holds every chunk `delayMs` in each direction before passing it on,
 * in order: a stand-in for `tc netem delay` where the kernel has no sch_netem (this machine's
 * Firecracker kernel has no modules). Loss is left to the kernel (iptables `statistic` DROP), so
 * TCP retransmits as it would on a lossy link. Delay can be switched on and off while connected.
 */
export class DelayProxy {
  delayMs = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<DelayProxy> {
    let proxy: DelayProxy | undefined;
    const server = createServer((inbound) => {
      const outbound = connect(targetPort, "127.0.0.1");
      proxy!.sockets.add(inbound);
      proxy!.sockets.add(outbound);
      proxy!.pipe(inbound, outbound);
      proxy!.pipe(outbound, inbound);
      const close = (): void => {
        inbound.destroy();
        outbound.destroy();
        proxy!.sockets.delete(inbound);
        proxy!.sockets.delete(outbound);
      };
      inbound.on("error", close).on("close", close);
      outbound.on("error", close).on("close", close);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    proxy = new DelayProxy(server, address.port);
    return proxy;
  }

  /** Release times never go backwards, so a change of delay cannot reorder a stream's bytes. */
  private pipe(from: Socket, to: Socket): void {
    let lastReleaseAt = 0;
    from.on("data", (chunk: Buffer) => {
      const now = Date.now();
      const releaseAt = Math.max(now + this.delayMs, lastReleaseAt);
      lastReleaseAt = releaseAt;
      if (releaseAt <= now) return void to.write(chunk);
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, releaseAt - now);
    });
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
