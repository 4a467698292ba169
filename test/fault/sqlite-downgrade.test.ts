import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { EventStreamReader, type StreamedDueEvent } from "../support/event-stream-reader.js";
import { previousReleaseBuild } from "../support/previous-release.js";
import { waitUntil } from "../support/wait-for.js";
import { TENANT, commandBacklog, earlyEvents, planTimers, scheduleAll, waitUntilStored } from "./fault-support.js";

/**
 * CONTRACT §18, "Reshaping SQLite": rolling a SQLite store back to the previous release. This build
 * runs on a fresh file and takes timers — some fire before the way back, some are cancelled (one by
 * a prefix cancel), one recurs, most fall due after it — and is stopped with SIGTERM; its store is
 * exported with this build's CLI, imported into a fresh file with the previous release's CLI, and
 * the previous release started on that file. Every timer fires exactly once (the recurring one goes
 * on with its next occurrence), none early, nothing cancelled fires, and commands older than a
 * cancel stay ignored after the way back.
 */

const CLI = resolve(import.meta.dirname, "../../dist/cli/main.js");
const run = promisify(execFile);

/** Timers that fire on this build before the way back. */
const FIRED_BEFORE = 5;
/** Timers still Scheduled when this build stops: the previous release must fire each. */
const DUE_AFTER = 40;
const CANCELLED = 10;
/**
 * How long after they are sent the timers meant for the previous release fall due: more than this
 * build takes to store them and stop, so that every one of them is Scheduled in the export.
 */
const AFTER_LEAD_MS = 15_000;
const RECURRING_EVERY_MS = 2_000;
const PREFIX = "order-7:";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error: unknown) => console.error("cleanup failed", error));
});

interface ExportLine {
  readonly kind: "timer" | "prefixCancel";
  readonly serviceCallId?: string;
  readonly state?: string;
  readonly occurrence?: number;
}

function exportedLines(path: string): { header: Record<string, unknown>; lines: ExportLine[] } {
  const [header, ...lines] = readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { header: header!, lines: lines as unknown as ExportLine[] };
}

/** Each event of a recurring timer continues the one before it: no occurrence twice, none skipped without being counted. */
function brokenSeries(events: readonly StreamedDueEvent[]): string[] {
  const sorted = [...events].sort((a, b) => a.seq - b.seq);
  return sorted.flatMap((event, i) => {
    const expected = i === 0 ? 1 + (event.missedOccurrences ?? 0) : sorted[i - 1]!.occurrence! + 1 + (event.missedOccurrences ?? 0);
    return event.occurrence === expected
      ? []
      : [`occurrence ${event.occurrence} (missed ${event.missedOccurrences ?? 0}) where ${expected} was next`];
  });
}

function publishEnvelope(
  client: TimerClient,
  kind: string,
  type: string,
  payload: Record<string, unknown>,
  timestampMs: number,
): Promise<void> {
  const envelope = {
    id: `${type}-${payload.serviceCallId ?? payload.serviceCallIdPrefix}-${timestampMs}`,
    type,
    tenantId: TENANT,
    timestampMs,
  };
  return client.publishRaw(`timer.commands.${kind}.${TENANT}`, JSON.stringify({ ...envelope, payload: { tenantId: TENANT, ...payload } }));
}

