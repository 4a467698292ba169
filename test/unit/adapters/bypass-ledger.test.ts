import { describe, expect, it } from "vitest";
import { BypassLedger } from "../../../src/adapters/nats/bypass-ledger.js";

describe("BypassLedger", () => {
  it("when a bypassed command is nak'ed, then it rests for its delay and its next handover counts one more delivery", () => {
    const ledger = new BypassLedger();
    expect(ledger.deliveryCount(42)).toBe(1);

    ledger.left("c-p1", "t", 42, 2_000);

    expect(ledger.resting(42, 1_999)).toBe(true);
    expect(ledger.firstDue("t", 1_999)).toBeUndefined();
    expect(ledger.firstDue("t", 2_000)).toBe(42);
    expect(ledger.resting(42, 2_000)).toBe(false);
    expect(ledger.deliveryCount(42)).toBe(2);
    ledger.left("c-p1", "t", 42, 5_000);
    expect(ledger.deliveryCount(42)).toBe(3);
  });

  it("when a command is removed, or its consumer delivered past it, then nothing of it is remembered", () => {
    const ledger = new BypassLedger();
    ledger.left("c-p1", "t", 10, Number.POSITIVE_INFINITY);
    ledger.left("c-p1", "t", 20, Number.POSITIVE_INFINITY);
    ledger.left("c-p2", "u", 15, Number.POSITIVE_INFINITY);

    ledger.removed(20);
    ledger.forgetThrough("c-p1", 15);

    expect(ledger.size).toBe(1);
    expect(ledger.resting(15, 0)).toBe(true);
    expect(ledger.resting(10, 0)).toBe(false);
  });

  it("when more commands are left than it keeps, then the oldest are forgotten", () => {
    const ledger = new BypassLedger();
    for (let seq = 1; seq <= 10_050; seq++) ledger.left("c", "t", seq, Number.POSITIVE_INFINITY);

    expect(ledger.size).toBe(10_000);
    expect(ledger.resting(1, 0)).toBe(false);
    expect(ledger.resting(10_050, 0)).toBe(true);
  });

  it("when several tenants have entries, then each one's first due message is its own, also after some were forgotten", () => {
    const ledger = new BypassLedger();
    ledger.left("c", "t", 30, 1_000);
    ledger.left("c", "u", 10, 1_000);
    ledger.left("c", "t", 20, 5_000);
    ledger.left("c", "u", 40, 1_000);

    expect(ledger.firstDue("t", 1_000)).toBe(30);
    expect(ledger.firstDue("t", 5_000)).toBe(20);
    expect(ledger.firstDue("u", 1_000)).toBe(10);
    expect(ledger.firstDue("v", 1_000)).toBeUndefined();

    ledger.removed(10);
    ledger.forgetThrough("c", 25);
    expect(ledger.firstDue("u", 1_000)).toBe(40);
    expect(ledger.firstDue("t", 5_000)).toBe(30);
    ledger.clear();
    expect(ledger.firstDue("t", 5_000)).toBeUndefined();
  });

  it("when the oldest entries are forgotten for room, then their tenant's first due message is no longer one of them", () => {
    const ledger = new BypassLedger();
    ledger.left("c", "early", 1, 0);
    for (let seq = 2; seq <= 10_001; seq++) ledger.left("c", "t", seq, Number.POSITIVE_INFINITY);

    expect(ledger.firstDue("early", 0)).toBeUndefined();
    expect(ledger.size).toBe(10_000);
  });
});
