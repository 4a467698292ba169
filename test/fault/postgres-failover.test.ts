import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { EventStreamReader } from "../support/event-stream-reader.js";
import { PostgresReplicaSet, SYNCHRONOUS_STANDBY_OPTION, replicaSetUnavailable } from "../support/postgres-replica-set.js";
import { VirtualIpProxy } from "../support/virtual-ip-proxy.js";
import { uniqueSchema } from "../support/test-postgres.js";
import { waitUntil } from "../support/wait-for.js";
import { TENANT, commandBacklog, earlyEvents, planTimers, scheduleAll } from "./fault-support.js";
import { CommandLoad, msUntilReadyz, readyzStatus } from "./command-load.js";

/**
 * CONTRACT §18, failover: a primary with a streaming standby on this machine, the service reaching
 * it through one address (VirtualIpProxy, the virtual IP of a managed Postgres). The primary dies
 * (`kill -9` of all its processes) while a burst fires and commands arrive; the standby is promoted
 * and the address moved to it. /readyz is 503 meanwhile and 200 within 10 s of the promotion; with a
 * synchronous standby every acked command keeps its effect and every timer fires. With an
 * asynchronous one the test measures what was lost instead (docs/operations/failover.md).
 * And §16: a primary that waits for a synchronous standby it no longer has answers reads but never
 * finishes a commit; /readyz must be 503 within 2 × TIMER_DATABASE_TIMEOUT_MS and stay so.
 */

const TIMEOUT_MS = 2_000;
/** Large enough that its firing still commits when the primary dies. */
const BURST = 2_000;
/** Commands sent during the failover fall due after it. */
const LOAD_DUE_LEAD_MS = 25_000;
/** The replication stream of the asynchronous standby is held this long each way. */
const ASYNC_REPLICATION_DELAY_MS = 200;
/** How long the address points at a dead primary before the standby is promoted. */
const DEAD_PRIMARY_MS = 2_000;

const unavailable = replicaSetUnavailable();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error: unknown) => console.error("cleanup failed", error));
});

interface Deployment {
  readonly set: PostgresReplicaSet;
  readonly proxy: VirtualIpProxy;
  readonly service: TimerServiceProcess;
  readonly client: TimerClient;
  readonly reader: EventStreamReader;
}

async function deploy(synchronous: boolean, standbyOptions = "", replicationDelayMs = 0): Promise<Deployment> {
  const set = await PostgresReplicaSet.start({ synchronous, standbyOptions, replicationDelayMs });
  cleanups.push(() => set.dispose());
  const proxy = await VirtualIpProxy.start(set.primary.port);
  cleanups.push(() => proxy.close());
  const nats = await NatsServerProcess.start();
  cleanups.push(() => nats.dispose());
  const service = await TimerServiceProcess.start(nats.url, {
    TIMER_STORE: "postgres",
    TIMER_DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
    // Unique: dispose() drops it on the machine's main Postgres, where it never existed.
    TIMER_DATABASE_SCHEMA: uniqueSchema("failover"),
    TIMER_DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
    TIMER_POLLING_INTERVAL: "500",
    TIMER_CLAIM_TTL_MS: "3000",
  });
  cleanups.push(() => service.dispose());
  onTestFailed(() => console.error(`service log, last lines:\n${service.logLines.slice(-40).join("\n")}\n${service.stderr}`));
  const client = await TimerClient.connect(nats.url);
  cleanups.push(() => client.close());
  const reader = await EventStreamReader.start(nats.url);
  cleanups.push(() => reader.close());
  return { set, proxy, service, client, reader };
}

/** Polls /readyz for `durationMs`; returns how many answers were 200. */
async function readyAnswersDuring(deployment: Deployment, durationMs: number): Promise<number> {
  let ready = 0;
  const endMs = Date.now() + durationMs;
  while (Date.now() < endMs) {
    if ((await readyzStatus(deployment.service)) === 200) ready++;
    await new Promise((r) => setTimeout(r, 100));
  }
  return ready;
}

