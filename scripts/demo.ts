/**
 * `npm run demo`: schedules one timer due in 2 s and waits for its DueTimeReached.
 *
 * Needs a running NATS (TIMER_BROKER_URL, default nats://127.0.0.1:4222) and a running service
 * (`npm start`). Exits 0 when the event arrives, 1 on a CommandRejected, a failed publish or after 15 s.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

const TIMEOUT_MS = 15_000;
const DUE_IN_MS = 2_000;

const servers = (process.env.TIMER_BROKER_URL ?? "nats://127.0.0.1:4222").split(",").map((s) => s.trim()).filter((s) => s !== "");
const prefix = process.env.TIMER_SUBJECT_PREFIX ?? "timer";
const tenantId = "demo";
const serviceCallId = `demo-${randomUUID()}`;
const commandId = randomUUID();

const nc = await connect({ servers, name: "timer-demo" });
const js = jetstream(nc);

let exitCode = 1;
const timeout = setTimeout(() => {
  console.error(`no DueTimeReached for ${serviceCallId} within ${TIMEOUT_MS / 1000} s — is the service running (npm start)?`);
  void nc.close();
}, TIMEOUT_MS);

// A core subscription, opened before the command is sent, sees every event the service publishes.
const subscription = nc.subscribe(`${prefix}.events.>`);
const received = (async () => {
  for await (const message of subscription) {
    const event = message.json<{ type: string; payload: Record<string, unknown> }>();
    if (event.type === "DueTimeReached" && event.payload.serviceCallId === serviceCallId) {
      console.log(`received on ${message.subject} (Nats-Msg-Id ${message.headers?.get("Nats-Msg-Id")}):`);
      console.log(JSON.stringify(event, null, 2));
      exitCode = 0;
      break;
    }
    if (event.type === "CommandRejected" && event.payload.commandId === commandId) {
      console.error("the service rejected the command:");
      console.error(JSON.stringify(event, null, 2));
      break;
    }
  }
})();
await nc.flush();

const command = {
  id: commandId,
  type: "ScheduleTimer",
  tenantId,
  correlationId: "demo",
  timestampMs: Date.now(),
  payload: {
    tenantId,
    serviceCallId,
    dueAt: new Date(Date.now() + DUE_IN_MS).toISOString(),
    data: { hello: "world" },
  },
};
try {
  const ack = await js.publish(`${prefix}.commands.schedule.${tenantId}`, JSON.stringify(command));
  console.log(`scheduled ${serviceCallId} for ${command.payload.dueAt} (stream ${ack.stream}, seq ${ack.seq})`);
} catch (error) {
  console.error(`publishing the command failed (does the ${prefix}.commands.> stream exist? start the service first): ${String(error)}`);
  clearTimeout(timeout);
  await nc.close();
  process.exit(1);
}

await received;
clearTimeout(timeout);
if (!nc.isClosed()) await nc.close();
process.exit(exitCode);
