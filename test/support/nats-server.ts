import { startNats, type NatsServer } from "./test-infrastructure.js";

/**
 * A real `nats-server -js` for one test file: its own free port and its own store folder, so tests
 * can stop and restart it (fault tests) and never share state. It comes from the test
 * infrastructure provider (test/support/test-infrastructure.ts): a local process by default
 * (NATS_SERVER_BIN, else `nats-server` on PATH), a container when TEST_CONTAINERS=1 or DOCKER_HOST
 * is set.
 */
export class NatsServerProcess {
  private constructor(private readonly server: NatsServer) {}

  get port(): number {
    return this.server.port;
  }

  get storeDir(): string {
    return this.server.storeDir;
  }

  get url(): string {
    return this.server.url;
  }

  /** Whether the next (re)start enables JetStream; a test may turn it on for a restart. */
  get jetstream(): boolean {
    return this.server.jetstream;
  }

  set jetstream(value: boolean) {
    this.server.jetstream = value;
  }

  /** Starts a server on a free port with a fresh store folder. `extraArgs` e.g. ["-c", "conf"]. */
  static async start(extraArgs: readonly string[] = [], options: { jetstream?: boolean } = {}): Promise<NatsServerProcess> {
    return new NatsServerProcess(await startNats({ extraArgs, jetstream: options.jetstream ?? true }));
  }

  /** (Re)starts the server on the same port and store folder. */
  restart(): Promise<void> {
    return this.server.restart();
  }

  /** Stops the server (SIGKILL when `hard`), keeping its store folder for a restart. */
  stop(hard = false): Promise<void> {
    return this.server.stop(hard);
  }

  /** Stops the server and removes its store folder. */
  dispose(): Promise<void> {
    return this.server.dispose();
  }
}
