/**
 * `npm run example`: schedules a timer due in 2 s with the producer and waits for its event with the
 * consumer. Exits 0 when the DueTimeReached arrives; 1 when the command is rejected, the timer is
 * missed, or nothing arrives within 15 s.
 *
 * Needs a NATS server with JetStream (TIMER_BROKER_URL, default nats://127.0.0.1:4222) and the
 * service running against it (`npm start`).
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { brokerUrls, scheduleTimer } from "./producer.js";
import { describeEvent, eventOf, openOrderedEventConsumer } from "./consumer.js";

const DUE_IN_MS = 2_000;
const TIMEOUT_MS = 15_000;
const tenantId = process.env.EXAMPLE_TENANT ?? "acme";
const serviceCallId = `order-${randomUUID()}`; // a fired timer is final: a fresh key per run
const commandId = randomUUID();

const nc = await connect({ servers: brokerUrls(), name: "timer-example" });
const js = jetstream(nc);

async function waitForOutcome(): Promise<number> {
  // Opened before the command is sent, from a start time just before it: no event can slip past.
  // All tenants: a command whose tenant is invalid is rejected on `timer.events.rejected._unknown`.
  const consumer = await openOrderedEventConsumer(js, new Date(Date.now() - 1_000));
  const messages = await consumer.consume();
  const timeout = setTimeout(() => {
    console.error(`no event for ${serviceCallId} within ${TIMEOUT_MS / 1000} s: is the service running (npm start)?`);
    void messages.close();
  }, TIMEOUT_MS);
  try {
    for await (const message of messages) {
      const event = eventOf(message);
      const ours = event.type === "CommandRejected" ? event.payload.commandId === commandId : event.payload.serviceCallId === serviceCallId;
      if (!ours) continue;
      console.log(describeEvent(event));
      console.log(JSON.stringify(event));
      return event.type === "DueTimeReached" ? 0 : 1;
    }
    return 1;
  } finally {
    clearTimeout(timeout);
    await messages.close();
  }
}

let exitCode = 1;
try {
  const outcome = waitForOutcome().catch((error: unknown) => {
    console.error(`reading events failed (is the service running? it creates the streams): ${String(error)}`);
    return 1;
  });
  const { command, ack } = await scheduleTimer(js, {
    commandId,
    tenantId,
    serviceCallId,
    dueAt: new Date(Date.now() + DUE_IN_MS),
    data: { orderId: 4711 },
    correlationId: "req-42",
  });
  console.log(`scheduled ${serviceCallId} for ${command.payload.dueAt} (stream ${ack.stream}, seq ${ack.seq})`);
  exitCode = await outcome;
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
} finally {
  await nc.close();
}
process.exit(exitCode);
