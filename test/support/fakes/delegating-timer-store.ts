import type { DecideCommand, DueCursor, DueTimer, TimerStore } from "../../../src/app/timer-store.js";
import type { TimerKey } from "../../../src/domain/timer.js";
import type { TimerCommand } from "../../../src/domain/timer-command.js";

/** Forwards every call to another store; tests subclass it to fail, record or stall one method. */
export class DelegatingTimerStore implements TimerStore {
  constructor(readonly inner: TimerStore) {}

  applyCommands(commands: readonly TimerCommand[], decide: DecideCommand) {
    return this.inner.applyCommands(commands, decide);
  }
  findDue(nowMs: number, limit: number, after?: DueCursor) {
    return this.inner.findDue(nowMs, limit, after);
  }
  markReached(timers: readonly DueTimer[], reachedAtMs: number) {
    return this.inner.markReached(timers, reachedAtMs);
  }
  nextDueAt() {
    return this.inner.nextDueAt();
  }
  countScheduled() {
    return this.inner.countScheduled();
  }
  get(key: TimerKey) {
    return this.inner.get(key);
  }
  close() {
    return this.inner.close();
  }
}
