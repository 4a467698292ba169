import { randomUUID } from "node:crypto";
import { connectTimerClient } from "@timer-service/client";

const timers = await connectTimerClient({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222", tenantId: "acme" });
// A serviceCallId is used once: scheduling a fired one again is rejected (TIMER_FINAL). Make it unique.
const serviceCallId = `order-42-reminder-${randomUUID()}`;

let done;
const finished = new Promise((resolve) => (done = resolve));
await timers.consume({ durable: "quickstart", kinds: ["due", "rejected"] }, (event) => {
  if (event.payload.serviceCallId !== serviceCallId) return; // another run's event: acked, skipped
  console.log(event.type, JSON.stringify(event.payload));
  done();
});

await timers.schedule({ serviceCallId, dueAt: new Date(Date.now() + 2000), data: { orderId: 42 } });
await finished; // DueTimeReached about 2 s later (or CommandRejected, saying why)
await timers.close(); // stops the consumer and closes the connection, so the script exits
