import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type PubAck } from "@nats-io/jetstream";
import { loadConfig } from "../../src/config/config.js";
import { openStorage } from "../../src/adapters/open-storage.js";
import { memoryStorage } from "../support/memory-storage.js";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { startTimerService, type RunningTimerService } from "../../src/composition/service.js";
import type { Storage } from "../../src/app/storage.js";
import type { DecideRules } from "../../src/app/command-batch.js";
import type { AppliedDecision } from "../../src/app/applied-decision.js";
import type { TimerCommand } from "../../src/domain/timer-command.js";
import { NatsServerProcess } from "../support/nats-server.js";
import { RecordingLogger } from "../support/fakes/recording-logger.js";
import { DelegatingTimerStore } from "../support/fakes/delegating-timer-store.js";
import { dropSchema, TEST_DATABASE_URL, TEST_STORE, uniqueSchema } from "../support/test-postgres.js";
import { waitFor } from "../support/wait-for.js";
import { uniqueId } from "./integration-support.js";
import { expectSchemaValid } from "../support/message-schemas.js";

/**
 * CONTRACT §19, confirmation on request: a command of any kind sent with `Timer-Confirm: 1` gets
 * one CommandOutcome on timer.outcomes.{tenant}; without the header none. The service runs in this
 * process on each store (memory and SQLite; Postgres with TEST_TIMER_STORE=postgres) against a
 * real nats-server.
 */
const STORES = TEST_STORE === "postgres" ? (["postgres"] as const) : (["memory", "sqlite"] as const);
const TENANT = "outcomes19";
const HOUR_MS = 3_600_000;

interface Outcome {
  readonly type: string;
  readonly commandId: string;
  readonly serviceCallId?: string;
  readonly outcome: "applied" | "ignored" | "rejected";
  readonly code?: string;
  readonly reason: string;
  readonly timer?: { state: string; dueAt: string | null; generation: number; occurrence?: number };
}

/**
 * Commits a batch holding a command for `serviceCallId` and then fails, once: the commit happened,
 * the service never heard of it (a connection lost after COMMIT), so the command is redelivered.
 */
class AnswerLostOnce extends DelegatingTimerStore {
  #lost = false;

  constructor(
    inner: DelegatingTimerStore["inner"],
    private readonly serviceCallId: string,
  ) {
    super(inner);
  }

  override async applyCommands(commands: readonly TimerCommand[], rules: DecideRules): Promise<AppliedDecision[]> {
    const decisions = await super.applyCommands(commands, rules);
    if (!this.#lost && commands.some((c) => c.kind !== "cancelPrefix" && c.serviceCallId === this.serviceCallId)) {
      this.#lost = true;
      throw new Error("connection lost after commit");
    }
    return decisions;
  }
}

