/**
 * The consumer half of the raw ceiling, in its own process like the service: pulls from a durable
 * consumer (same pull batch as the service) and acks every message, doing nothing else.
 * After every `every` messages it flushes its acks and prints one JSON line
 * `{"count","firstAtMs","flushedAtMs"}` on stdout. Exits after `total` messages or `maxSeconds`.
 *
 * usage: node --import tsx scripts/bench/raw-consumer.ts <url> <stream> <durable> <total> <every> <maxSeconds>
 */
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

const [url, stream, durable, totalArg, everyArg, maxSecondsArg] = process.argv.slice(2);
if (url === undefined || stream === undefined || durable === undefined) {
  process.stderr.write("usage: raw-consumer <url> <stream> <durable> <total> <every> <maxSeconds>\n");
  process.exit(2);
}
const total = Number(totalArg ?? 0);
const every = Number(everyArg ?? total);
const maxSeconds = Number(maxSecondsArg ?? 300);

const wallNow = (): number => performance.timeOrigin + performance.now();

setTimeout(() => {
  process.stderr.write(`raw-consumer: giving up after ${maxSeconds} s\n`);
  process.exit(3);
}, maxSeconds * 1000).unref();

const nc = await connect({ servers: url, name: "bench-raw-consumer" });
const consumer = await jetstream(nc).consumers.get(stream, durable);
let count = 0;
let firstAtMs: number | undefined;
let finished: (() => void) | undefined;
const done = new Promise<void>((resolve) => (finished = resolve));

const messages = await consumer.consume({
  max_messages: 2_000,
  callback: (message) => {
    firstAtMs ??= wallNow();
    message.ack();
    count++;
    if (count % every === 0 || count === total) {
      const first = firstAtMs;
      const at = count;
      firstAtMs = undefined;
      void nc.flush().then(() => {
        process.stdout.write(`${JSON.stringify({ count: at, firstAtMs: first, flushedAtMs: wallNow() })}\n`);
        if (at >= total) finished?.();
      });
    }
  },
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
await done;
messages.stop();
await nc.drain();
process.exit(0);
