/**
 * Producer: schedules one timer with `@timer-service/client`, in a trace of its own.
 *
 *   npx tsx examples/producer.ts [--tenant acme] [--id order-4711] [--in-seconds 2] [--data '{"orderId":4711}']
 *
 * Prints the command it sent (JSON) on stdout, and on stderr where it was stored and the
 * `traceparent` it carried. `schedule` resolves once the command is stored in the TIMER_COMMANDS
 * stream; the service then applies it, and the timer's events carry the same trace-id.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connectTimers, explain } from "./settings.js";
import { newTraceparent } from "./trace-context.js";

const { values } = parseArgs({
  options: {
    tenant: { type: "string", default: "acme" },
    id: { type: "string", default: `order-${randomUUID()}` },
    "in-seconds": { type: "string", default: "2" },
    data: { type: "string", default: '{"orderId":4711}' },
  },
});

try {
  const seconds = Number(values["in-seconds"]);
  if (!Number.isFinite(seconds)) throw new Error(`--in-seconds must be a number, got ${values["in-seconds"]}`);
  const timers = await connectTimers(values.tenant, "timer-example-producer");
  try {
    // Here the trace starts; inside a traced request, pass the current span's traceparent instead.
    const traceparent = newTraceparent();
    const sent = await timers.schedule({
      serviceCallId: values.id,
      dueAt: new Date(Date.now() + seconds * 1000),
      data: JSON.parse(values.data) as unknown,
      correlationId: `req-${randomUUID().slice(0, 8)}`,
      traceparent,
    });
    console.error(`scheduled ${values.id} for ${String(sent.command.payload.dueAt)} (stream ${sent.stream}, seq ${sent.seq})`);
    console.error(`traceparent ${traceparent}`);
    console.log(JSON.stringify(sent.command));
  } finally {
    await timers.close();
  }
} catch (error) {
  console.error(explain(error));
  process.exitCode = 1;
}
