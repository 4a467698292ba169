import type { DeadlineClaim, DeadlineRecord, DueClaim, Firing, TimerStore } from "../../../src/app/timer-store.js";
import type { DecideRules } from "../../../src/app/command-batch.js";
import type { PrefixCancel } from "../../../src/domain/prefix-cancel.js";
import type { TimerKey } from "../../../src/domain/timer.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";

/** Forwards every call to another store; tests subclass it to fail, record or stall one method. */
export class DelegatingTimerStore implements TimerStore {
  constructor(readonly inner: TimerStore) {}

  applyCommands(commands: readonly TimerCommand[], rules: DecideRules) {
    return this.inner.applyCommands(commands, rules);
  }
  claimDue(claim: DueClaim) {
    return this.inner.claimDue(claim);
  }
  recordFirings(firings: readonly Firing[], owner: string) {
    return this.inner.recordFirings(firings, owner);
  }
  claimDeadlines(claim: DeadlineClaim) {
    return this.inner.claimDeadlines(claim);
  }
  recordDeadlines(records: readonly DeadlineRecord[], owner: string) {
    return this.inner.recordDeadlines(records, owner);
  }
  nextDeadlineAt() {
    return this.inner.nextDeadlineAt();
  }
  unfinishedPrefixCancels() {
    return this.inner.unfinishedPrefixCancels();
  }
  sweepPrefixCancel(prefix: Pick<PrefixCancel, "tenantId" | "serviceCallIdPrefix">, limit: number, nowMs: number) {
    return this.inner.sweepPrefixCancel(prefix, limit, nowMs);
  }
  releaseClaims(owner: string, timers?: readonly TimerKey[]) {
    return this.inner.releaseClaims(owner, timers);
  }
  nextDueAt() {
    return this.inner.nextDueAt();
  }
  countScheduled() {
    return this.inner.countScheduled();
  }

  countScheduledOf(tenantIds: readonly string[]) {
    return this.inner.countScheduledOf(tenantIds);
  }
  get(key: TimerKey) {
    return this.inner.get(key);
  }
  isWritable() {
    return this.inner.isWritable();
  }
  close() {
    return this.inner.close();
  }
}
