import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { Parser, fromFile } from "@asyncapi/parser";
import { contractFiles, REPO_ROOT } from "../../scripts/schemas/contract-files.js";

describe("published schemas and AsyncAPI document", () => {
  it("when the generator runs, then its output equals the committed files (run npm run schemas:generate)", async () => {
    const files = await contractFiles();
    expect(files.size).toBeGreaterThan(16);
    for (const [path, text] of files) {
      let committed: string;
      try {
        committed = readFileSync(resolve(REPO_ROOT, path), "utf8");
      } catch {
        throw new Error(`${path} is missing: run npm run schemas:generate`);
      }
      expect(committed, `${path} differs from the generator's output: run npm run schemas:generate`).toBe(text);
    }
  });

  it("when asyncapi.yaml is parsed, then the AsyncAPI parser reports no error and it names every message", async () => {
    const { document, diagnostics } = await fromFile(new Parser(), resolve(REPO_ROOT, "asyncapi.yaml")).parse();
    const errors = diagnostics.filter((d) => d.severity === 0).map((d) => `${d.code}: ${d.message} at ${d.path.join("/")}`);
    expect(errors).toEqual([]);
    expect(document).toBeDefined();
    const names = document!
      .messages()
      .all()
      .map((m) => m.name());
    for (const name of ["ScheduleTimer", "CancelTimer", "CancelTimersByPrefix", "TimerCompleted", "TimerFailed", "RetryTimer"])
      expect(names).toContain(name);
    for (const name of ["DueTimeReached", "DueTimeMissed", "CommandRejected", "GetTimerReply", "ListTimersRequest", "TimerStatsReply"])
      expect(names).toContain(name);
    const due = document!
      .channels()
      .all()
      .find((c) => c.address() === "timer.events.due.{tenantId}");
    expect(
      due
        ?.parameters()
        .all()
        .map((p) => p.id()),
    ).toEqual(["tenantId"]);
    const headers = document!
      .messages()
      .all()
      .find((m) => m.name() === "DueTimeReached")!
      .headers()!
      .json() as { properties: object };
    expect(Object.keys(headers.properties)).toEqual(expect.arrayContaining(["Nats-Msg-Id", "traceparent", "tracestate"]));
    // the payload is the schemas/ file, resolved
    const payload = document!
      .messages()
      .all()
      .find((m) => m.name() === "ScheduleTimer")!
      .payload()!
      .json() as { title: string };
    expect(payload.title).toBe("ScheduleTimer");
  });

  it("when a schema file is read, then its title is the message type and it is JSON Schema 2020-12", () => {
    for (const name of ["ScheduleTimer", "RetryTimer", "DueTimeMissed", "CommandRejected", "ListTimersReply"]) {
      const schema = JSON.parse(readFileSync(resolve(REPO_ROOT, `schemas/${name}.json`), "utf8")) as Record<string, unknown>;
      expect(schema.title).toBe(name);
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    }
  });
});
