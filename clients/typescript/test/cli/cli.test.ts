import { spawn, type ChildProcess } from "node:child_process";
import { CLI, runCli as runClient, type CliResult } from "./cli-support.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServerProcess } from "../../../../test/support/nats-server.js";
import { TimerServiceProcess } from "../../../../test/support/timer-service-process.js";

/** Against the real service; --no-confirm: the outcomes are checked in cli-confirm.test.ts. */
const runCli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> => runClient([...args, "--no-confirm"], env);

/** A long-running `watch`: resolves lines as they are printed. */
class Watcher {
  readonly lines: string[] = [];
  private readonly child: ChildProcess;
  private waiters: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [CLI, "watch", ...args], { env: { ...process.env, TIMER_BROKER_URL: "", ...env } });
    let partial = "";
    this.child.stdout!.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split("\n");
      partial = parts.pop() ?? "";
      for (const line of parts) {
        this.lines.push(line);
        this.waiters = this.waiters.filter((w) => (w.match(line) ? (w.resolve(line), false) : true));
      }
    });
  }

  ready(): Promise<void> {
    return new Promise((resolveReady) => this.child.stderr!.on("data", (c: Buffer) => c.toString().includes("watching") && resolveReady()));
  }

  next(match: (line: string) => boolean): Promise<string> {
    const found = this.lines.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolveLine) => this.waiters.push({ match, resolve: resolveLine }));
  }

  stop(): void {
    this.child.kill("SIGTERM");
  }
}

