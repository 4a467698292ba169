import { storedTenant, type CommandSource } from "./command-partitions.js";

/** One tenant's commands stored in one source (queued, or delivered and not yet acked). */
export interface TenantBacklog {
  readonly tenantId: string;
  readonly stored: number;
}

/**
 * The tenants of a source that hold at most `maxStored` of its stored commands, fewest first, from a
 * stream info's per-subject counts (`subjects_filter`). A tenant above it is a flooder in its own
 * right and stays in the consumer's lane; subjects outside the layout are left to the consumer too.
 * Work and result are bounded by the subjects the server returned (tenants × command kinds).
 */
export function tenantsWithin(subjectCounts: Readonly<Record<string, number>>, source: CommandSource, maxStored: number): TenantBacklog[] {
  const stored = new Map<string, number>();
  for (const [subject, count] of Object.entries(subjectCounts)) {
    const tenantId = storedTenant(source, subject);
    if (tenantId !== undefined) stored.set(tenantId, (stored.get(tenantId) ?? 0) + count);
  }
  const within: TenantBacklog[] = [];
  for (const [tenantId, count] of stored) if (count <= maxStored) within.push({ tenantId, stored: count });
  return within.sort((a, b) => a.stored - b.stored);
}
