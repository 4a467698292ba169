import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * One address for a database whose server changes: a TCP relay on 127.0.0.1 standing for the
 * virtual IP or DNS name of a managed Postgres. `pointAt` moves it to another server the way a
 * failover moves the address: connections to the old one break (the service reconnects), new ones
 * reach the new one.
 */
export class VirtualIpProxy {
  readonly #connections = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private targetPort: number,
  ) {}

  static async start(targetPort: number): Promise<VirtualIpProxy> {
    let proxy: VirtualIpProxy | undefined;
    const server = createServer((inbound) => proxy!.relay(inbound));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    proxy = new VirtualIpProxy(server, address.port, targetPort);
    return proxy;
  }

  /** Sends new connections to `targetPort` and breaks the open ones. */
  pointAt(targetPort: number): void {
    this.targetPort = targetPort;
    for (const socket of this.#connections) socket.destroy();
  }

  async close(): Promise<void> {
    for (const socket of this.#connections) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(inbound: Socket): void {
    const outbound = connect(this.targetPort, "127.0.0.1");
    this.#connections.add(inbound);
    this.#connections.add(outbound);
    const close = (): void => {
      inbound.destroy();
      outbound.destroy();
      this.#connections.delete(inbound);
      this.#connections.delete(outbound);
    };
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    inbound.on("error", close).on("close", close);
    outbound.on("error", close).on("close", close);
  }
}