describe("timer-client CLI", () => {
  let nats: NatsServerProcess;
  let service: TimerServiceProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    nats = await NatsServerProcess.start();
    service = await TimerServiceProcess.start(nats.url);
    env = { NATS_URL: nats.url };
  });

  afterAll(async () => {
    await service?.dispose();
    await nats?.dispose();
  });

  it("when --cron or --tz is invalid, then nothing is sent and the error names the member and a valid value (exit 2)", async () => {
    const cron = await runCli(["schedule", "--tenant", "acme", "--id", "bad-cron", "--cron", "every monday"], env);
    expect(cron.code).toBe(2);
    expect(cron.stderr).toContain(
      'timer-client: ScheduleTimer /payload/repeat/cron: needs 5 fields: minute hour day-of-month month day-of-week; a valid value is 5 fields "minute hour day-of-month month day-of-week", e.g. "0 9 * * 1-5"',
    );
    const zone = await runCli(["schedule", "--tenant", "acme", "--id", "bad-zone", "--cron", "0 9 * * *", "--tz", "Berlin"], env);
    expect(zone.code).toBe(2);
    expect(zone.stderr).toContain('/payload/repeat/timezone: "Berlin" is not an IANA time zone; a valid value is an IANA time zone');
  });

  it("when nothing listens at the server URL, then the error names it", async () => {
    const result = await runCli(["schedule", "--tenant", "acme", "--id", "x", "--in", "5s", "--server", "nats://127.0.0.1:1"], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^timer-client: connecting to NATS at nats:\/\/127\.0\.0\.1:1: /);
  });

  it("when a timer is scheduled with --in, then watch prints its DueTimeReached with the data", async () => {
    const watcher = new Watcher(["--tenant", "cli"], env);
    await watcher.ready();
    const scheduled = await runCli(
      ["schedule", "--tenant", "cli", "--id", "in-1", "--in", "500ms", "--data", '{"n":1}', "--correlation-id", "c-1"],
      env,
    );
    expect(scheduled.code).toBe(0);
    expect(JSON.parse(scheduled.stdout).command).toMatchObject({
      type: "ScheduleTimer",
      correlationId: "c-1",
      payload: { serviceCallId: "in-1", data: { n: 1 } },
    });
    const line = await watcher.next((l) => l.includes('"serviceCallId":"in-1"'));
    expect(JSON.parse(line)).toMatchObject({
      type: "DueTimeReached",
      correlationId: "c-1",
      payload: { tenantId: "cli", serviceCallId: "in-1", data: { n: 1 } },
    });
    watcher.stop();
  });

  it("when a timer is cancelled with the CLI, then it never fires while a later one does", async () => {
    const watcher = new Watcher(["--tenant", "cli2"], env);
    await watcher.ready();
    // Absolute due times with room for two CLI runs (each a Node start and a connect) on a loaded machine.
    const start = Date.now();
    const at = (ms: number): string => new Date(start + ms).toISOString();
    expect((await runCli(["schedule", "--tenant", "cli2", "--id", "doomed", "--at", at(5_000)], env)).code).toBe(0);
    expect((await runCli(["cancel", "--tenant", "cli2", "--id", "doomed"], env)).code).toBe(0);
    expect(Date.now() - start, "the cancel was sent before the timer was due").toBeLessThan(5_000);
    expect((await runCli(["schedule", "--tenant", "cli2", "--id", "barrier", "--at", at(5_500)], env)).code).toBe(0);
    await watcher.next((l) => l.includes('"serviceCallId":"barrier"'));
    expect(watcher.lines.some((l) => l.includes('"serviceCallId":"doomed"'))).toBe(false);
    watcher.stop();
  });

  it("when --at is ISO 8601 with an offset, then the dueAt is that instant", async () => {
    const iso = await runCli(["schedule", "--tenant", "cli", "--id", "at-iso", "--at", "2030-01-02T03:04:05+01:00"], env);
    expect(JSON.parse(iso.stdout).command.payload.dueAt).toBe("2030-01-02T02:04:05.000Z");
    const compact = await runCli(["schedule", "--tenant", "cli", "--id", "at-compact", "--at", "2030-01-02T03:04:05,123456-0130"], env);
    expect(JSON.parse(compact.stdout).command.payload.dueAt).toBe("2030-01-02T04:34:05.123Z");
  });

  it("when --in is written in words, as one argument or several, then the dueAt is that far ahead", async () => {
    const cases: [string[], number][] = [
      [["--in", "10", "seconds"], 10_000],
      [["--in", "10 seconds"], 10_000],
      [["--in", "10s"], 10_000],
      [["--in", "5", "minutes"], 300_000],
      [["--in", "1h30m"], 5_400_000],
      [["--in", "1", "hour", "30", "minutes"], 5_400_000],
      [["--in", "2", "days"], 172_800_000],
    ];
    for (const [inArgs, ms] of cases) {
      const before = Date.now();
      const result = await runCli(["schedule", ...inArgs, "--tenant", "cli", "--id", `in-words-${ms}`], env);
      expect(result.code, `${inArgs.join(" ")}: ${result.stderr}`).toBe(0);
      const dueAt = Date.parse(JSON.parse(result.stdout).command.payload.dueAt);
      expect(dueAt - before, inArgs.join(" ")).toBeGreaterThanOrEqual(ms);
      expect(dueAt - before, inArgs.join(" ")).toBeLessThan(ms + 30_000);
      expect(result.stderr).not.toMatch(/warning/);
    }
  });

  it("when --at is in the past, then a warning is printed before the command is sent, and it still fires", async () => {
    const watcher = new Watcher(["--tenant", "cli3"], env);
    await watcher.ready();
    const result = await runCli(["schedule", "--tenant", "cli3", "--id", "late", "--at", "2020-01-01T00:00:00Z"], env);
    expect(result.code).toBe(0);
    const warning = result.stderr.indexOf("warning: --at 2020-01-01T00:00:00.000Z is ");
    expect(warning, result.stderr).toBeGreaterThanOrEqual(0);
    expect(result.stderr).toMatch(/in the past; the timer fires as soon as the service reads the command/);
    expect(warning).toBeLessThan(result.stderr.indexOf("ScheduleTimer late: stored"));
    expect(JSON.parse(result.stdout).command.payload.dueAt).toBe("2020-01-01T00:00:00.000Z");
    const line = await watcher.next((l) => l.includes('"serviceCallId":"late"'));
    expect(JSON.parse(line)).toMatchObject({ type: "DueTimeReached", payload: { serviceCallId: "late" } });
    watcher.stop();
  });

  it("when --at is in the future, then no warning is printed", async () => {
    const result = await runCli(
      ["schedule", "--tenant", "cli", "--id", "future", "--at", new Date(Date.now() + 2 * 86_400_000).toISOString()],
      env,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/warning/);
  });

  it("when a flag is wrong, then the CLI exits 2 naming the problem", async () => {
    const cases: [string[], RegExp][] = [
      [["schedule", "--tenant", "cli", "--in", "5s"], /--id is required/],
      [["schedule", "--tenant", "cli", "--id", "x", "--in", "5 parsecs"], /--in/],
      [["schedule", "--tenant", "cli", "--id", "x", "--in", "10"], /--in "10" is not a duration/],
      [["schedule", "--tenant", "cli", "--id", "x", "--in", "5", "parsecs"], /unexpected argument "parsecs"/],
      [["schedule", "--tenant", "cli", "--id", "x", "--at", "whenever-ish zzz"], /--at "whenever-ish zzz" is not a date-time/],
      [["schedule", "--tenant", "cli", "--id", "x", "--in", "1s", "--at", "tomorrow"], /exactly one of --at or --in/],
      [["schedule", "--tenant", "bad tenant!", "--id", "x", "--in", "1s"], /tenantId "bad tenant!" is not valid/],
      [["schedule", "--tenant", "cli", "--id", "x", "--in", "1s", "--data", "{nope"], /--data is not JSON/],
      [["launch"], /unknown command "launch"/],
      [["watch", "--bogus"], /bogus/],
      [["watch", "--prefix", "a.b"], /--prefix "a.b" is not a subject prefix/],
      [
        ["schedule", "--tenant", "cli", "--id", "x", "--in", "1s", "--server", "ws://127.0.0.1:1"],
        /server "ws:\/\/127.0.0.1:1" is not a NATS URL/,
      ],
      [["cancel", "--tenant", "cli", "--id-prefix", "x"], /timer-client cancel-prefix --id-prefix P/],
      [["start"], /that is the service's own CLI: timer-service start/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, env);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    const unreadable = await runCli(["get", "--tenant", "cli", "--id", "x"], { ...env, NATS_CREDS: "/nonexistent/x.creds" });
    expect(unreadable.code).toBe(2);
    expect(unreadable.stderr).toMatch(/NATS_CREDS: cannot read "\/nonexistent\/x\.creds"/);
  });

  it("when asked for help, then usage with examples is printed", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/timer-client schedule --tenant T --id ID/);
    expect(result.stdout).toMatch(/timer-client history ID --tenant T/);
    expect(result.stdout).toMatch(/Examples:/);
  });
});
