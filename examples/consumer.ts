/**
 * Consumer: handles the tenant's DueTimeReached and DueTimeMissed events with
 * `@timer-service/client`'s `consume`, continuing the trace each event carries.
 *
 *   npx tsx examples/consumer.ts [--tenant acme] [--durable timer-example-acme]
 *
 * A durable consumer (created on the first run, starting with new events): each event is acked
 * when the handler returns and redelivered when it throws, so a restarted consumer goes on where
 * it left off. Stops on Ctrl-C; the durable consumer stays on the server.
 */
import { parseArgs } from "node:util";
import type { TimerClient } from "@timer-service/client";
import { connectTimers, EVENTS_STREAM, explain, SUBJECT_PREFIX } from "./settings.js";
import { describeEvent, describeTrace, envelopeOf } from "./describe.js";

const { values } = parseArgs({ options: { tenant: { type: "string", default: "acme" }, durable: { type: "string" } } });

let timers: TimerClient | undefined;
try {
  timers = await connectTimers(values.tenant, "timer-example-consumer");
  const durable = values.durable ?? `timer-example-${values.tenant}`;
  const subscription = await timers.consume({ durable, kinds: ["due", "missed"] }, (event) => {
    console.log(describeEvent(event));
    console.log(`  ${JSON.stringify(envelopeOf(event))}`);
    console.log(`  ${describeTrace(event)}`);
    // Throwing here would redeliver the event after a delay; returning acks it.
  });
  const client = timers;
  const stop = (): void => void subscription.stop().then(() => client.close());
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  console.error(`reading ${SUBJECT_PREFIX}.events.*.${values.tenant} from ${EVENTS_STREAM} as ${durable} (Ctrl-C to stop)`);
} catch (error) {
  console.error(explain(error));
  process.exitCode = 1;
  await timers?.close();
}
