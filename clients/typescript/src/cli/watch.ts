import { connectCli, prefixOf, serversOf } from "./connection.js";
import type { Flags } from "./options.js";
import type { Output } from "./send-commands.js";
import { UsageError } from "./usage-error.js";

const TENANT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * A live tail rather than the client's `consume`: every event kind (CommandRejected too), of one
 * tenant or all, nothing kept on the server and nothing acked. Runs until SIGINT or SIGTERM.
 */
export async function watch(flags: Flags, output: Output): Promise<number> {
  if (flags.tenant !== undefined && !TENANT.test(flags.tenant))
    throw new UsageError(`--tenant "${flags.tenant}" is not a tenant id: 1 to 64 letters, digits, "_" or "-", e.g. acme`);
  const tenant = flags.tenant ?? "*";
  const prefix = prefixOf(flags);
  const nc = await connectCli(flags, { reconnect: true });
  const subscriptions = ["due", "missed", "rejected"].map((kind) => nc.subscribe(`${prefix}.events.${kind}.${tenant}`));
  const stop = (): void => void nc.drain().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  await nc.flush();
  output.err(`watching ${prefix}.events.{due,missed,rejected}.${tenant} on ${serversOf(flags).join(", ")} (Ctrl-C to stop)`);
  await Promise.all(
    subscriptions.map(async (subscription) => {
      for await (const message of subscription) output.out(message.string());
    }),
  );
  return 0;
}