describe("rolling a SQLite store back to the previous release", () => {
  it("when this build's export is imported by the previous release into a fresh file and it starts there, then every timer fires once and nothing cancelled fires", async (context) => {
    const previous = previousReleaseBuild();
    if (!("build" in previous)) {
      context.skip(previous.reason);
      return;
    }
    const { build } = previous;
    const folder = mkdtempSync(join(tmpdir(), "timer-downgrade-"));
    cleanups.push(async () => rmSync(folder, { recursive: true, force: true }));
    const nats = await NatsServerProcess.start();
    cleanups.push(() => nats.dispose());
    const env = { TIMER_STORE: "sqlite", TIMER_POLLING_INTERVAL: "100" };
    const current = await TimerServiceProcess.start(nats.url, env);
    cleanups.push(() => current.dispose());
    const client = await TimerClient.connect(nats.url);
    cleanups.push(() => client.close());
    const reader = await EventStreamReader.start(nats.url);
    cleanups.push(() => reader.close());

    // On this build: timers that fire now, and a recurring one that fires twice.
    const startMs = Date.now();
    const firedBefore = planTimers("fired", FIRED_BEFORE, startMs, 300, 1_000);
    await scheduleAll(client, firedBefore);
    await publishEnvelope(
      client,
      "schedule",
      "ScheduleTimer",
      { serviceCallId: "recurring", dueAt: new Date(startMs + 500).toISOString(), repeat: { everyMs: RECURRING_EVERY_MS } },
      startMs,
    );
    await reader.waitForTimers(
      TENANT,
      firedBefore.map((t) => t.serviceCallId),
      15_000,
    );
    await reader.waitUntil(
      () => reader.eventsOf(TENANT, "recurring").some((e) => e.occurrence === 2),
      15_000,
      "the recurring timer's second occurrence",
    );

    // Due after the way back, and cancelled ones among them (cancels one millisecond newer; a prefix cancel).
    const sentMs = Date.now();
    const dueAfter = planTimers("after", DUE_AFTER, sentMs, AFTER_LEAD_MS, AFTER_LEAD_MS + 5_000);
    const cancelled = planTimers("cancelled", CANCELLED, sentMs, AFTER_LEAD_MS, AFTER_LEAD_MS + 4_000);
    await scheduleAll(client, dueAfter);
    const scheduledTs = Date.now();
    for (const timer of cancelled) {
      await client.schedule(TENANT, timer.serviceCallId, new Date(timer.dueAtMs), { timestampMs: scheduledTs });
      await client.cancel(TENANT, timer.serviceCallId, { timestampMs: scheduledTs + 1 });
    }
    const underPrefix = `${PREFIX}ship`;
    await client.schedule(TENANT, underPrefix, new Date(sentMs + AFTER_LEAD_MS + 1_000), { timestampMs: scheduledTs });
    const prefixTs = scheduledTs + 1;
    await publishEnvelope(client, "cancelprefix", "CancelTimersByPrefix", { serviceCallIdPrefix: PREFIX }, prefixTs);
    // Scheduled: every timer due after, and the recurring one.
    await waitUntilStored(client, current, DUE_AFTER + 1);

    // The way back: stop, export with this build, import into a fresh file with the previous release, start it.
    expect(await current.kill("SIGTERM"), "this build stops cleanly").toEqual({ code: 0, signal: null });
    const exportFile = join(folder, "timers.ndjson");
    await run(process.execPath, [CLI, "export", "--out", exportFile], {
      env: { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: current.env.TIMER_DB_PATH! },
    });
    const { header, lines } = exportedLines(exportFile);
    const exportedTimers = lines.filter((line) => line.kind === "timer");
    const exportedState = new Map(exportedTimers.map((line) => [line.serviceCallId, line.state]));
    // The premise: what the previous release must fire was still to fire when this build stopped.
    expect(dueAfter.filter((t) => exportedState.get(t.serviceCallId) !== "Scheduled").map((t) => t.serviceCallId)).toEqual([]);
    const recurring = exportedTimers.find((line) => line.serviceCallId === "recurring");
    expect(recurring?.state).toBe("Scheduled");
    const nextOccurrence = recurring!.occurrence!;

    const previousDb = join(folder, "previous.db");
    const imported = await run(process.execPath, [build.cli, "import", "--in", exportFile], {
      cwd: build.dir,
      env: { ...process.env, TIMER_STORE: "sqlite", TIMER_DB_PATH: previousDb },
    });
    const summary = JSON.parse(imported.stdout) as { created: number; replaced: number; kept: number; prefixCancels: { created: number } };
    expect(summary).toMatchObject({ created: exportedTimers.length, replaced: 0, kept: 0, prefixCancels: { created: 1 } });

    const older = await TimerServiceProcess.start(
      nats.url,
      { ...env, TIMER_DB_PATH: previousDb },
      {
        waitReady: false,
        command: [process.execPath, build.entry],
      },
    );
    cleanups.push(() => older.dispose());
    onTestFailed(() =>
      console.error(
        `this build:\n${current.logLines.slice(-20).join("\n")}\n${current.stderr}\n${build.tag}:\n${older.logLines.slice(-20).join("\n")}\n${older.stderr}`,
      ),
    );
    await older.waitUntilReady(60_000);

    // Commands the imported store must still refuse: older than a cancel, or than the prefix cancel.
    const staleDue = new Date(Date.now() + 500);
    await client.schedule(TENANT, cancelled[0]!.serviceCallId, staleDue, { timestampMs: scheduledTs });
    await client.schedule(TENANT, `${PREFIX}late`, staleDue, { timestampMs: prefixTs - 1 });
    // Due after everything above: once it fired, so has every timer due before it (one tenant fires in due order).
    const lastDueMs = Math.max(...dueAfter.map((t) => t.dueAtMs), staleDue.getTime());
    await client.schedule(TENANT, "sentinel", new Date(Math.max(Date.now(), lastDueMs) + 1_000));

    await reader.waitForTimers(TENANT, [...dueAfter.map((t) => t.serviceCallId), "sentinel"], AFTER_LEAD_MS + 60_000);
    await reader.waitUntil(
      () => reader.eventsOf(TENANT, "recurring").some((e) => e.occurrence! >= nextOccurrence),
      30_000,
      "the recurring timer's next occurrence on the previous release",
    );
    // Every command applied, and nothing but the recurring timer left to fire: no one-shot timer can fire again.
    await waitUntil(
      async () => {
        const backlog = await commandBacklog(client);
        return backlog.pending + backlog.ackPending === 0 && (await older.metric("timer_schedules_pending")) === 1;
      },
      15_000,
      "every command applied and only the recurring timer pending",
    );

    const once = [...firedBefore, ...dueAfter].map((t) => t.serviceCallId);
    const notOnce = once.filter((id) => reader.eventsOf(TENANT, id).length !== 1);
    const firedCancelled = [...cancelled.map((t) => t.serviceCallId), underPrefix, `${PREFIX}late`].filter((id) =>
      reader.hasFired(TENANT, id),
    );
    console.info(
      `SQLite ${build.tag} ← this build (export version ${String(header.version)}): ${exportedTimers.length} timers exported and imported, ${DUE_AFTER} fired on ${build.tag}, ${CANCELLED + 1} cancelled never fired, recurring from occurrence ${nextOccurrence} to ${Math.max(...reader.eventsOf(TENANT, "recurring").map((e) => e.occurrence!))}`,
    );
    expect(notOnce).toEqual([]);
    expect(firedCancelled).toEqual([]);
    expect(brokenSeries(reader.eventsOf(TENANT, "recurring"))).toEqual([]);
    expect(reader.duplicates).toBe(0);
    expect(earlyEvents(reader.events)).toEqual([]);
  }, 180_000);
});
