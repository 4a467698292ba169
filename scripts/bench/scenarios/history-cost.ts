/**
 * historyCost: what a timer's history and confirmation on request (CONTRACT §19) cost per command,
 * as an A/B in one run on SQLite. Four configurations:
 *  - off:       this build with TIMER_HISTORY_ENTRIES=0;
 *  - kept:      this build keeping 20 entries per timer (the default);
 *  - confirmed: kept, and every command sent with `Timer-Confirm: 1`; a subscriber on
 *               `timer.outcomes.>` in the bench process counts the outcomes;
 *  - v4:        the v4.0.0 release (V4_RELEASE_COMMIT, built by baseline.ts), same commands, no header.
 * Every round of a configuration is the backlog drain of the ingest scenario (measureBacklog): a
 * fresh nats-server and empty store, the service started once and stopped, N ScheduleTimer
 * commands queued over TENANTS tenants, the service started again and measured from its first
 * delivery until the consumer is drained. Half of the commands create timers, the other half
 * reschedule HOT_PER_TENANT timers per tenant over and over, so that their histories fill up to
 * their limit and then drop their oldest entries. The configurations alternate, the order rotated
 * from round to round so that none is always first; figures are the medians of each configuration's
 * rounds. Targets: kept / off ≤ 1.10 (CONTRACT §19) and off / v4 ≤ 1.05 (no header: nothing
 * measurable); the spread of each configuration's rounds says how far the machine lets them be read.
 *
 *   npm run bench -- --only historyCost            (50,000 commands, 5 rounds of each)
 *   npm run bench -- --quick --only historyCost    (5,000 commands, 2 rounds: a sanity run)
 */
import { headers } from "@nats-io/transport-node";
import { ensureBaselineBuild } from "../baseline.js";
import {
  BenchClient,
  loadAverage,
  median,
  metricSum,
  natsPid,
  prng,
  round,
  scaled,
  scheduleMessage,
  scrape,
  startNats,
  startService,
  stopService,
  waitUntil,
  type BenchContext,
  type OutMessage,
} from "../harness.js";
import { inScope, measureBacklog } from "./ingest.js";

/** The v4.0.0 release: before history and confirmation. */
export const V4_RELEASE_COMMIT = "fafcd82";

const CONFIGS = ["off", "kept", "confirmed", "v4"] as const;
type Config = (typeof CONFIGS)[number];
const ENV: Record<Config, Record<string, string>> = {
  off: { TIMER_HISTORY_ENTRIES: "0" },
  kept: { TIMER_HISTORY_ENTRIES: "20" },
  confirmed: { TIMER_HISTORY_ENTRIES: "20" },
  v4: {},
};
const TENANTS = 100;
/** Timers per tenant that the rescheduling half of the commands keeps hitting (about 25 commands each at 50,000). */
const HOT_PER_TENANT = 10;
const RESCHEDULE_SHARE = 0.5;
const HORIZON_START_MS = 86_400_000; // due between 1 and 31 days ahead: nothing fires during the bench
const HORIZON_SPAN_MS = 30 * 86_400_000;
const TARGET_KEPT_TO_OFF = 1.1;
const TARGET_OFF_TO_V4 = 1.05;

/**
 * N ScheduleTimer commands over TENANTS tenants, the same for every configuration. Each has its own
 * `timestampMs` (increasing, in the past), so that every reschedule applies and every envelope id differs.
 */
function commands(n: number): OutMessage[] {
  const random = prng(0x4157);
  const now = Date.now();
  const base = now + HORIZON_START_MS;
  return Array.from({ length: n }, (_, i) => {
    const tenant = `hist-${String(i % TENANTS).padStart(3, "0")}`;
    const serviceCallId =
      random() < RESCHEDULE_SHARE ? `hot-${Math.floor(random() * HOT_PER_TENANT)}` : `new-${String(i).padStart(8, "0")}`;
    return scheduleMessage(tenant, serviceCallId, base + Math.floor(random() * HORIZON_SPAN_MS), now - n + i);
  });
}

interface RoundFigures {
  readonly round: number;
  readonly config: Config;
  readonly usPerCommand: number | undefined;
  readonly commandsPerSec: number;
  readonly seconds: number;
  readonly threadsUsPerCommand: { main?: number; second?: number; rest?: number };
  readonly serviceWrittenKBPerCommand: number | undefined;
  readonly received: number;
  /** Outcomes received, those applied, and the others by outcome and reason (or code). */
  readonly outcomes?: { count: number; applied: number; other: Record<string, number> };
  readonly loadAverage1m: number | undefined;
}

