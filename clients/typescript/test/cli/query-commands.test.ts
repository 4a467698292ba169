import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliAgainst, type CliResult } from "./cli-support.js";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../../test/support/timer-service-process.js";
import { TimerClient } from "../../../../test/support/timer-client.js";
import { eventually, fromNow } from "../../../../test/integration/integration-support.js";

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

const cli = (...args: string[]): Promise<CliResult> => runCliAgainst(nats.url, ...args);

describe("timer-client get, list, stats", () => {
  it("when timers exist, then get prints one, list pages through them and stats counts them", async () => {
    for (let i = 1; i <= 5; i++) await client.schedule("clitenant", `invoice-${i}`, fromNow(3_600_000 + i * 1_000), { data: { n: i } });
    await client.schedule("clitenant", "other-1", fromNow(7_200_000));
    await eventually(async () => expect(JSON.parse((await cli("stats", "--tenant", "clitenant")).stdout).scheduled).toBe(6));

    const got = await cli("get", "--tenant", "clitenant", "--id", "invoice-3");
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ serviceCallId: "invoice-3", state: "Scheduled", data: { n: 3 } });

    const unknown = await cli("get", "--tenant", "clitenant", "--id", "nope");
    expect([unknown.code, unknown.stderr]).toEqual([1, 'no timer "nope" for tenant clitenant\n']);

    const page = await cli("list", "--tenant", "clitenant", "--id-prefix", "invoice-", "--limit", "2");
    expect(
      page.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).serviceCallId),
    ).toEqual(["invoice-1", "invoice-2"]);
    const cursor = /--cursor (\S+)/.exec(page.stderr)?.[1];
    expect(cursor).toBeDefined();
    const next = await cli("list", "--tenant", "clitenant", "--id-prefix", "invoice-", "--limit", "2", "--cursor", cursor!);
    expect(
      next.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).serviceCallId),
    ).toEqual(["invoice-3", "invoice-4"]);

    const all = await cli("list", "--tenant", "clitenant", "--state", "Scheduled", "--limit", "2", "--all");
    expect(all.stdout.trim().split("\n")).toHaveLength(6);
    expect(all.stderr).toBe("");
  });

  it("when a query is malformed, then the CLI names the problem and exits 2", async () => {
    const bad = await cli("list", "--tenant", "clitenant", "--state", "Sleeping");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^timer-client: --state "Sleeping" is not one of Scheduled, Reached, /);
    const badDate = await cli("list", "--tenant", "clitenant", "--due-before", "2026-02-30T00:00:00Z");
    expect([badDate.code, badDate.stderr]).toEqual([
      2,
      expect.stringContaining('--due-before "2026-02-30T00:00:00Z" is not a date-time: February 2026 has 28 days, not 30'),
    ]);
    expect((await cli("list", "--tenant", "clitenant", "--all", "--cursor", "x")).code).toBe(2);
    expect((await cli("get", "--tenant", "clitenant")).stderr).toContain("--id is required");
  });
});
