import { describe, expect, it } from "vitest";
import { PrefixCancelIndex, prefixUpperBound } from "../../../src/domain/prefix-cancel.js";

describe("PrefixCancelIndex", () => {
  it("when prefixes of several lengths match a key, then the newest timestamp among them is returned, per tenant", () => {
    const index = new PrefixCancelIndex([
      { tenantId: "a", serviceCallIdPrefix: "order-", commandTs: 5 },
      { tenantId: "a", serviceCallIdPrefix: "order-1:", commandTs: 3 },
      { tenantId: "a", serviceCallIdPrefix: "order-1:", commandTs: 2 },
      { tenantId: "b", serviceCallIdPrefix: "order-1:", commandTs: 9 },
    ]);

    expect(index.latestFor("a", "order-1:x")).toBe(5);
    expect(index.latestFor("a", "order-1:")).toBe(5);
    expect(index.latestFor("a", "order")).toBeNull();
    expect(index.latestFor("b", "order-1:x")).toBe(9);
    expect(index.latestFor("c", "order-1:x")).toBeNull();
    expect(index.get("a", "order-1:")).toBe(3);
  });
});

describe("prefixUpperBound", () => {
  it("when a prefix is bounded, then every key with it sorts below the bound (code point order)", () => {
    expect(prefixUpperBound("ab")).toBe("ac");
    expect(prefixUpperBound("a\u{10FFFF}")).toBe("b");
    expect(prefixUpperBound("a\uD7FF")).toBe("a\uE000");
    expect(prefixUpperBound("\u{10FFFF}")).toBeNull();
  });
});
