import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP relay on 127.0.0.1 that can freeze: it stops reading and forwarding in both directions but
 * closes nothing, so both ends see a peer that is connected and silent (a partition or a frozen
 * server, with no RST or FIN). Connections accepted while frozen are held unconnected until the thaw.
 * On thaw everything held flows on in order.
 */
export class FreezeProxy {
  #frozen = false;
  /** Accept new connections and never answer them (a port held by something that does not forward yet). */
  swallowNew = false;
  readonly #sockets = new Set<Socket>();
  readonly #waiting: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  /** Relays 127.0.0.1:`listenPort` (0: a free one) to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number, listenPort = 0): Promise<FreezeProxy> {
    let proxy: FreezeProxy | undefined;
    const server = createServer((inbound) => proxy!.accept(inbound, "127.0.0.1"));
    await new Promise<void>((resolve) => server.listen(listenPort, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    proxy = new FreezeProxy(server, address.port, targetPort);
    return proxy;
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): void {
    this.#frozen = true;
    for (const socket of this.#sockets) socket.pause();
  }

  thaw(): void {
    this.#frozen = false;
    for (const socket of this.#sockets) socket.resume();
    for (const start of this.#waiting.splice(0)) start();
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(inbound: Socket, targetHost: string): void {
    this.#sockets.add(inbound);
    inbound.pause();
    if (this.swallowNew) return;
    const start = (): void => {
      const outbound = connect(this.targetPort, targetHost);
      this.#sockets.add(outbound);
      const close = (): void => {
        inbound.destroy();
        outbound.destroy();
        this.#sockets.delete(inbound);
        this.#sockets.delete(outbound);
      };
      inbound
        .on("data", (chunk: Buffer) => outbound.write(chunk))
        .on("error", close)
        .on("close", close);
      outbound
        .on("data", (chunk: Buffer) => inbound.write(chunk))
        .on("error", close)
        .on("close", close);
      if (this.#frozen) outbound.pause();
      else inbound.resume();
    };
    if (this.#frozen) this.#waiting.push(start);
    else start();
  }
}
