import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareCodePoints, compareTimerKeys } from "../../../src/domain/code-point-order.js";

const utf8Order = (a: string, b: string) => Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));

describe("compareCodePoints", () => {
  it("when strings mix the BMP above the surrogates with astral characters, then they order as their UTF-8 bytes do", () => {
    // U+FFFD sorts before U+1F600 by code point, after it by UTF-16 code unit.
    expect(Math.sign(compareCodePoints("\uFFFD", "\u{1F600}"))).toBe(-1);
    expect(Math.sign(compareCodePoints("a", "ab"))).toBe(-1);
    expect(compareCodePoints("same", "same")).toBe(0);
  });

  it('orders any two strings as memcmp of their UTF-8 does (SQLite BINARY, Postgres COLLATE "C")', () => {
    const text = fc.string({ unit: "binary", maxLength: 8 });
    fc.assert(fc.property(text, text, (a, b) => Math.sign(compareCodePoints(a, b)) === utf8Order(a, b)));
  });

  it("orders keys by tenant first, then serviceCallId", () => {
    expect(Math.sign(compareTimerKeys({ tenantId: "a", serviceCallId: "z" }, { tenantId: "b", serviceCallId: "a" }))).toBe(-1);
    expect(Math.sign(compareTimerKeys({ tenantId: "a", serviceCallId: "b" }, { tenantId: "a", serviceCallId: "a" }))).toBe(1);
  });
});
