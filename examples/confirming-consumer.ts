/**
 * A consumer that confirms its work (CONTRACT §11): schedules a tracked timer, then handles its
 * DueTimeReached and reports back: TimerFailed for the first `--fail` attempts, TimerCompleted after.
 *
 *   npx tsx examples/confirming-consumer.ts [--tenant acme] [--fail 1]
 *
 * The service publishes attempt 2, 3, … after backoffMs × 2^(attempt−1) when a TimerFailed arrives
 * (or when no report arrives within completionTimeoutMs), each with its own id
 * `{tenantId}:{serviceCallId}:{dueAtMs}:{generation}:{attempt}`. Exits 0 once it completed the work.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { brokerUrls, SUBJECT_PREFIX } from "./producer.js";
import { eventOf, openOrderedEventConsumer } from "./consumer.js";

const { values } = parseArgs({ options: { tenant: { type: "string", default: "acme" }, fail: { type: "string", default: "1" } } });
const tenantId = values.tenant;
const failures = Number(values.fail);
const nc = await connect({ servers: brokerUrls(), name: "timer-example-confirming-consumer" });
const js = jetstream(nc);
const encoder = new TextEncoder();

/** Publishes a command envelope on `{prefix}.commands.{kind}.{tenantId}` and awaits the stream's ack. */
async function send(kind: "schedule" | "complete" | "fail", type: string, payload: Record<string, unknown>): Promise<void> {
  const envelope = { id: randomUUID(), type, tenantId, timestampMs: Date.now(), payload: { tenantId, ...payload } };
  await js.publish(`${SUBJECT_PREFIX}.commands.${kind}.${tenantId}`, encoder.encode(JSON.stringify(envelope)));
}

const serviceCallId = `invoice-${randomUUID()}`;
const events = await (await openOrderedEventConsumer(js, new Date(), tenantId)).consume();
await send("schedule", "ScheduleTimer", {
  serviceCallId,
  dueAt: new Date(Date.now() + 1_000).toISOString(),
  data: { invoice: 4711 },
  delivery: { maxRetries: 3, backoffMs: 500, completionTimeoutMs: 30_000 },
  createdBy: "billing",
  createdVia: "examples/confirming-consumer.ts",
});
console.log(`scheduled ${serviceCallId} with delivery tracking; failing the first ${failures} attempt(s)`);

const deadline = setTimeout(() => {
  console.error("no event within 30 s (is the service running?)");
  process.exit(1);
}, 30_000);
for await (const message of events) {
  const event = eventOf(message);
  if (event.type !== "DueTimeReached" || event.payload.serviceCallId !== serviceCallId) continue;
  const attempt = event.payload.attempt ?? 1;
  console.log(`DueTimeReached ${event.id} (attempt ${attempt})`);
  // Deduplicate by event id in real code: delivery is at-least-once.
  if (attempt <= failures) {
    await send("fail", "TimerFailed", { serviceCallId, reason: `downstream unavailable (attempt ${attempt})` });
    console.log("  reported TimerFailed");
    continue;
  }
  await send("complete", "TimerCompleted", { serviceCallId, result: "invoice sent" });
  console.log("  reported TimerCompleted");
  break;
}
clearTimeout(deadline);
await events.close();
await nc.close();
