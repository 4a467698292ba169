import { describe, expect, it } from "vitest";
import { tenantsWithin } from "../../../src/adapters/nats/backlog-tenants.js";
import { commandSources, storedTenant, tenantSubjects } from "../../../src/adapters/nats/command-partitions.js";

const [base, p0, p3] = (() => {
  const sources = commandSources("timer", "timer-service", 4);
  return [sources[0]!, sources[1]!, sources[4]!];
})();

describe("tenantsWithin", () => {
  it("when a partition holds a flooder and small tenants, then the small ones are chosen, fewest first, their kinds summed", () => {
    const counts = {
      "timer.tenant-commands.3.schedule.flood": 200_000,
      "timer.tenant-commands.3.schedule.b": 3,
      "timer.tenant-commands.3.cancel.b": 2,
      "timer.tenant-commands.3.schedule.c": 1,
      "timer.tenant-commands.3.schedule.heavy": 1_001,
    };

    expect(tenantsWithin(counts, p3, 1_000)).toEqual([
      { tenantId: "c", stored: 1 },
      { tenantId: "b", stored: 5 },
    ]);
  });

  it("when subjects are outside the source's layout, then they are left to the consumer", () => {
    const counts = {
      "timer.tenant-commands.0.schedule.a": 1,
      "timer.tenant-commands.3.schedule.other-partition": 1,
      "timer.commands.schedule.base": 1,
    };

    expect(tenantsWithin(counts, p0, 1_000).map((t) => t.tenantId)).toEqual(["a"]);
    expect(
      tenantsWithin({ "timer.commands.schedule": 1, "timer.commands.schedule.a.b": 1, "timer.commands.cancel.t": 2 }, base, 1_000),
    ).toEqual([{ tenantId: "t", stored: 2 }]);
  });
});

describe("a source's subjects", () => {
  it("when a tenant is read by subject, then its filter covers every kind in the source and nothing else", () => {
    expect(tenantSubjects(p3, "acme")).toBe("timer.tenant-commands.3.*.acme");
    expect(tenantSubjects(base, "acme")).toBe("timer.commands.*.acme");
    expect(storedTenant(p3, "timer.tenant-commands.3.cancelprefix.acme")).toBe("acme");
    expect(storedTenant(p3, "timer.tenant-commands.31.schedule.acme")).toBeUndefined();
  });
});
