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
  /** Stored subjects carry the partition token; it is dropped before decoding. */
  readonly partitioned: boolean;
  /**
   * What the source's stored commands start with: `{stem}{kind}.{tenantId}` (`{prefix}.commands.`,
   * or `{prefix}.tenant-commands.{n}.`). The backlog bypass reads a tenant's commands by it.
   */
  readonly stem: string;
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
export function commandSources(prefix: string, baseConsumer: string, partitions: number): CommandSource[] {
  const sources: CommandSource[] = [{ consumer: baseConsumer, partitioned: false, stem: `${prefix}.commands.` }];
  if (partitions <= 1) return sources;
  for (let p = 0; p < partitions; p++) {
    sources.push({ consumer: partitionConsumerName(baseConsumer, p), partitioned: true, stem: `${prefix}.${PARTITIONED}.${p}.` });
  }
  return sources;
}

/** Every stored subject of a source (a stream info `subjects_filter`). */
export function sourceSubjects(source: CommandSource): string {
  return `${source.stem}>`;
}

/** The stored subjects of one tenant's commands in a source, of every kind. */
export function tenantSubjects(source: CommandSource, tenantId: string): string {
  return `${source.stem}*.${tenantId}`;
}

/** The tenant of a stored subject of the source's layout (`{stem}{kind}.{tenantId}`), else undefined. */
export function storedTenant(source: CommandSource, storedSubject: string): string | undefined {
  if (!storedSubject.startsWith(source.stem)) return undefined;
  const rest = storedSubject.slice(source.stem.length).split(".");
  return rest.length === 2 && rest[0] !== "" && rest[1] !== "" ? rest[1] : undefined;
}

/** The key that keeps one tenant's commands in order in the service's buffer: the subject's last token. */
export function tenantKey(publishedSubject: string): string {
  return publishedSubject.slice(publishedSubject.lastIndexOf(".") + 1);
}

/** The subject a partitioned message was published on, from the one it is stored under. */
export function publishedSubject(storedSubject: string): string {
  const tokens = storedSubject.split(".");
  if (tokens.length !== 5 || tokens[1] !== PARTITIONED) return storedSubject;
  return `${tokens[0]}.commands.${tokens[3]}.${tokens[4]}`;
}
