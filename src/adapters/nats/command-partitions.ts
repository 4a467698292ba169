import type { SubjectTransformConfig } from "@nats-io/jetstream";

/**
 * The commands stream split into partitions by tenant: a subject transform on the stream stores
 * `{prefix}.commands.{kind}.{tenantId}` as `{prefix}.tenant-commands.{partition}.{kind}.{tenantId}`,
 * the partition a hash of the tenant, and one durable consumer per partition reads it. All commands
 * of a tenant are in one partition, in stream order; a flood in one partition does not queue the others.
 *
 * The stored subjects lie outside the stream's own subjects (`{prefix}.commands.>`), so nothing
 * published can take their shape: the base consumer (CONTRACT §1's name, filter unchanged) gets
 * exactly what the transform leaves alone — commands stored before the stream was partitioned and
 * subjects outside the layout (rejected as before).
 */

/** The second token of stored partitioned commands, beside `commands`, `events` and `query`. */
const PARTITIONED = "tenant-commands";

/** Where one pull reads and how its subjects read as published. */
export interface CommandSource {
  readonly consumer: string;
  /** Stored subjects carry the partition token last; it is dropped before decoding. */
  readonly partitioned: boolean;
}

/** The transform that partitions commands by tenant (the fourth token, the second wildcard). */
export function partitionTransform(prefix: string, partitions: number): SubjectTransformConfig {
  return {
    src: `${prefix}.commands.*.*`,
    dest: `${prefix}.${PARTITIONED}.{{partition(${partitions},2)}}.{{wildcard(1)}}.{{wildcard(2)}}`,
  };
}

/** The partition count of a stream's transform, or undefined when it has none of this layout. */
export function partitionsOf(prefix: string, transform: SubjectTransformConfig | undefined): number | undefined {
  if (transform === undefined || transform.src !== `${prefix}.commands.*.*`) return undefined;
  const match = /^(.*)\{\{partition\((\d+),2\)\}\}(.*)$/.exec(transform.dest);
  if (match === null || match[1] !== `${prefix}.${PARTITIONED}.` || match[3] !== ".{{wildcard(1)}}.{{wildcard(2)}}") return undefined;
  const partitions = Number(match[2]);
  return partitions >= 1 ? partitions : undefined;
}

export function partitionConsumerName(baseConsumer: string, partition: number): string {
  return `${baseConsumer}-p${partition}`;
}

export function partitionFilter(prefix: string, partition: number): string {
  return `${prefix}.${PARTITIONED}.${partition}.*.*`;
}

/** The sources to pull: the base consumer, then one per partition. */
export function commandSources(baseConsumer: string, partitions: number): CommandSource[] {
  const sources: CommandSource[] = [{ consumer: baseConsumer, partitioned: false }];
  if (partitions <= 1) return sources;
  for (let p = 0; p < partitions; p++) sources.push({ consumer: partitionConsumerName(baseConsumer, p), partitioned: true });
  return sources;
}

/** The subject a partitioned message was published on, from the one it is stored under. */
export function publishedSubject(storedSubject: string): string {
  const tokens = storedSubject.split(".");
  if (tokens.length !== 5 || tokens[1] !== PARTITIONED) return storedSubject;
  return `${tokens[0]}.commands.${tokens[3]}.${tokens[4]}`;
}