describe.each(STORES)("CommandOutcome on request, %s store (CONTRACT §19)", (store) => {
  let nats: NatsServerProcess;
  let service: RunningTimerService;
  let client: NatsConnection;
  let dataDir: string;
  let schema: string | undefined;
  const outcomes: { subject: string; body: Outcome }[] = [];
  const lostAnswer = uniqueId("lost-answer");

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    dataDir = mkdtempSync(join(tmpdir(), "timer-outcomes-"));
    schema = store === "postgres" ? uniqueSchema("outcomes") : undefined;
    const config = loadConfig({
      TIMER_BROKER_URL: nats.url,
      TIMER_DB_PATH: join(dataDir, "timer.db"),
      TIMER_HTTP_PORT: "0",
      TIMER_HTTP_HOST: "127.0.0.1",
      TIMER_POLLING_INTERVAL: "100",
      TIMER_RETENTION_HOURS: "1",
      ...(store === "postgres" ? { TIMER_STORE: "postgres", TIMER_DATABASE_URL: TEST_DATABASE_URL, TIMER_DATABASE_SCHEMA: schema! } : {}),
    });
    const logger = new RecordingLogger();
    const opened: Storage = store === "memory" ? memoryStorage() : await openStorage(config, logger, systemClock);
    const storage: Storage = { ...opened, store: new AnswerLostOnce(opened.store, lostAnswer) };
    service = await startTimerService(config, { openStorage: () => Promise.resolve(storage), clock: systemClock, logger });
    client = await connect({ servers: nats.url });
    client.subscribe("timer.outcomes.>", {
      callback: (_error, msg: Msg) => void outcomes.push({ subject: msg.subject, body: msg.json<Outcome>() }),
    });
    await client.flush();
    // With SQLite the work starts once the consumer lease is taken: queries answer from then on.
    await waitFor(
      () =>
        query("stats", {}).then(
          () => true,
          () => false,
        ),
      { until: (ok) => ok, timeoutMs: 20_000, everyMs: 50, what: "queries" },
    );
  });

  afterAll(async () => {
    await client?.close();
    await service?.stop();
    await nats?.dispose();
    if (schema !== undefined) await dropSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });

  function envelope(kind: string, type: string, payload: Record<string, unknown>, timestampMs = Date.now()): Record<string, unknown> {
    return { id: uniqueId(`cmd-${kind}`), type, tenantId: TENANT, timestampMs, payload: { tenantId: TENANT, ...payload } };
  }

  function publish(kind: string, body: Record<string, unknown> | string, confirm = true): Promise<PubAck> {
    const headers = natsHeaders();
    if (confirm) headers.set("Timer-Confirm", "1");
    const data = typeof body === "string" ? body : JSON.stringify(body);
    return jetstream(client).publish(`timer.commands.${kind}.${TENANT}`, data, { headers });
  }

  /** The outcome of `commandId` once it arrived, held to schemas/CommandOutcome.json. */
  async function outcomeOf(commandId: string): Promise<Outcome> {
    const outcome = await waitFor(() => outcomes.find((o) => o.body.commandId === commandId)?.body, {
      until: (o) => o !== undefined,
      timeoutMs: 15_000,
      everyMs: 20,
      what: `the outcome of ${commandId}`,
    });
    expectSchemaValid(outcome);
    return outcome!;
  }

  /** Sends a command with the header and returns its one outcome. */
  async function confirmed(kind: string, body: Record<string, unknown>): Promise<Outcome> {
    await publish(kind, body);
    return outcomeOf(body.id as string);
  }

  async function query(endpoint: string, request: Record<string, unknown>): Promise<any> {
    return (await client.request(`timer.query.${endpoint}.${TENANT}`, JSON.stringify(request), { timeout: 5_000 })).json();
  }

  /** The reason of the next CommandRejected for `serviceCallId`; subscribed once this resolves. */
  async function nextRejection(serviceCallId: string): Promise<{ reason: Promise<string> }> {
    const reason = new Promise<string>((resolve) => {
      const sub = client.subscribe(`timer.events.rejected.${TENANT}`, {
        callback: (_error, msg) => {
          const { payload } = msg.json<{ payload: { serviceCallId?: string; reason: string } }>();
          if (payload.serviceCallId !== serviceCallId) return;
          sub.unsubscribe();
          resolve(payload.reason);
        },
      });
    });
    await client.flush();
    return { reason };
  }

  const schedule = (serviceCallId: string, dueAt: string, extra: Record<string, unknown> = {}, timestampMs?: number) =>
    envelope("schedule", "ScheduleTimer", { serviceCallId, dueAt, ...extra }, timestampMs);
  const cancel = (serviceCallId: string, timestampMs?: number) => envelope("cancel", "CancelTimer", { serviceCallId }, timestampMs);
  const inAnHour = () => new Date(Date.now() + HOUR_MS).toISOString();

  /** Waits until `get` shows the timer in `state` (a firing is recorded after its event is published). */
  const untilState = (serviceCallId: string, state: string, attempt?: number) =>
    waitFor(() => query("get", { serviceCallId }), {
      until: (r) => r.timer?.state === state && (attempt === undefined || r.timer.attempt === attempt),
      timeoutMs: 20_000,
      everyMs: 50,
      what: `${serviceCallId} ${state}`,
    });

  describe("applied", () => {
    it("when a ScheduleTimer is sent with the header, then its outcome is applied on the tenant's subject and get, list and stats see it at once", async () => {
      const serviceCallId = uniqueId("created");
      const before = await query("stats", {});
      const command = schedule(serviceCallId, inAnHour(), { data: { n: 1 } });

      const outcome = await confirmed("schedule", command);

      expect(outcomes.find((o) => o.body.commandId === command.id)?.subject).toBe(`timer.outcomes.${TENANT}`);
      expect(outcome).toEqual({
        type: "CommandOutcome",
        commandId: command.id,
        serviceCallId,
        outcome: "applied",
        reason: "timer created",
        timer: { state: "Scheduled", dueAt: (command.payload as { dueAt: string }).dueAt, generation: 1 },
      });
      expect((await query("get", { serviceCallId })).timer).toMatchObject({ serviceCallId, state: "Scheduled", generation: 1 });
      expect((await query("list", { serviceCallIdPrefix: serviceCallId })).timers).toHaveLength(1);
      // The stats asked just before were shared answers; the confirmed command must not be missing from the next.
      expect((await query("stats", {})).scheduled).toBe(before.scheduled + 1);
    });

    it("when a Scheduled timer is rescheduled and then cancelled with the header, then both are applied and get shows each", async () => {
      const serviceCallId = uniqueId("moved");
      await confirmed("schedule", schedule(serviceCallId, inAnHour()));

      const moved = await confirmed("schedule", schedule(serviceCallId, inAnHour(), { data: "moved" }));
      expect(moved).toMatchObject({ outcome: "applied", reason: "timer rescheduled", timer: { state: "Scheduled", generation: 2 } });
      expect((await query("get", { serviceCallId })).timer).toMatchObject({ generation: 2, data: "moved" });

      const cancelled = await confirmed("cancel", cancel(serviceCallId));
      expect(cancelled).toMatchObject({ outcome: "applied", reason: "timer cancelled", serviceCallId, timer: { state: "Cancelled" } });
      expect((await query("get", { serviceCallId })).timer.state).toBe("Cancelled");
    });

    it("when a recurring timer is scheduled with the header, then its outcome names the occurrence", async () => {
      const outcome = await confirmed("schedule", schedule(uniqueId("every"), inAnHour(), { repeat: { everyMs: 60_000 } }));

      expect(outcome.timer).toMatchObject({ state: "Scheduled", generation: 1, occurrence: 1 });
    });

    it("when a CancelTimersByPrefix is sent with the header, then it is applied without a timer member and get shows its timers cancelled", async () => {
      const prefix = uniqueId("prefix");
      await confirmed("schedule", schedule(`${prefix}-a`, inAnHour()));

      const outcome = await confirmed("cancelprefix", envelope("cancelprefix", "CancelTimersByPrefix", { serviceCallIdPrefix: prefix }));

      expect(outcome).toMatchObject({ outcome: "applied" });
      expect(outcome.timer).toBeUndefined();
      expect(outcome.serviceCallId).toBeUndefined();
      await untilState(`${prefix}-a`, "Cancelled");
    });

    it("when a Fired timer gets TimerFailed, TimerCompleted and, once Failed, RetryTimer with the header, then each is applied", async () => {
      const tracked = uniqueId("tracked");
      await confirmed("schedule", schedule(tracked, new Date().toISOString(), { delivery: { maxRetries: 1, backoffMs: 100 } }));
      await untilState(tracked, "Fired", 1);

      const failed = await confirmed("fail", envelope("fail", "TimerFailed", { serviceCallId: tracked, reason: "busy" }));
      expect(failed).toMatchObject({ outcome: "applied", timer: { state: "Fired" } });
      expect(failed.reason).toMatch(/published again after the backoff/);
      await untilState(tracked, "Fired", 2);
      const completed = await confirmed("complete", envelope("complete", "TimerCompleted", { serviceCallId: tracked }));
      expect(completed).toMatchObject({ outcome: "applied", timer: { state: "Completed" } });
      expect((await query("get", { serviceCallId: tracked })).timer.state).toBe("Completed");

      const once = uniqueId("once");
      await confirmed("schedule", schedule(once, new Date().toISOString(), { delivery: { maxRetries: 0, backoffMs: 100 } }));
      await untilState(once, "Fired");
      expect(await confirmed("fail", envelope("fail", "TimerFailed", { serviceCallId: once, reason: "down" }))).toMatchObject({
        outcome: "applied",
        timer: { state: "Failed" },
      });
      const retried = await confirmed("retry", envelope("retry", "RetryTimer", { serviceCallId: once }));
      expect(retried).toMatchObject({ outcome: "applied", reason: "timer re-armed: it fires now", timer: { generation: 2 } });
      expect((await query("get", { serviceCallId: once })).timer.generation).toBe(2);
    });
  });

  describe("ignored, and why", () => {
    it("when a ScheduleTimer older than the timer's last command comes, then it is ignored for its older timestampMs and get still shows the newer", async () => {
      const serviceCallId = uniqueId("older");
      const newer = schedule(serviceCallId, inAnHour(), { data: "newer" });
      await confirmed("schedule", newer);

      const outcome = await confirmed(
        "schedule",
        schedule(serviceCallId, inAnHour(), { data: "older" }, (newer.timestampMs as number) - 1_000),
      );

      expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Scheduled", generation: 1 } });
      expect(outcome.reason).toMatch(/^older timestampMs/);
      expect((await query("get", { serviceCallId })).timer.data).toBe("newer");
    });

    it("when a ScheduleTimer comes at the same timestampMs as the cancel of its timer, then it is ignored: the cancel wins", async () => {
      const serviceCallId = uniqueId("equal");
      const cancelled = cancel(serviceCallId);
      await confirmed("cancel", cancelled);

      const outcome = await confirmed("schedule", schedule(serviceCallId, inAnHour(), {}, cancelled.timestampMs as number));

      expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Cancelled" } });
      expect(outcome.reason).toMatch(/^equal timestampMs.*the cancel wins/);
    });

    it("when a CancelTimer comes for a timer that fired, then it is ignored: the timer is closed to commands", async () => {
      const serviceCallId = uniqueId("reached");
      await confirmed("schedule", schedule(serviceCallId, new Date().toISOString()));
      await untilState(serviceCallId, "Reached");

      const outcome = await confirmed("cancel", cancel(serviceCallId));

      expect(outcome).toMatchObject({ outcome: "ignored", reason: "timer closed to commands: it is Reached", timer: { state: "Reached" } });
    });

    it("when a ScheduleTimer not newer than a prefix cancel covering its key comes, then it is ignored as blocked by the prefix cancel", async () => {
      const prefix = uniqueId("blocked");
      const prefixCancel = envelope("cancelprefix", "CancelTimersByPrefix", { serviceCallIdPrefix: prefix });
      await confirmed("cancelprefix", prefixCancel);

      const outcome = await confirmed("schedule", schedule(`${prefix}-1`, inAnHour(), {}, (prefixCancel.timestampMs as number) - 1));

      expect(outcome.outcome).toBe("ignored");
      expect(outcome.reason).toMatch(/^blocked by a prefix cancel/);
      expect((await query("get", { serviceCallId: `${prefix}-1` })).timer).toBeNull();
    });

    it("when a report comes for a timer that is not Fired, then it is ignored and says the state", async () => {
      const serviceCallId = uniqueId("not-fired");
      await confirmed("schedule", schedule(serviceCallId, inAnHour()));

      const outcome = await confirmed("complete", envelope("complete", "TimerCompleted", { serviceCallId }));

      expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Scheduled" } });
      expect(outcome.reason).toMatch(/^timer not Fired: it is Scheduled/);
    });

    it("when a command older than the retention window comes, then it is ignored unread", async () => {
      const outcome = await confirmed("schedule", schedule(uniqueId("stale"), inAnHour(), {}, Date.now() - 2 * HOUR_MS));

      expect(outcome.outcome).toBe("ignored");
      expect(outcome.reason).toMatch(/^older than the retention window/);
    });

    it("when the store committed a command but its answer was lost, then the redelivery's outcome is ignored as a redelivery and get shows the command", async () => {
      const command = schedule(lostAnswer, inAnHour());

      const outcome = await confirmed("schedule", command);

      // The first delivery reached no decision the service heard of: the one outcome is the redelivery's.
      expect(outcomes.filter((o) => o.body.commandId === command.id)).toHaveLength(1);
      expect(outcome).toMatchObject({ outcome: "ignored", timer: { state: "Scheduled", generation: 1 } });
      expect(outcome.reason).toMatch(/^redelivery \(delivery 2\)/);
      expect((await query("get", { serviceCallId: lostAnswer })).timer.state).toBe("Scheduled");
    });
  });

  describe("rejected", () => {
    it("when a newer ScheduleTimer comes for a fired timer, then it is rejected TIMER_FINAL with the CommandRejected's reason", async () => {
      const serviceCallId = uniqueId("final");
      await confirmed("schedule", schedule(serviceCallId, new Date().toISOString()));
      await untilState(serviceCallId, "Reached");
      const rejected = await nextRejection(serviceCallId);

      const outcome = await confirmed("schedule", schedule(serviceCallId, inAnHour()));

      expect(outcome).toMatchObject({ outcome: "rejected", code: "TIMER_FINAL", serviceCallId, timer: { state: "Reached" } });
      expect(outcome.reason).toBe(await rejected.reason);
    });

    it("when a ScheduleTimer fails validation, then it is rejected with its code and its commandId", async () => {
      const command = schedule(uniqueId("invalid"), "tomorrow");

      const outcome = await confirmed("schedule", command);

      expect(outcome).toMatchObject({ outcome: "rejected", code: "INVALID_FIELD", commandId: command.id });
      expect(outcome.reason).toMatch(/payload\.dueAt/);
      expect(outcome.timer).toBeUndefined();
    });

    it("when a body that is not JSON is sent with the header, then it is rejected INVALID_JSON under the stream message's id", async () => {
      const ack = await publish("cancel", "not json");

      const outcome = await waitFor(() => outcomes.find((o) => o.body.commandId.startsWith(`${ack.stream}:${ack.seq}:`))?.body, {
        until: (o) => o !== undefined,
        timeoutMs: 15_000,
        everyMs: 20,
        what: "the outcome of the body that is not JSON",
      });

      expect(outcome).toMatchObject({ outcome: "rejected", code: "INVALID_JSON" });
    });
  });

  it("when commands come without the header, then none of them gets an outcome", async () => {
    const serviceCallId = uniqueId("silent");
    const invalid = schedule(uniqueId("silent-invalid"), "tomorrow");
    const rejected = await nextRejection((invalid.payload as { serviceCallId: string }).serviceCallId);
    await publish("schedule", invalid, false);
    await rejected.reason;
    const silent = [invalid, schedule(serviceCallId, inAnHour()), cancel(serviceCallId)];
    for (const command of silent.slice(1)) await publish(command.type === "CancelTimer" ? "cancel" : "schedule", command, false);

    // Commands are applied in the order they came: once a later confirmed one has its outcome, the silent ones were handled.
    await confirmed("schedule", schedule(uniqueId("after-silent"), inAnHour()));

    expect(outcomes.filter((o) => silent.some((c) => c.id === o.body.commandId))).toEqual([]);
    expect((await query("get", { serviceCallId })).timer.state).toBe("Cancelled");
  });
});
