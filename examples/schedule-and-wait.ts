/**
 * `npm run example`: schedules a timer due in 2 s and waits for its event, both with
 * `@timer-service/client`. Exits 0 when the DueTimeReached arrives; 1 when the client refuses the
 * command, the timer is missed, or nothing arrives within 15 s.
 *
 * Needs a NATS server with JetStream (TIMER_BROKER_URL, default nats://127.0.0.1:4222) and the
 * service running against it (`npm start`).
 */
import { randomUUID } from "node:crypto";
import type { TimerClient, TimerEvent } from "@timer-service/client";
import { describeEvent, envelopeOf } from "./describe.js";
import { connectTimers, explain } from "./settings.js";

const DUE_IN_MS = 2_000;
const TIMEOUT_MS = 15_000;
const tenantId = process.env.EXAMPLE_TENANT ?? "acme";
const serviceCallId = `order-${randomUUID()}`; // a fired timer is final: a fresh key per run
const durable = `timer-example-${randomUUID()}`; // this run's own consumer, removed at the end

/** Resolves with the first event of our timer, or undefined after TIMEOUT_MS. */
async function scheduleAndWait(timers: TimerClient): Promise<TimerEvent | undefined> {
  let arrived!: (event: TimerEvent | undefined) => void;
  const outcome = new Promise<TimerEvent | undefined>((resolve) => (arrived = resolve));
  // Created before the command is sent (new events only): the timer's event cannot slip past.
  const subscription = await timers.consume({ durable, kinds: ["due", "missed"] }, (event) => {
    if (event.payload.serviceCallId === serviceCallId) arrived(event);
  });
  const timeout = setTimeout(() => arrived(undefined), TIMEOUT_MS);
  try {
    const sent = await timers.schedule({
      serviceCallId,
      dueAt: new Date(Date.now() + DUE_IN_MS),
      data: { orderId: 4711 },
      correlationId: "req-42",
    });
    console.log(`scheduled ${serviceCallId} for ${String(sent.command.payload.dueAt)} (stream ${sent.stream}, seq ${sent.seq})`);
    return await outcome;
  } finally {
    clearTimeout(timeout);
    await subscription.stop();
    await timers.removeConsumer(durable).catch(() => undefined);
  }
}

let exitCode = 1;
let timers: TimerClient | undefined;
try {
  timers = await connectTimers(tenantId, "timer-example");
  const event = await scheduleAndWait(timers);
  if (event === undefined) {
    console.error(`no event for ${serviceCallId} within ${TIMEOUT_MS / 1000} s: is the service running (npm start)?`);
  } else {
    console.log(describeEvent(event));
    console.log(JSON.stringify(envelopeOf(event)));
    exitCode = event.type === "DueTimeReached" ? 0 : 1;
  }
} catch (error) {
  console.error(explain(error));
} finally {
  await timers?.close();
}
process.exit(exitCode);
