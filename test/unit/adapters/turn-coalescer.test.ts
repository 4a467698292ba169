import { describe, expect, it } from "vitest";
import { TurnCoalescer } from "../../../src/adapters/storage/turn-coalescer.js";

describe("TurnCoalescer", () => {
  it("when calls are made in one turn, then the first runs at once and the others together at the end of the turn, each with its own result", async () => {
    const runs: number[][] = [];
    const coalescer = new TurnCoalescer((inputs: readonly number[]) => {
      runs.push([...inputs]);
      return inputs.map((n) => n * 10);
    });

    const calls = [coalescer.run(1), coalescer.run(2), coalescer.run(3)];
    const beforeTheTurnEnds = runs.map((run) => [...run]);
    const results = await Promise.all(calls);

    expect(beforeTheTurnEnds).toEqual([[1]]);
    expect(results).toEqual([10, 20, 30]);
    expect(runs).toEqual([[1], [2, 3]]);
  });

  it("when calls are made in different turns, then each turn runs on its own", async () => {
    const runs: number[][] = [];
    const coalescer = new TurnCoalescer((inputs: readonly number[]) => {
      runs.push([...inputs]);
      return [...inputs];
    });

    await coalescer.run(1);
    await coalescer.run(2);

    expect(runs).toEqual([[1], [2]]);
  });

  it("when a run throws, then every call of it fails with the error and a later call runs again", async () => {
    let fail = true;
    const coalescer = new TurnCoalescer((inputs: readonly string[]) => {
      if (fail) throw new Error("disk I/O error");
      return inputs.map((s) => s.toUpperCase());
    });

    const settled = await Promise.allSettled([coalescer.run("a"), coalescer.run("b"), coalescer.run("c")]);
    fail = false;

    expect(settled.map((s) => (s.status === "rejected" ? (s.reason as Error).message : s.value))).toEqual([
      "disk I/O error",
      "disk I/O error",
      "disk I/O error",
    ]);
    expect(await coalescer.run("d")).toBe("D");
  });

  it("when flushed before the end of the turn, then what waits runs at once", async () => {
    const runs: string[][] = [];
    const coalescer = new TurnCoalescer((inputs: readonly string[]) => {
      runs.push([...inputs]);
      return [...inputs];
    });

    const first = coalescer.run("x");
    const waiting = coalescer.run("y");
    coalescer.flush();

    expect(runs).toEqual([["x"], ["y"]]);
    expect(await Promise.all([first, waiting])).toEqual(["x", "y"]);
  });
});
