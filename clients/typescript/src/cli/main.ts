import { parseArgs } from "node:util";
import { TimerClientError, TimerRejectedError } from "../timer-client-error.js";
import { serversOf } from "./connection.js";
import { joinDurationWords } from "./durations.js";
import { EXIT } from "./exit-codes.js";
import { OPTIONS, type Flags } from "./options.js";
import { get, history, list, stats } from "./query-commands.js";
import { cancel, cancelPrefix, retry, schedule, type Output } from "./send-commands.js";
import { USAGE } from "./usage.js";
import { UsageError } from "./usage-error.js";
import { watch } from "./watch.js";

const COMMANDS: Record<string, (flags: Flags, output: Output) => Promise<number>> = {
  schedule,
  cancel,
  "cancel-prefix": cancelPrefix,
  retry,
  get,
  list,
  stats,
  watch,
};

const output: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: joinDurationWords(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  const flags = parsed.values;
  if (flags.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return EXIT.OK;
  }
  if (command === "history") {
    if (rest.length > 1) throw new UsageError(`unexpected argument "${rest[1]}"`);
    return history(flags, rest[0], output);
  }
  const handler = COMMANDS[command];
  if (handler === undefined) {
    const hint = ["start", "serve", "export", "import", "backup"].includes(command)
      ? ` (that is the service's own CLI: timer-service ${command})`
      : "";
    throw new UsageError(`unknown command "${command}"${hint}`);
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  return handler(flags, output);
}

/** The failure as one line that names the server whenever the broker is involved. */
function brokerMessage(error: Error, argv: string[]): string {
  let servers: string;
  try {
    const server = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: false }).values.server;
    servers = serversOf({ server: typeof server === "string" ? server : undefined }).join(", ");
  } catch {
    return error.message;
  }
  return servers.split(", ").some((s) => error.message.includes(s.replace(/^nats:\/\//, "")))
    ? error.message
    : `${error.message} (NATS at ${servers})`;
}

/** Runs the CLI on `argv` and sets the exit code. */
export function main(argv: string[]): void {
  run(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof UsageError || (error instanceof TimerClientError && error.code === "INVALID_INPUT")) {
        process.stderr.write(`timer-client: ${error.message}\n(timer-client --help shows the usage)\n`);
        process.exitCode = EXIT.USAGE;
      } else if (error instanceof TimerRejectedError) {
        process.stdout.write(
          `${JSON.stringify({ commandId: error.commandId, serviceCallId: error.serviceCallId, outcome: "rejected", code: error.code, reason: error.reason })}\n`,
        );
        process.stderr.write(`timer-client: rejected ${error.code}: ${error.reason}\n`);
        process.exitCode = EXIT.REJECTED;
      } else if (error instanceof TimerClientError && error.code === "NO_OUTCOME") {
        process.stderr.write(`timer-client: ${error.message}\n`);
        process.exitCode = EXIT.NO_OUTCOME;
      } else {
        process.stderr.write(`timer-client: ${error instanceof Error ? brokerMessage(error, argv) : String(error)}\n`);
        process.exitCode = EXIT.FAILED;
      }
    },
  );
}
