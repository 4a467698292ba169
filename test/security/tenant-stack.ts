import { join } from "node:path";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { repoRoot } from "../ops/ops-support.js";
import { waitUntil } from "../support/wait-for.js";

/** The shipped multi-tenant broker configuration, run as is (NatsServerProcess adds -js -sd). */
export const TENANT_ACCOUNTS_CONF = join(repoRoot, "deploy/nats/tenant-accounts.conf");

/** Passwords the configuration reads from the server's environment (the child inherits ours). */
export const TENANT_PASSWORDS = {
  TIMER_SERVICE_NATS_PASSWORD: "service-secret-7f3a",
  ACME_NATS_PASSWORD: "acme-secret-91c2",
  GLOBEX_NATS_PASSWORD: "globex-secret-5d8e",
} as const;

export type Tenant = "acme" | "globex";

const PASSWORD_OF: Record<Tenant, string> = { acme: TENANT_PASSWORDS.ACME_NATS_PASSWORD, globex: TENANT_PASSWORDS.GLOBEX_NATS_PASSWORD };

/** Sets the password variables for the duration of a test file; returns the undo. */
export function exportTenantPasswords(): () => void {
  const saved = Object.fromEntries(Object.keys(TENANT_PASSWORDS).map((name) => [name, process.env[name]]));
  Object.assign(process.env, TENANT_PASSWORDS);
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

export function connectTenant(url: string, tenant: Tenant): Promise<NatsConnection> {
  return connect({ servers: url, user: tenant, pass: PASSWORD_OF[tenant] });
}

/** A connection in the service's account: the operator's view of streams and consumers. */
export function connectOperator(url: string): Promise<NatsConnection> {
  return connect({ servers: url, user: "timer-service", pass: TENANT_PASSWORDS.TIMER_SERVICE_NATS_PASSWORD });
}

/** The real service (dist/main.js) logged in as the service account's user. */
export function startTimerService(url: string, env: Record<string, string> = {}): Promise<TimerServiceProcess> {
  return TimerServiceProcess.start(url, {
    TIMER_NATS_USER: "timer-service",
    TIMER_NATS_PASSWORD: TENANT_PASSWORDS.TIMER_SERVICE_NATS_PASSWORD,
    TIMER_POLLING_INTERVAL: "100",
    ...env,
  });
}

const encoder = new TextEncoder();

/** A ScheduleTimer envelope for `tenant`, due `dueInMs` from now. */
export function scheduleTimer(tenant: Tenant, serviceCallId: string, dueInMs: number): Uint8Array {
  return encoder.encode(
    JSON.stringify({
      id: `cmd-${serviceCallId}`,
      type: "ScheduleTimer",
      tenantId: tenant,
      timestampMs: Date.now(),
      payload: { tenantId: tenant, serviceCallId, dueAt: new Date(Date.now() + dueInMs).toISOString() },
    }),
  );
}

/** Schedules timers for `tenant` with a JetStream publish each (ack awaited); returns their ids. */
export async function scheduleTimers(
  nc: NatsConnection,
  tenant: Tenant,
  label: string,
  count: number,
  dueInMs: number,
  msgID?: string,
): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${label}-${i + 1}`);
  for (const id of ids) {
    const ack = await jetstream(nc).publish(
      `timer.commands.schedule.${tenant}`,
      scheduleTimer(tenant, id, dueInMs),
      msgID === undefined ? undefined : { msgID },
    );
    if (ack.duplicate) throw new Error(`the stream took ${id} for a duplicate`);
  }
  return ids;
}

/** Collects the serviceCallIds of the DueTimeReached events a tenant receives on its own subject. */
export class DueEventCollector {
  private readonly seen = new Set<string>();
  private readonly waiters = new Set<() => void>();
  /** Every message the subscription received, as text (to show what else arrived). */
  readonly raw: string[] = [];

  private constructor(private readonly sub: Subscription) {
    void (async () => {
      for await (const msg of sub) {
        this.raw.push(msg.string());
        try {
          const event = JSON.parse(msg.string()) as { type?: string; payload?: { serviceCallId?: string } };
          if (event.type === "DueTimeReached" && event.payload?.serviceCallId !== undefined) this.seen.add(event.payload.serviceCallId);
        } catch {
          // not an event: kept in raw only
        }
        for (const wake of this.waiters) wake();
      }
    })();
  }

  static async start(nc: NatsConnection, tenant: Tenant): Promise<DueEventCollector> {
    const collector = new DueEventCollector(nc.subscribe(`timer.events.due.${tenant}`));
    await nc.flush(); // the server has the subscription before anything fires
    return collector;
  }

  /** Resolves when every id has fired; rejects with the ids still missing after `timeoutMs`. */
  async fired(ids: readonly string[], timeoutMs = 15_000): Promise<void> {
    const missing = (): string[] => ids.filter((id) => !this.seen.has(id));
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (missing().length > 0) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`DueTimeReached never arrived for ${missing().join(", ")}; received: ${this.raw.join(" | ") || "nothing"}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  close(): void {
    this.sub.unsubscribe();
  }
}

/** Messages stored in a stream. */
export async function storedMessages(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

/** Polls until `probe` is true; fails after `timeoutMs` with `what` (the argument order of these tests). */
export function until(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  return waitUntil(probe, timeoutMs, what);
}

/** The server, the operator's connection and both tenants, for one test file. */
export interface TenantStack {
  readonly server: NatsServerProcess;
  readonly operator: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly acme: NatsConnection;
  readonly globex: NatsConnection;
  dispose(): Promise<void>;
}

export async function startTenantStack(): Promise<TenantStack> {
  const server = await NatsServerProcess.start(["-c", TENANT_ACCOUNTS_CONF]);
  const operator = await connectOperator(server.url);
  const [acme, globex] = await Promise.all([connectTenant(server.url, "acme"), connectTenant(server.url, "globex")]);
  return {
    server,
    operator,
    jsm: await jetstreamManager(operator),
    acme,
    globex,
    async dispose() {
      await Promise.all([acme.close(), globex.close(), operator.close()]);
      await server.dispose();
    },
  };
}
