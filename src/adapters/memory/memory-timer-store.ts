import type { DeadlineClaim, DeadlineRecord, DueClaim, DueTimer, Firing, PrefixCancelSweep, TimerStore } from "../../app/timer-store.js";
import type { TraceMembers } from "../../domain/trace-context.js";
import type { DeadlineTimer } from "../../domain/delivery-rules.js";
import { isScheduled, timerKeyString, type ScheduledTimer, type Timer, type TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/command-rules.js";
import { PrefixCancelIndex, type PrefixCancel } from "../../domain/prefix-cancel.js";
import { dealRoundRobin, perTenantReadLimit } from "../../app/firing/fair-due-selection.js";
import { compareCodePoints } from "../../domain/code-point-order.js";
import { appendHistory } from "../../domain/timer-history.js";
import {
  decideCommandBatch,
  decideSweepStep,
  firingOverriddenByPrefixCancel,
  quotaTenants,
  type DecideRules,
  type HistoryWrite,
} from "../../app/command-batch.js";

/** A recorded prefix cancel; `progressKey` null once its sweep has finished. */
interface PrefixCancelRecord extends PrefixCancel {
  readonly progressKey: string | null;
}

const prefixKey = (tenantId: string, prefix: string) => `${tenantId}\u0000${prefix}`;

function compareTenantDue(a: { dueAtMs: number; serviceCallId: string }, b: { dueAtMs: number; serviceCallId: string }): number {
  return a.dueAtMs - b.dueAtMs || compareCodePoints(a.serviceCallId, b.serviceCallId);
}

/**
 * Timers in a Map; for unit tests, and the reference the other stores are checked against. It
 * records claims like a shared store does, so that the claim rules are tested here too.
 */
export class MemoryTimerStore implements TimerStore {
  #timers: Map<string, Timer> | undefined = new Map();
  readonly #claims = new Map<string, { readonly owner: string; readonly untilMs: number }>();
  readonly #prefixCancels = new Map<string, PrefixCancelRecord>();
  #prefixIndex = new PrefixCancelIndex();

  async applyCommands(commands: readonly TimerCommand[], rules: DecideRules): Promise<CommandDecision[]> {
    const timers = this.#open();
    const tenants = quotaTenants(commands, rules);
    // Decided apart and copied in only when every command is decided: all or nothing.
    const batch = decideCommandBatch(commands, rules, {
      prefixIndex: this.#prefixIndex,
      stored: (key) => timers.get(timerKeyString(key)),
      ...(tenants.length === 0 ? {} : { scheduledCounts: this.#countScheduledOf(tenants) }),
    });
    for (const timer of batch.changed) this.#put(timer);
    this.#appendHistory(batch.history, rules.historyEntries ?? 0);
    for (const cancel of batch.cancels) {
      this.#prefixCancels.set(prefixKey(cancel.tenantId, cancel.serviceCallIdPrefix), { ...cancel, progressKey: "" });
      this.#prefixIndex.add(cancel);
    }
    return batch.decisions;
  }

  /**
   * Stores `timers` as they are, bypassing the command rules: for tests that need a state no
   * command sequence reaches quickly (the query suites' fixtures).
   */
  seed(timers: readonly Timer[]): void {
    const stored = this.#open();
    for (const timer of timers) stored.set(timerKeyString(timer), { ...timer });
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after, owner } = claim;
    const byTenant = new Map<string, ScheduledTimer[]>();
    // The same rule as the SQL stores, which see a tenant's earliest due time in their index of
    // tenants with due timers: the chain's own timers, still Scheduled, included.
    const earliest = new Map<string, number>();
    for (const timer of this.#open().values()) {
      if (!isScheduled(timer) || timer.dueAtMs > nowMs || this.#heldByOther(timerKeyString(timer), owner, nowMs)) continue;
      earliest.set(timer.tenantId, Math.min(earliest.get(timer.tenantId) ?? Number.POSITIVE_INFINITY, timer.dueAtMs));
      const position = after?.get(timer.tenantId);
      if (position !== undefined && compareTenantDue(timer, position) <= 0) continue;
      const list = byTenant.get(timer.tenantId);
      if (list === undefined) byTenant.set(timer.tenantId, [timer]);
      else list.push(timer);
    }
    const candidates = [...byTenant.entries()]
      .map(([tenantId, list]) => ({ tenantId, list, earliestMs: earliest.get(tenantId)! }))
      .sort((a, b) => a.earliestMs - b.earliestMs || compareCodePoints(a.tenantId, b.tenantId))
      .slice(0, limit);
    const readLimit = perTenantReadLimit(limit, candidates.length);
    const lists = candidates.map(({ list }) => list.sort(compareTenantDue).slice(0, readLimit));
    const due = this.#claim(dealRoundRobin(lists, limit), () => 0, claim);
    return due.map((t) => ({
      tenantId: t.tenantId,
      serviceCallId: t.serviceCallId,
      dueAtMs: t.dueAtMs,
      generation: t.generation,
      data: t.data,
      correlationId: t.correlationId,
      occurrence: t.occurrence,
      repeat: t.repeat,
      maxLatenessMs: t.maxLatenessMs,
      commandTs: t.commandTs,
      reachedAtMs: t.reachedAtMs,
      ...(t.delivery ? { delivery: t.delivery } : {}),
      ...traceOnly(t),
      prefixCancelTs: this.#prefixIndex.latestFor(t.tenantId, t.serviceCallId),
    }));
  }

  async claimDeadlines(claim: DeadlineClaim): Promise<DeadlineTimer[]> {
    const { nowMs } = claim;
    const passed = this.#claim(
      [...this.#open().values()].filter(
        (t) => t.state === "Fired" && t.delivery && t.deadlineAtMs !== null && t.deadlineAtMs !== undefined && t.deadlineAtMs <= nowMs,
      ),
      (a, b) =>
        a.deadlineAtMs! - b.deadlineAtMs! ||
        compareCodePoints(a.tenantId, b.tenantId) ||
        compareCodePoints(a.serviceCallId, b.serviceCallId),
      claim,
    );
    return passed.map((t) => ({
      tenantId: t.tenantId,
      serviceCallId: t.serviceCallId,
      dueAtMs: t.dueAtMs,
      generation: t.generation,
      data: t.data,
      correlationId: t.correlationId,
      reachedAtMs: t.reachedAtMs,
      updatedAtMs: t.updatedAtMs,
      lastReason: t.lastReason ?? null,
      delivery: t.delivery!,
      attempt: t.attempt ?? 1,
      deadlineAtMs: t.deadlineAtMs!,
      ...traceOnly(t),
    }));
  }

  async recordDeadlines(records: readonly DeadlineRecord[], owner: string): Promise<TimerKey[]> {
    const stored = this.#open();
    const recorded: TimerKey[] = [];
    for (const record of records) {
      const key = timerKeyString(record);
      const current = stored.get(key);
      if (current?.state !== "Fired" || (current.attempt ?? 1) !== record.attempt || current.deadlineAtMs !== record.deadlineAtMs) continue;
      if (this.#heldByOther(key, owner, record.next.updatedAtMs)) continue;
      const history =
        record.history === undefined ? {} : { history: appendHistory(current.history, record.history.entry, record.history.keep) };
      stored.set(key, { ...current, ...record.next, ...history });
      this.#claims.delete(key);
      recorded.push({ tenantId: record.tenantId, serviceCallId: record.serviceCallId });
    }
    return recorded;
  }

  async nextDeadlineAt(): Promise<number | null> {
    let next: number | null = null;
    for (const t of this.#open().values()) {
      if (t.state === "Fired" && typeof t.deadlineAtMs === "number" && (next === null || t.deadlineAtMs < next)) next = t.deadlineAtMs;
    }
    return next;
  }

  async recordFirings(firings: readonly Firing[], owner: string): Promise<TimerKey[]> {
    const stored = this.#open();
    const recorded: TimerKey[] = [];
    for (const firing of firings) {
      const key = timerKeyString(firing);
      const current = stored.get(key);
      const unchanged = isScheduled(current) && current.dueAtMs === firing.dueAtMs && current.generation === firing.generation;
      if (!unchanged || this.#heldByOther(key, owner, firing.next.updatedAtMs)) continue;
      if (firingOverriddenByPrefixCancel(this.#prefixIndex.latestFor(firing.tenantId, firing.serviceCallId), firing.next)) continue;
      // commandTs only grows: a command may have moved it after the timer was read.
      const { tracking, ...next } = firing.next;
      const history =
        firing.history === undefined ? {} : { history: appendHistory(current.history, firing.history.entry, firing.history.keep) };
      stored.set(key, { ...current, ...next, ...tracking, ...history, commandTs: Math.max(current.commandTs, firing.next.commandTs) });
      this.#claims.delete(key);
      recorded.push({ tenantId: firing.tenantId, serviceCallId: firing.serviceCallId });
    }
    return recorded;
  }

  async unfinishedPrefixCancels(): Promise<PrefixCancelSweep[]> {
    this.#open();
    return [...this.#prefixCancels.values()].flatMap(({ progressKey, ...cancel }) =>
      progressKey === null ? [] : [{ ...cancel, progressKey }],
    );
  }

  async sweepPrefixCancel(
    prefix: Pick<PrefixCancel, "tenantId" | "serviceCallIdPrefix">,
    limit: number,
    nowMs: number,
    historyEntries = 0,
  ): Promise<{ decisions: CommandDecision[]; done: boolean }> {
    const timers = this.#open();
    const pk = prefixKey(prefix.tenantId, prefix.serviceCallIdPrefix);
    const record = this.#prefixCancels.get(pk);
    if (record === undefined || record.progressKey === null) return { decisions: [], done: true };
    const { progressKey, commandTs } = record;
    const batch = [...timers.values()]
      .filter((t) => t.tenantId === prefix.tenantId && t.serviceCallId.startsWith(prefix.serviceCallIdPrefix))
      .filter((t) => progressKey === "" || compareCodePoints(t.serviceCallId, progressKey) > 0)
      .sort((a, b) => compareCodePoints(a.serviceCallId, b.serviceCallId))
      .slice(0, limit);
    const step = decideSweepStep(batch, commandTs, limit, nowMs, historyEntries);
    for (const decision of step.decisions) if (decision.next !== undefined) this.#put(decision.next);
    this.#appendHistory(step.history, historyEntries);
    this.#prefixCancels.set(pk, { ...record, progressKey: step.progressKey });
    return { decisions: step.decisions, done: step.done };
  }

  /** Stores `timer`, keeping the history stored with its key (kept apart from the row in the SQL stores). */
  #put(timer: Timer): void {
    const timers = this.#open();
    const key = timerKeyString(timer);
    const history = timers.get(key)?.history;
    timers.set(key, history == null ? { ...timer } : { ...timer, history });
  }

  /** Appends each entry to its timer's history, keeping the last `keep` (the domain's rule). */
  #appendHistory(entries: readonly HistoryWrite[], keep: number): void {
    const timers = this.#open();
    for (const { entry, ...key } of entries) {
      const stored = timers.get(timerKeyString(key));
      if (stored !== undefined) timers.set(timerKeyString(key), { ...stored, history: appendHistory(stored.history, entry, keep) });
    }
  }

  async releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void> {
    this.#open();
    const keys = timers === undefined ? [...this.#claims.keys()] : timers.map(timerKeyString);
    for (const key of keys) if (this.#claims.get(key)?.owner === owner) this.#claims.delete(key);
  }

  /** The first `limit` candidates in `order` that no other owner holds, now claimed by `owner`. */
  #claim<T extends Timer>(
    candidates: T[],
    order: (a: T, b: T) => number,
    { nowMs, limit, owner, leaseUntilMs }: { nowMs: number; limit: number; owner: string; leaseUntilMs: number },
  ): T[] {
    const claimed = candidates
      .filter((timer) => !this.#heldByOther(timerKeyString(timer), owner, nowMs))
      .sort(order)
      .slice(0, limit);
    for (const timer of claimed) this.#claims.set(timerKeyString(timer), { owner, untilMs: leaseUntilMs });
    return claimed;
  }

  #heldByOther(key: string, owner: string, nowMs: number): boolean {
    const claim = this.#claims.get(key);
    return claim !== undefined && claim.owner !== owner && claim.untilMs > nowMs;
  }

  async countScheduledOf(tenantIds: readonly string[]): Promise<ReadonlyMap<string, number>> {
    return this.#countScheduledOf(tenantIds);
  }

  #countScheduledOf(tenantIds: readonly string[]): Map<string, number> {
    const wanted = new Set(tenantIds);
    const counts = new Map<string, number>();
    for (const timer of this.#open().values()) {
      if (isScheduled(timer) && wanted.has(timer.tenantId)) counts.set(timer.tenantId, (counts.get(timer.tenantId) ?? 0) + 1);
    }
    return counts;
  }

  async nextDueAt(): Promise<number | null> {
    let next: number | null = null;
    for (const timer of this.#open().values()) {
      if (isScheduled(timer) && (next === null || timer.dueAtMs < next)) next = timer.dueAtMs;
    }
    return next;
  }

  async countScheduled(): Promise<number> {
    return [...this.#open().values()].filter(isScheduled).length;
  }

  async get(key: TimerKey): Promise<Timer | undefined> {
    return this.#open().get(timerKeyString(key));
  }

  /** Every stored timer, for the other memory adapters (queries, retention). */
  timers(): IterableIterator<Timer> {
    return this.#open().values();
  }

  /** Removes a timer, for memory retention. */
  delete(key: TimerKey): boolean {
    return this.#open().delete(timerKeyString(key));
  }

  isWritable(): boolean {
    return this.#timers !== undefined;
  }

  async close(): Promise<void> {
    this.#timers = undefined;
  }

  #open(): Map<string, Timer> {
    if (this.#timers === undefined) throw new Error("MemoryTimerStore is closed");
    return this.#timers;
  }
}

/** The trace members a timer carries, as the SQL stores return them (absent when unset). */
function traceOnly(t: TraceMembers): TraceMembers {
  if (t.traceId == null) return {};
  return { traceId: t.traceId, traceFlags: t.traceFlags ?? null, traceState: t.traceState ?? null, traceSpanId: t.traceSpanId ?? null };
}