export async function historyCost(ctx: BenchContext): Promise<Record<string, unknown>> {
  const n = scaled(ctx, 50_000);
  const rounds = ctx.quick ? 2 : 5;
  const v4 = ensureBaselineBuild(V4_RELEASE_COMMIT);
  ctx.log(
    `v4 = ${v4.commitHash.slice(0, 12)} (${v4.built ? `built in ${v4.buildS} s` : "cached build"}); ${n} commands over ${TENANTS} tenants, ${rounds} rounds of each`,
  );
  const plain = commands(n);
  const confirm = headers();
  confirm.set("Timer-Confirm", "1");
  const confirmed = plain.map((m) => ({ ...m, headers: confirm }));
  const sqliteCtx: BenchContext = { ...ctx, store: "sqlite" };

  const figures: RoundFigures[] = [];
  const order: string[] = [];
  const runRound = async (config: Config, roundNo: number): Promise<void> => {
    const name = `historyCost ${roundNo} ${config}`;
    await inScope(sqliteCtx, name, async (sub) => {
      const label = `history-${roundNo}-${config}`;
      const nats = await startNats(sub);
      const service = await startService(sub, nats.url, label, ENV[config], config === "v4" ? v4.entry : undefined);
      const client = await BenchClient.connect(sub, nats.url);
      const pids: Record<string, number | undefined> = { service: service.pid, nats: natsPid(nats) };
      const outcomes = { count: 0, applied: 0, other: {} as Record<string, number> };
      if (config === "confirmed") {
        const subscription = client.nc.subscribe("timer.outcomes.>", {
          callback: (error, message) => {
            if (error !== null) return;
            outcomes.count++;
            const { outcome, reason, code } = message.json<{ outcome?: string; reason?: string; code?: string }>();
            if (outcome === "applied") outcomes.applied++;
            else {
              // Reasons name the timer's timestampMs: counted by their wording, numbers left out.
              const why = `${outcome}: ${code ?? reason?.replace(/\d+/g, "N")}`;
              outcomes.other[why] = (outcomes.other[why] ?? 0) + 1;
            }
          },
        });
        sub.scope.defer(() => subscription.unsubscribe());
      }
      const measured = await measureBacklog(sub, service, client, pids, config === "confirmed" ? confirmed : plain, label, name);
      if (config === "confirmed") {
        // Outcomes are core NATS, sent once a batch has committed: the last ones may trail the last ack.
        await waitUntil(() => outcomes.count >= n, { timeoutMs: 30_000, what: `${n} outcomes` }).catch(() =>
          sub.log(`WARNING: ${outcomes.count} of ${n} outcomes arrived`),
        );
      }
      const received = metricSum(await scrape(service), "timer_commands_received_total");
      await stopService(service);
      const cpu = measured.cpu as Record<string, number>;
      const row: RoundFigures = {
        round: roundNo,
        config,
        usPerCommand: cpu.serviceUsPerItem,
        commandsPerSec: measured.commandsPerSec as number,
        seconds: measured.seconds as number,
        threadsUsPerCommand: { main: cpu.serviceMainUsPerItem, second: cpu.serviceSecondUsPerItem, rest: cpu.serviceRestUsPerItem },
        serviceWrittenKBPerCommand: cpu.serviceWrittenKBPerItem,
        received,
        ...(config === "confirmed" ? { outcomes: { ...outcomes, other: { ...outcomes.other } } } : {}),
        loadAverage1m: loadAverage()[0],
      };
      figures.push(row);
      if (received < n) sub.log(`WARNING: the service counted only ${received} of ${n} commands`);
      sub.log(
        `${row.usPerCommand ?? "?"} µs/cmd (main ${row.threadsUsPerCommand.main ?? "?"}, second ${row.threadsUsPerCommand.second ?? "?"}, ` +
          `rest ${row.threadsUsPerCommand.rest ?? "?"}), ${row.commandsPerSec}/s` +
          `${row.outcomes === undefined ? "" : `, ${row.outcomes.count} outcomes (${row.outcomes.applied} applied, others ${JSON.stringify(row.outcomes.other)})`}; load ${row.loadAverage1m}`,
      );
    });
  };

  const loadBefore = loadAverage();
  for (let roundNo = 1; roundNo <= rounds; roundNo++) {
    for (let k = 0; k < CONFIGS.length; k++) {
      const config = CONFIGS[(k + roundNo - 1) % CONFIGS.length]!;
      order.push(`${roundNo}:${config}`);
      await runRound(config, roundNo);
    }
  }
  const loadAfter = loadAverage();

  const of = (config: Config) => figures.filter((r) => r.config === config);
  const medianOf = (config: Config, pick: (r: RoundFigures) => number | undefined): number | undefined => {
    const value = median(
      of(config)
        .map(pick)
        .filter((v): v is number => v !== undefined),
    );
    return value === undefined ? undefined : round(value, 1);
  };
  /** max / min − 1 of a configuration's rounds: how much the machine moved one and the same thing. */
  const spreadOf = (config: Config): number | undefined => {
    const values = of(config)
      .map((r) => r.usPerCommand)
      .filter((v): v is number => v !== undefined && v > 0);
    return values.length < 2 ? undefined : round(Math.max(...values) / Math.min(...values) - 1, 3);
  };
  const medians = Object.fromEntries(
    CONFIGS.map((config) => [
      config,
      {
        usPerCommand: medianOf(config, (r) => r.usPerCommand),
        commandsPerSec: medianOf(config, (r) => r.commandsPerSec),
        writtenKBPerCommand: medianOf(config, (r) => r.serviceWrittenKBPerCommand),
        rounds: of(config).length,
        spread: spreadOf(config),
      },
    ]),
  ) as Record<Config, { usPerCommand?: number; commandsPerSec?: number; writtenKBPerCommand?: number; rounds: number; spread?: number }>;
  const ratio = (a: Config, b: Config): number | undefined => {
    const [x, y] = [medians[a].usPerCommand, medians[b].usPerCommand];
    return x === undefined || y === undefined || y <= 0 ? undefined : round(x / y, 3);
  };
  const keptToOff = ratio("kept", "off");
  const confirmedToKept = ratio("confirmed", "kept");
  const offToV4 = ratio("off", "v4");
  const spreads = CONFIGS.map(spreadOf).filter((s): s is number => s !== undefined);
  const widestSpread = spreads.length === 0 ? undefined : Math.max(...spreads);
  const noiseBand = widestSpread !== undefined && widestSpread > TARGET_OFF_TO_V4 - 1;
  const verdict = (value: number | undefined, target: number): string =>
    value === undefined ? "no figure" : value <= target ? "pass" : "miss";
  ctx.log(
    `medians µs/cmd: off ${medians.off.usPerCommand}, kept ${medians.kept.usPerCommand}, confirmed ${medians.confirmed.usPerCommand}, v4 ${medians.v4.usPerCommand}; ` +
      `kept/off ${keptToOff} (target ≤ ${TARGET_KEPT_TO_OFF}: ${verdict(keptToOff, TARGET_KEPT_TO_OFF)}), confirmed/kept ${confirmedToKept}, ` +
      `off/v4 ${offToV4} (target ≤ ${TARGET_OFF_TO_V4}: ${verdict(offToV4, TARGET_OFF_TO_V4)})` +
      `${noiseBand ? `; rounds of one configuration vary up to ${Math.round(widestSpread * 100)} %: differences within that are noise` : ""}` +
      `; load average ${loadBefore.join(" ")} → ${loadAfter.join(" ")}`,
  );
  return {
    commands: n,
    tenants: TENANTS,
    rescheduleShare: RESCHEDULE_SHARE,
    hotTimersPerTenant: HOT_PER_TENANT,
    store: "sqlite",
    v4Commit: v4.commitHash.slice(0, 12),
    rounds,
    order,
    medians,
    keptToOff,
    targetKeptToOff: `<= ${TARGET_KEPT_TO_OFF}`,
    confirmedToKept,
    offToV4,
    targetOffToV4: `<= ${TARGET_OFF_TO_V4}`,
    /** The widest max/min − 1 of one configuration's rounds; above 0.05, off/v4 cannot be read finer than that. */
    widestSpread,
    noiseBand,
    perRound: figures,
    loadAverage: { before: loadBefore, after: loadAfter },
  };
}