describe.skipIf(unavailable !== undefined)(`Postgres failover${unavailable === undefined ? "" : ` (skipped: ${unavailable})`}`, () => {
  it.each([
    { standby: "synchronous", synchronous: true, lagMs: 0 },
    // What an asynchronous standby loses is what it lags behind: here a replication stream held 200 ms.
    { standby: "asynchronous", synchronous: false, lagMs: ASYNC_REPLICATION_DELAY_MS },
  ])(
    "when the primary is killed mid-burst and the $standby standby is promoted behind the same address, then /readyz is 503 meanwhile, ready within 10 s, and what was acked is kept",
    async ({ standby, synchronous, lagMs }) => {
      const deployment = await deploy(synchronous, "", lagMs);
      const { set, proxy, service, client, reader } = deployment;
      const burst = planTimers("burst", BURST, Date.now(), 6_000, 6_000);
      await scheduleAll(client, burst);
      const load = new CommandLoad(client, "during", LOAD_DUE_LEAD_MS);
      cleanups.push(() => load.stop());

      await reader.waitUntil(
        () => burst.filter((t) => reader.hasFired(TENANT, t.serviceCallId)).length >= BURST / 10,
        30_000,
        "burst firing",
      );
      const killedAtMs = Date.now();
      set.killNode(set.primary);
      const notReadyMs = await msUntilReadyz(service, 503, killedAtMs, 2 * TIMEOUT_MS + 2_000);
      await waitUntil(() => Date.now() - killedAtMs >= DEAD_PRIMARY_MS, DEAD_PRIMARY_MS + 1_000, "the primary stays dead a while");
      const readyWhileDead = await readyzStatus(service);
      const standbyReceivedLsn = (await set.query<{ lsn: string }>(set.standby, "SELECT pg_last_wal_receive_lsn()::text AS lsn"))[0]?.lsn;
      const { commits: commitsNotReceived, walEnd } = await set.commitsInWalAfter(set.primary, standbyReceivedLsn!);
      await set.promoteStandby();
      const promotedAtMs = Date.now();
      proxy.pointAt(set.standby.port);
      const readyMs = await msUntilReadyz(service, 200, promotedAtMs, 30_000);
      // Commands keep arriving a little after the service is back.
      await waitUntil(() => Date.now() - promotedAtMs >= readyMs + 1_000, readyMs + 5_000, "commands after the failover");
      await load.stop();

      const mustFire = [...burst, ...load.mustFire];
      const firedBy = async (timeoutMs: number): Promise<void> =>
        reader
          .waitForTimers(
            TENANT,
            mustFire.map((t) => t.serviceCallId),
            timeoutMs,
          )
          .catch(() => undefined);
      // Long enough for every timer after its due time; an asynchronous standby may have lost some.
      await firedBy(Math.max(...mustFire.map((t) => t.dueAtMs)) - Date.now() + 15_000);
      await waitUntil(
        async () => {
          const backlog = await commandBacklog(client);
          return backlog.pending + backlog.ackPending === 0;
        },
        15_000,
        "every command applied",
      );
      const lost = mustFire.filter((t) => !reader.hasFired(TENANT, t.serviceCallId)).map((t) => t.serviceCallId);
      const firedAfterCancel = load.mustNotFire.filter((t) => reader.hasFired(TENANT, t.serviceCallId)).map((t) => t.serviceCallId);
      const publishes = client.received("DueTimeReached").length;
      console.info(
        `Postgres failover, ${standby} standby (replication held ${lagMs} ms), TIMER_DATABASE_TIMEOUT_MS=${TIMEOUT_MS}: /readyz 503 ${notReadyMs} ms after the kill, ready ${readyMs} ms after the promotion; standby received WAL up to ${standbyReceivedLsn}, commits of the primary after it: ${commitsNotReceived} (${walEnd}); ${load.acked} commands sent during it; ${mustFire.length} timers must fire: lost ${lost.length} ${JSON.stringify(lost.slice(0, 10))}; cancelled but fired ${firedAfterCancel.length}; ${reader.events.length} events stored (duplicates stored ${reader.duplicates}), ${publishes} publishes seen`,
      );

      expect(readyWhileDead).toBe(503);
      expect(notReadyMs).toBeLessThanOrEqual(2 * TIMEOUT_MS);
      expect(readyMs).toBeLessThanOrEqual(10_000);
      expect(earlyEvents(reader.events)).toEqual([]);
      expect(reader.duplicates).toBe(0);
      if (synchronous) {
        expect(lost).toEqual([]);
        expect(firedAfterCancel).toEqual([]);
      }
    },
    180_000,
  );

  it.each([
    { cause: "its standby died", promoted: false },
    { cause: "a standby promoted with the old primary's synchronous_standby_names", promoted: true },
  ])(
    "when the primary waits for a synchronous standby it no longer has ($cause), then /readyz is 503 within 2 × the time-out and stays so, and once it commits again every timer fires",
    async ({ cause, promoted }) => {
      const deployment = await deploy(true, promoted ? SYNCHRONOUS_STANDBY_OPTION : "");
      const { set, proxy, service, client, reader } = deployment;
      const timers = planTimers("waiting", 50, Date.now(), 15_000, 17_000);
      await scheduleAll(client, timers);
      await waitUntil(
        async () => (await commandBacklog(client)).ackPending + (await commandBacklog(client)).pending === 0,
        15_000,
        "stored",
      );
      expect(await readyzStatus(service)).toBe(200);

      // Reads still work there: only commits wait, for a standby that never comes to acknowledge them.
      if (promoted) {
        set.killNode(set.primary);
        await set.promoteStandby();
        proxy.pointAt(set.standby.port);
      } else {
        set.killNode(set.standby);
      }
      const waitingAtMs = Date.now();
      const waiting = promoted ? set.standby : set.primary;
      const during = planTimers("during", 20, waitingAtMs, 12_000, 14_000);
      await scheduleAll(client, during);
      expect(await set.query(waiting, "SELECT 1 AS answer")).toEqual([{ answer: 1 }]);
      const notReadyMs = await msUntilReadyz(service, 503, waitingAtMs, 2 * TIMEOUT_MS + 3_000);
      const readyWhileWaiting = await readyAnswersDuring(deployment, 3 * TIMEOUT_MS);

      // The fix: the standby back (it acknowledges again), or the promoted server without the setting.
      if (promoted) await set.stopNode(set.standby);
      await set.startNode(set.standby, "");
      const committingAtMs = Date.now();
      const readyMs = await msUntilReadyz(service, 200, committingAtMs, 30_000);
      await reader.waitForTimers(
        TENANT,
        [...timers, ...during].map((t) => t.serviceCallId),
        30_000,
      );
      console.info(
        `Postgres primary without its synchronous standby (${cause}), TIMER_DATABASE_TIMEOUT_MS=${TIMEOUT_MS}: /readyz 503 after ${notReadyMs} ms, 200 answers in the next ${3 * TIMEOUT_MS} ms: ${readyWhileWaiting}; ready ${readyMs} ms after it commits again`,
      );
      expect(notReadyMs).toBeLessThanOrEqual(2 * TIMEOUT_MS);
      expect(readyWhileWaiting).toBe(0);
      expect(readyMs).toBeLessThanOrEqual(10_000);
      expect(earlyEvents(reader.events)).toEqual([]);
    },
    120_000,
  );
});
