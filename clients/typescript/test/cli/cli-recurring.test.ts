/** The CLI's flags for CONTRACT §10: --every, --cron/--tz, --until, --max-occurrences, --max-lateness, cancel --id-prefix. */
import { runCli as runClient, type CliResult } from "./cli-support.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";
import { TimerClient } from "../../../../test/support/timer-client.js";
import { TimerServiceProcess } from "../../../../test/support/timer-service-process.js";

/** Against the real service; --no-confirm: the outcomes are checked in cli-confirm.test.ts. */
const runCli = (args: string[], env: Record<string, string>): Promise<CliResult> => runClient([...args, "--no-confirm"], env);

describe("timer-client: recurring timers, lateness, prefix cancel", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let client: TimerClient;
  let env: Record<string, string>;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url);
    client = await TimerClient.connect(nats.url);
    env = { NATS_URL: nats.url };
  });

  afterAll(async () => {
    await client?.close();
    await service?.dispose();
    await nats?.dispose();
  });

  it("when --every and --max-occurrences are given, then the timer fires that many times, one interval apart", async () => {
    const result = await runCli(
      ["schedule", "--tenant", "cli", "--id", "every", "--every", "1", "second", "--max-occurrences", "2", "--max-lateness", "30s"],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).command.payload).toMatchObject({
      repeat: { everyMs: 1_000, maxOccurrences: 2 },
      maxLatenessMs: 30_000,
    });

    await client.waitFor((e) => e.body.payload?.serviceCallId === "every" && e.body.payload?.occurrence === 2, 10_000);
    const events = client.received("DueTimeReached", "every").map((e) => e.body.payload);
    expect(events.map((p) => p.occurrence)).toEqual([1, 2]);
    expect(Date.parse(events[1].dueAt) - Date.parse(events[0].dueAt)).toBe(1_000);
  });

  it("when --cron and --tz are given, then the command carries the rule, and --at is optional", async () => {
    const result = await runCli(
      [
        "schedule",
        "--tenant",
        "cli",
        "--id",
        "standup",
        "--cron",
        "0 9 * * MON-FRI",
        "--tz",
        "Europe/Berlin",
        "--until",
        "2030-01-01T00:00:00Z",
      ],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).command.payload.repeat).toEqual({
      cron: "0 9 * * MON-FRI",
      timezone: "Europe/Berlin",
      until: "2030-01-01T00:00:00.000Z",
    });
  });

  it("when cancel-prefix is given, then a CancelTimersByPrefix cancels the matching timers", { timeout: 60_000 }, async () => {
    // Far enough ahead for four CLI runs (each a Node start and a connect) on a loaded machine.
    const start = Date.now();
    const at = new Date(start + 15_000).toISOString();
    for (const id of ["order-4711:a", "order-4711:b", "order-4712:a"])
      expect((await runCli(["schedule", "--tenant", "cli", "--id", id, "--at", at], env)).code).toBe(0);

    const result = await runCli(["cancel-prefix", "--tenant", "cli", "--id-prefix", "order-4711:"], env);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).command).toMatchObject({
      type: "CancelTimersByPrefix",
      payload: { tenantId: "cli", serviceCallIdPrefix: "order-4711:" },
    });
    expect(Date.now() - start, "the prefix cancel was sent before the timers were due").toBeLessThan(15_000);

    await client.waitForDue("cli", "order-4712:a", 25_000);
    expect(client.received("DueTimeReached").filter((e) => e.body.payload.serviceCallId.startsWith("order-4711:"))).toEqual([]);
  });

  it.each([
    [["--every", "500ms"], /--every "500ms" is shorter than 1s/],
    [["--every", "5m", "--cron", "* * * * *"], /only one of --every or --cron/],
    [["--tz", "Europe/Berlin", "--in", "5m"], /need --every or --cron/],
    [["--every", "5m", "--tz", "UTC"], /--tz needs --cron/],
    [["--in", "5m", "--max-lateness", "soon"], /--max-lateness/],
    [["--every", "5m", "--max-occurrences", "0"], /--max-occurrences/],
  ])("when schedule gets %j, then it exits 2 naming the flag", async (args, message) => {
    const result = await runCli(["schedule", "--tenant", "cli", "--id", "bad", ...args], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
