import { describe, expect, it } from "vitest";
import { RoundRobinQueues } from "../../../src/adapters/nats/round-robin-queues.js";

describe("RoundRobinQueues", () => {
  it("when one queue is long and another has one item, then the first batch holds that item and each queue keeps its order", () => {
    const queues = new RoundRobinQueues<string>();
    for (let i = 0; i < 1_000; i++) queues.push("a", `a${i}`);
    queues.push("b", "b0");

    const batch = queues.take(100);

    expect(batch).toHaveLength(100);
    expect(batch).toContain("b0");
    expect(batch.filter((x) => x.startsWith("a"))).toEqual(Array.from({ length: 99 }, (_, i) => `a${i}`));
    expect(queues.size).toBe(901);
  });

  it("when queues are taken to the end, then every item comes once, in its queue's order", () => {
    const queues = new RoundRobinQueues<string>();
    const pushed: string[] = [];
    for (let i = 0; i < 500; i++) {
      const source = (i * 7) % 5;
      queues.push(`t${source}`, `${source}:${i}`);
      pushed.push(`${source}:${i}`);
    }
    const taken: string[] = [];
    while (queues.size > 0) taken.push(...queues.take(33));

    expect([...taken].sort()).toEqual([...pushed].sort());
    for (let source = 0; source < 5; source++) {
      const order = (list: string[]) => list.filter((x) => x.startsWith(`${source}:`));
      expect(order(taken)).toEqual(order(pushed));
    }
  });

  it("when several queues are non-empty, then a batch takes an equal share of each", () => {
    const queues = new RoundRobinQueues<number>();
    for (let i = 0; i < 100; i++) for (const source of [0, 1, 2, 3]) queues.push(`t${source}`, source);

    const batch = queues.take(40);

    expect([0, 1, 2, 3].map((source) => batch.filter((x) => x === source).length)).toEqual([10, 10, 10, 10]);
  });

  it("when more tenants have items than a batch holds, then the next batch starts with those left out and no tenant is skipped", () => {
    const queues = new RoundRobinQueues<string>();
    for (let t = 0; t < 10; t++) for (let i = 0; i < 3; i++) queues.push(`t${t}`, `t${t}:${i}`);

    const first = queues.take(4);
    const second = queues.take(6);

    expect(first).toEqual(["t0:0", "t1:0", "t2:0", "t3:0"]);
    expect(second).toEqual(["t4:0", "t5:0", "t6:0", "t7:0", "t8:0", "t9:0"]);
    expect(queues.take(1)).toEqual(["t0:1"]);
  });

  it("when a tenant's queue is emptied, then it holds no memory and comes back last when it gets items again", () => {
    const queues = new RoundRobinQueues<string>();
    queues.push("a", "a0");
    queues.push("b", "b0");
    queues.push("b", "b1");

    expect(queues.take(2)).toEqual(["a0", "b0"]);
    queues.push("a", "a1");

    expect(queues.take(2)).toEqual(["b1", "a1"]);
    expect(queues.size).toBe(0);
  });
});
