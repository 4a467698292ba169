import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliAgainst, type CliResult } from "./cli-support.js";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../../test/support/timer-service-process.js";
import { TimerClient } from "../../../../test/support/timer-client.js";
import { eventually } from "../../../../test/integration/integration-support.js";

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let client: TimerClient;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "100" });
  client = await TimerClient.connect(nats.url);
});

afterAll(async () => {
  await client?.close();
  await service?.dispose();
  await nats?.dispose();
});

// --no-confirm: the outcomes are checked in cli-confirm.test.ts.
const cli = (...args: string[]): Promise<CliResult> => runCliAgainst(nats.url, ...args, "--no-confirm");

/** A one-shot timer 10 s overdue with no lateness allowed: it ends Missed. */
let seq = 0;
async function missed(tenant: string, id: string): Promise<void> {
  const payload = { tenantId: tenant, serviceCallId: id, dueAt: new Date(Date.now() - 10_000).toISOString(), maxLatenessMs: 0 };
  const envelope = { id: `m-${++seq}`, type: "ScheduleTimer", tenantId: tenant, timestampMs: Date.now(), payload };
  await client.publishRaw(`timer.commands.schedule.${tenant}`, JSON.stringify(envelope));
}

const refired = (tenant: string) =>
  new Set(
    client.events
      .filter((e) => e.body.type === "DueTimeReached" && e.body.tenantId === tenant && e.body.payload.generation === 2)
      .map((e) => e.body.payload.serviceCallId as string),
  );

describe("timer-client retry (CONTRACT §14)", () => {
  it("when retry names one Missed timer, then it publishes a RetryTimer and the timer fires again", async () => {
    await missed("cli-retry", "one");
    await eventually(async () => expect((await cli("get", "--tenant", "cli-retry", "--id", "one")).stdout).toContain('"Missed"'));

    const result = await cli("retry", "--tenant", "cli-retry", "--id", "one");

    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).command).toMatchObject({
      type: "RetryTimer",
      payload: { tenantId: "cli-retry", serviceCallId: "one" },
    });
    await eventually(() => expect(refired("cli-retry")).toEqual(new Set(["one"])));
  });

  it("when retry names a state and a prefix, then every matching timer is retried and the others stay", async () => {
    for (const id of ["job-1", "job-2", "job-3", "other"]) await missed("cli-bulk", id);
    await eventually(async () => expect(JSON.parse((await cli("stats", "--tenant", "cli-bulk")).stdout).missed).toBe(4));

    const result = await cli("retry", "--tenant", "cli-bulk", "--state", "Missed", "--id-prefix", "job-");

    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ tenantId: "cli-bulk", state: "Missed", serviceCallIdPrefix: "job-", retried: 3 });
    await eventually(() => expect(refired("cli-bulk")).toEqual(new Set(["job-1", "job-2", "job-3"])));
  });

  it("when list asks --order changed --since 1h, then the tenant's timers come newest change first with updatedAt", async () => {
    for (const id of ["first", "second", "third"]) {
      await missed("cli-changed", id);
      await eventually(async () => expect((await cli("get", "--tenant", "cli-changed", "--id", id)).stdout).toContain('"Missed"'));
    }

    const result = await cli("list", "--tenant", "cli-changed", "--order", "changed", "--since", "1h");

    expect(result.code).toBe(0);
    const timers = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { serviceCallId: string; updatedAt: string });
    expect(timers.map((t) => t.serviceCallId)).toEqual(["third", "second", "first"]);
    expect(Date.parse(timers[0]!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(timers[2]!.updatedAt));
    expect((await cli("list", "--tenant", "cli-changed", "--order", "sideways")).code).toBe(2);
    expect((await cli("list", "--tenant", "cli-changed", "--since", "xyzzy")).code).toBe(2);
  });

  it.each([
    [["retry", "--tenant", "t"], "--id is required"],
    [["retry", "--tenant", "t", "--state", "Reached"], '--state "Reached" is not one of Failed, TimedOut, Missed'],
    [["retry", "--tenant", "t", "--id", "x", "--state", "Failed"], "not both"],
    [["retry", "--tenant", "t", "--id-prefix", "x"], "--id-prefix needs --state"],
  ])("when retry gets %j, then it exits 2 saying %s", async (args, message) => {
    const result = await cli(...args);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });
});
