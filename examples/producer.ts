/**
 * Producer: publishes one `ScheduleTimer` command and waits for JetStream's publish ack.
 *
 *   npx tsx examples/producer.ts [--tenant acme] [--id order-4711] [--in-seconds 2] [--data '{"orderId":4711}']
 *
 * Prints the command it sent (JSON) on stdout. The ack means the command is stored in the
 * TIMER_COMMANDS stream; the service then applies it, or publishes a `CommandRejected` saying why not.
 */
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient, type PubAck } from "@nats-io/jetstream";

/** The `ScheduleTimer` envelope (see docs/design/messages.md). */
export interface ScheduleTimerCommand {
  readonly id: string;
  readonly type: "ScheduleTimer";
  readonly tenantId: string;
  readonly correlationId?: string;
  readonly timestampMs: number;
  readonly payload: {
    readonly tenantId: string;
    readonly serviceCallId: string;
    /** ISO 8601 with an offset; a time in the past fires at once. */
    readonly dueAt: string;
    readonly data?: unknown;
  };
}

export interface ScheduleRequest {
  readonly tenantId: string;
  /** The timer's key within the tenant. A fired timer is final: use a fresh id for a new timer. */
  readonly serviceCallId: string;
  readonly dueAt: Date;
  readonly data?: unknown;
  readonly correlationId?: string;
  /** The command envelope's id (default: a new UUID); a CommandRejected names it as `commandId`. */
  readonly commandId?: string;
}

/** Subject prefix, the service's TIMER_SUBJECT_PREFIX (default "timer"). */
export const SUBJECT_PREFIX = process.env.TIMER_SUBJECT_PREFIX ?? "timer";

/** NATS server URL(s), comma-separated, as the service's TIMER_BROKER_URL. */
export function brokerUrls(): string[] {
  return (process.env.TIMER_BROKER_URL ?? "nats://127.0.0.1:4222")
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "");
}

/** Publishes a `ScheduleTimer` and resolves with the command and the stream's ack. */
export async function scheduleTimer(
  js: JetStreamClient,
  request: ScheduleRequest,
): Promise<{ command: ScheduleTimerCommand; ack: PubAck }> {
  const command: ScheduleTimerCommand = {
    id: request.commandId ?? randomUUID(),
    type: "ScheduleTimer",
    tenantId: request.tenantId,
    ...(request.correlationId === undefined ? {} : { correlationId: request.correlationId }),
    timestampMs: Date.now(),
    payload: {
      tenantId: request.tenantId,
      serviceCallId: request.serviceCallId,
      dueAt: request.dueAt.toISOString(),
      ...(request.data === undefined ? {} : { data: request.data }),
    },
  };
  const subject = `${SUBJECT_PREFIX}.commands.schedule.${request.tenantId}`;
  try {
    // Resolves on the stream's ack; rejects when no stream captures the subject or the broker times out.
    const ack = await js.publish(subject, JSON.stringify(command));
    return { command, ack };
  } catch (error) {
    throw new Error(`publishing to ${subject} failed (is the service running? it creates the streams): ${String(error)}`, { cause: error });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tenant: { type: "string", default: "acme" },
      id: { type: "string", default: `order-${randomUUID()}` },
      "in-seconds": { type: "string", default: "2" },
      data: { type: "string", default: '{"orderId":4711}' },
    },
  });
  const seconds = Number(values["in-seconds"]);
  if (!Number.isFinite(seconds)) throw new Error(`--in-seconds must be a number, got ${values["in-seconds"]}`);

  const nc = await connect({ servers: brokerUrls(), name: "timer-example-producer" });
  try {
    const { command, ack } = await scheduleTimer(jetstream(nc), {
      tenantId: values.tenant,
      serviceCallId: values.id,
      dueAt: new Date(Date.now() + seconds * 1000),
      data: JSON.parse(values.data) as unknown,
      correlationId: `req-${randomUUID().slice(0, 8)}`,
    });
    console.error(`scheduled ${command.payload.serviceCallId} for ${command.payload.dueAt} (stream ${ack.stream}, seq ${ack.seq})`);
    console.log(JSON.stringify(command));
  } finally {
    await nc.close();
  }
}

// Run only when started as a script, not when imported by schedule-and-wait.ts.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  });
}
