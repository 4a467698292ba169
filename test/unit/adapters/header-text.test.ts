import { describe, expect, it } from "vitest";
import { headers } from "@nats-io/transport-node";
import { headerText } from "../../../src/adapters/nats/header-text.js";
import { listRequestSchema } from "../../../src/app/queries/query-requests.js";

/** The `Nats-Service-Error` header of a query error reply: printable ASCII that still reads right. */
describe("the text of a query error header", () => {
  it("when the message gives the date-time format, then the header spells ± as +/-", () => {
    const parsed = listRequestSchema.safeParse({ dueAfter: "2026-11-25T22:00:00" });
    const message = parsed.success ? "" : parsed.error.issues[0]!.message;
    expect(message).toContain("±hh:mm");

    const text = headerText(message);

    expect(text).toContain("(Z or +/-hh:mm)");
    expect(text).toMatch(/^[\x20-\x7E]*$/);
  });

  it("when the message carries typographic signs, then each is spelled out in ASCII", () => {
    expect(headerText("limit must be 1…1000 — got −1 → refused (≤ 1000, ≥ 1)")).toBe(
      "limit must be 1...1000 - got -1 -> refused (<= 1000, >= 1)",
    );
  });

  it("when the message quotes other text outside printable ASCII, then each character becomes one ?", () => {
    expect(headerText('unknown member "grüße😀"\nnext line')).toBe('unknown member "gr??e?"?next line');
  });

  it("when the message is longer than 512 characters, then the header keeps the first 512", () => {
    expect(headerText("x".repeat(600))).toHaveLength(512);
  });

  it("when the text is set as a NATS header, then it reads back unchanged", () => {
    const value = headerText("dueAfter: must be an ISO 8601 date-time with an offset (Z or ±hh:mm)");
    const h = headers();
    h.set("Nats-Service-Error", value);
    expect(h.get("Nats-Service-Error")).toBe(value);
  });
});
