import type { DecideCommand, DueClaim, DueCursor, DueTimer, FiredTimer, TimerStore } from "../../app/timer-store.js";
import { isScheduled, timerKeyString, type Timer, type TimerKey } from "../../domain/timer.js";
import type { TimerCommand } from "../../domain/timer-command.js";
import type { CommandDecision } from "../../domain/timer-rules.js";

/**
 * Orders strings as SQLite's BINARY collation does (memcmp of UTF-8), which is code point order.
 * JavaScript's `<` compares UTF-16 code units, which puts astral characters (surrogate pairs,
 * 0xD800–0xDFFF) before U+E000–U+FFFF; shifting the units at the first difference fixes that.
 */
function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(codeUnit: number): number {
  if (codeUnit >= 0xe000) return codeUnit - 0x800;
  if (codeUnit >= 0xd800) return codeUnit + 0x2000;
  return codeUnit;
}

function compareDue(a: DueCursor, b: DueCursor): number {
  return (
    a.dueAtMs - b.dueAtMs || compareUtf8(a.tenantId, b.tenantId) || compareUtf8(a.serviceCallId, b.serviceCallId)
  );
}

/**
 * Timers in a Map; for unit tests, and the reference the other stores are checked against. It
 * records claims like a shared store does, so that the claim rules are tested here too.
 */
export class MemoryTimerStore implements TimerStore {
  #timers: Map<string, Timer> | undefined = new Map();
  readonly #claims = new Map<string, { readonly owner: string; readonly untilMs: number }>();

  async applyCommands(commands: readonly TimerCommand[], decide: DecideCommand): Promise<CommandDecision[]> {
    const timers = this.#open();
    // Staged apart and copied in only when every command is decided: all or nothing.
    const staged = new Map<string, Timer>();
    const decisions = commands.map((command) => {
      const key = timerKeyString(command);
      const decision = decide(staged.get(key) ?? timers.get(key), command);
      if (decision.next !== undefined) staged.set(key, { ...decision.next });
      return decision;
    });
    for (const [key, timer] of staged) timers.set(key, timer);
    return decisions;
  }

  async claimDue(claim: DueClaim): Promise<DueTimer[]> {
    const { nowMs, limit, after, owner, leaseUntilMs } = claim;
    const due = [...this.#open().values()]
      .filter(isScheduled)
      .filter((timer) => timer.dueAtMs <= nowMs && (after === undefined || compareDue(timer, after) > 0))
      .filter((timer) => !this.#heldByOther(timerKeyString(timer), owner, nowMs))
      .sort(compareDue)
      .slice(0, limit);
    for (const timer of due) this.#claims.set(timerKeyString(timer), { owner, untilMs: leaseUntilMs });
    return due.map(({ tenantId, serviceCallId, dueAtMs, generation, data, correlationId }) => ({
      tenantId,
      serviceCallId,
      dueAtMs,
      generation,
      data,
      correlationId,
    }));
  }

  async markReached(timers: readonly FiredTimer[], reachedAtMs: number, owner: string): Promise<TimerKey[]> {
    const stored = this.#open();
    const marked: TimerKey[] = [];
    for (const timer of timers) {
      const key = timerKeyString(timer);
      const current = stored.get(key);
      const unchanged = isScheduled(current) && current.dueAtMs === timer.dueAtMs && current.generation === timer.generation;
      if (!unchanged || this.#heldByOther(key, owner, reachedAtMs)) continue;
      stored.set(key, { ...current, state: "Reached", reachedAtMs, updatedAtMs: reachedAtMs });
      this.#claims.delete(key);
      marked.push({ tenantId: timer.tenantId, serviceCallId: timer.serviceCallId });
    }
    return marked;
  }

  async releaseClaims(owner: string, timers?: readonly TimerKey[]): Promise<void> {
    this.#open();
    const keys = timers === undefined ? [...this.#claims.keys()] : timers.map(timerKeyString);
    for (const key of keys) if (this.#claims.get(key)?.owner === owner) this.#claims.delete(key);
  }

  #heldByOther(key: string, owner: string, nowMs: number): boolean {
    const claim = this.#claims.get(key);
    return claim !== undefined && claim.owner !== owner && claim.untilMs > nowMs;
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
