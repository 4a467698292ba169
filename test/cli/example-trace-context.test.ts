/** The examples' trace handling (examples/trace-context.ts, examples/describe.ts) on its own. */
import { describe, expect, it } from "vitest";
import type { TimerEvent } from "@timer-service/client";
import { childTraceparent, newTraceparent, parseTraceparent } from "../../examples/trace-context.js";
import { describeTrace } from "../../examples/describe.js";

const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function event(headers: Record<string, string>): TimerEvent {
  return {
    id: "acme:x:0:1",
    type: "DueTimeReached",
    tenantId: "acme",
    timestampMs: 0,
    payload: {
      tenantId: "acme",
      serviceCallId: "x",
      dueAt: "1970-01-01T00:00:00.000Z",
      reachedAt: "1970-01-01T00:00:00.000Z",
      generation: 1,
      lateMs: 0,
    },
    headers,
    subject: "timer.events.due.acme",
    deliveryCount: 1,
  };
}

describe("examples: trace context", () => {
  it("when a trace is started, then its traceparent is a valid, sampled version 00 header with fresh ids", () => {
    const a = newTraceparent();
    expect(a).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(parseTraceparent(a)).toBeDefined();
    expect(newTraceparent().split("-")[1]).not.toBe(a.split("-")[1]);
  });

  it("when a child is made, then it keeps the trace-id and flags and has a span-id of its own", () => {
    const parent = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")!;
    const [version, traceId, spanId, flags] = childTraceparent(parent).split("-");
    expect([version, traceId, flags]).toEqual(["00", "4bf92f3577b34da6a3ce929d0e0e4736", "00"]);
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(spanId).not.toBe(parent.parentId);
  });

  it.each([
    undefined,
    "",
    "00-xyz",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
  ])("when the header is %j, then there is no trace to continue", (header) => expect(parseTraceparent(header)).toBeUndefined());

  it("when an event carries a traceparent, then the consumer handles it in a child span of that trace", () => {
    expect(describeTrace(event({ traceparent: PARENT }))).toMatch(
      /^trace 4bf92f3577b34da6a3ce929d0e0e4736: handled in span 00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01 \(child of 00f067aa0ba902b7\)$/,
    );
    expect(describeTrace(event({}))).toMatch(/^no traceparent on the event/);
  });
});
