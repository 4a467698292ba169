/**
 * A consumer that confirms its work (CONTRACT §11): schedules a tracked timer, then handles its
 * DueTimeReached and reports back: `fail` for the first `--fail` attempts, `complete` after.
 *
 *   npx tsx examples/confirming-consumer.ts [--tenant acme] [--fail 1]
 *
 * The service publishes attempt 2, 3, … after backoffMs × 2^(attempt−1) when a TimerFailed arrives
 * (or when no report arrives within completionTimeoutMs), each with its own id
 * `{tenantId}:{serviceCallId}:{dueAtMs}:{generation}:{attempt}`. Exits 0 once it completed the work.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connectTimers } from "./settings.js";

const { values } = parseArgs({ options: { tenant: { type: "string", default: "acme" }, fail: { type: "string", default: "1" } } });
const failures = Number(values.fail);
const timers = await connectTimers(values.tenant, "timer-example-confirming-consumer");
const serviceCallId = `invoice-${randomUUID()}`;
const durable = `timer-example-${randomUUID()}`;

let done!: () => void;
const completed = new Promise<void>((resolve) => (done = resolve));
// The client acks each event after the handler returns and drops a redelivered copy it already handled.
const subscription = await timers.consume({ durable, kinds: ["due"] }, async (event) => {
  if (event.type !== "DueTimeReached" || event.payload.serviceCallId !== serviceCallId) return;
  const attempt = event.payload.attempt ?? 1;
  console.log(`DueTimeReached ${event.id} (attempt ${attempt})`);
  if (attempt <= failures) {
    await timers.fail(serviceCallId, `downstream unavailable (attempt ${attempt})`);
    console.log("  reported TimerFailed");
    return;
  }
  await timers.complete(serviceCallId, "invoice sent");
  console.log("  reported TimerCompleted");
  done();
});

await timers.schedule({
  serviceCallId,
  dueAt: new Date(Date.now() + 1_000),
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
await completed;
clearTimeout(deadline);
await subscription.stop();
await timers.removeConsumer(durable);
await timers.close();
