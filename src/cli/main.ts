#!/usr/bin/env node
import { parseArgs } from "node:util";
import { USAGE } from "./cli-usage.js";
import { UsageError } from "./usage-error.js";

/**
 * `timer-service`: what runs on the service's own side — the service itself and its store's
 * export, import and backup. Everything done over NATS (schedule, cancel, get, list, stats, watch,
 * retry, history) is `timer-client`, in @timer-service/client, which other projects install.
 */
const OPTIONS = {
  tenant: { type: "string" },
  out: { type: "string" },
  in: { type: "string" },
  history: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** The commands that moved to the client package's CLI. */
const CLIENT_COMMANDS = new Set(["schedule", "cancel", "cancel-prefix", "retry", "get", "list", "stats", "watch", "history"]);

async function main(argv: string[]): Promise<number> {
  const [first] = argv;
  if (first !== undefined && CLIENT_COMMANDS.has(first)) {
    throw new UsageError(
      `"${first}" is a command of timer-client (in @timer-service/client): npx timer-client ${argv.join(" ")}\n` +
        "(it reads NATS_URL, else TIMER_BROKER_URL; timer-client --help shows its usage)",
    );
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  const flags = parsed.values;
  if (flags.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  switch (command) {
    case "start":
    case "serve": {
      const { runTimerService } = await import("../composition/run-timer-service.js");
      await runTimerService();
      return -1; // keeps running; the service exits the process itself
    }
    case "export":
    case "import":
    case "backup": {
      const transfer = await import("./transfer-commands.js");
      const run = { export: transfer.exportCommand, import: transfer.importCommand, backup: transfer.backupCommand }[command];
      return run(flags);
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`timer-service: ${error.message}\nRun "timer-service --help" for usage.\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`timer-service: ${(error as Error).message ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
