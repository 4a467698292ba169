import type { JetStreamManager } from "@nats-io/jetstream";

/** The service's command consumers together: the base one and its partitions (`{base}-p{n}`). */
export interface CommandConsumersState {
  readonly pending: number;
  readonly ackPending: number;
  readonly redelivered: number;
  /** Messages delivered, summed over the consumers. */
  readonly deliveries: number;
  /** The highest stream sequence any of them delivered. */
  readonly deliveredStreamSeq: number;
}

export async function commandConsumersState(
  jsm: JetStreamManager,
  stream = "TIMER_COMMANDS",
  base = "timer-service",
): Promise<CommandConsumersState> {
  const state = { pending: 0, ackPending: 0, redelivered: 0, deliveries: 0, deliveredStreamSeq: 0 };
  for await (const info of jsm.consumers.list(stream)) {
    if (info.name !== base && !info.name.startsWith(`${base}-p`)) continue;
    state.pending += info.num_pending;
    state.ackPending += info.num_ack_pending;
    state.redelivered += info.num_redelivered;
    state.deliveries += info.delivered.consumer_seq;
    state.deliveredStreamSeq = Math.max(state.deliveredStreamSeq, info.delivered.stream_seq);
  }
  return state;
}

/** The broker's partition of a tenant (`{{partition(n,…)}}`): FNV-1a (32 bit) of the token, modulo n. */
export function brokerPartitionOf(tenantId: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(tenantId)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % partitions;
}
