import { describe, expect, it } from "vitest";
import { FairQueryGate } from "../../../src/app/queries/fair-query-gate.js";

/** A query that resolves when told to, recording when it started. */
function controlled(started: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { run: async () => (started.push(name), await done, name), finish };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("FairQueryGate", () => {
  it("when one tenant has many queries waiting, then another tenant's query runs after at most one more of them", async () => {
    const gate = new FairQueryGate({ running: 1, runningPerTenant: 1, waitingPerTenant: 100 });
    const started: string[] = [];
    const flood = Array.from({ length: 5 }, (_, i) => controlled(started, `a${i}`));
    const floodRuns = flood.map((q) => gate.run("a", q.run));
    await turn();
    const quiet = controlled(started, "b0");
    const quietRun = gate.run("b", quiet.run);

    for (const q of flood.slice(0, 2)) {
      await turn();
      await turn();
      q.finish();
    }
    quiet.finish();
    for (const q of flood.slice(2)) q.finish();
    await Promise.all([...floodRuns, quietRun]);

    // Round-robin: b waits for at most the one query of a that was admitted before it arrived.
    expect(started.indexOf("b0")).toBeLessThanOrEqual(2);
    expect(started.filter((name) => name.startsWith("a"))).toEqual(["a0", "a1", "a2", "a3", "a4"]);
  });

  it("when a tenant's queue is full, then its next query is refused at once and others' are not", async () => {
    const gate = new FairQueryGate({ running: 1, runningPerTenant: 1, waitingPerTenant: 2 });
    const started: string[] = [];
    const held = Array.from({ length: 3 }, (_, i) => controlled(started, `a${i}`));
    const runs = held.map((q) => gate.run("a", q.run));
    await turn();

    expect(await gate.run("a", async () => "refused?")).toBeUndefined();
    const other = gate.run("b", async () => "b");
    for (const q of held) q.finish();
    expect(await Promise.all([...runs, other])).toEqual(["a0", "a1", "a2", "b"]);
  });
});
