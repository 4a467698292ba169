import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { infrastructurePath, localPostgresAvailable, startNats, startPostgres } from "./test-infrastructure.js";

// The provider's promises, on whichever path this run uses (local processes by default,
// containers with TEST_CONTAINERS=1 or DOCKER_HOST): the same port and store across stop/restart,
// config files given with -c, the `jetstream` switch between restarts.

const path = infrastructurePath();
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function streamNames(url: string, options: { user?: string; pass?: string } = {}): Promise<string[]> {
  const nc = await connect({ servers: url, ...options });
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const name of jsm.streams.names()) names.push(name);
    return names;
  } finally {
    await nc.close();
  }
}

describe(`NATS from the provider (${path})`, () => {
  it("keeps its port and its JetStream store across a hard stop and a restart; an emptied store comes back empty", async () => {
    const nats = await startNats();
    cleanups.push(() => nats.dispose());
    expect(nats.url).toBe(`nats://127.0.0.1:${nats.port}`);
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).streams.add({ name: "KEPT", subjects: ["kept.>"] });
    await nc.close();

    await nats.stop(true);
    await expect(connect({ servers: nats.url, reconnect: false, timeout: 500 })).rejects.toThrow();
    await nats.restart();
    expect(await streamNames(nats.url)).toEqual(["KEPT"]);

    await nats.stop();
    for (const entry of readdirSync(nats.storeDir)) rmSync(join(nats.storeDir, entry), { recursive: true, force: true });
    await nats.restart();
    expect(await streamNames(nats.url)).toEqual([]);
  });

  it("starts without JetStream and turns it on for a restart", async () => {
    const nats = await startNats({ jetstream: false });
    cleanups.push(() => nats.dispose());
    await expect(streamNames(nats.url)).rejects.toThrow();
    await nats.stop();
    nats.jetstream = true;
    await nats.restart();
    expect(await streamNames(nats.url)).toEqual([]);
  });

  it("runs with a config file given as -c <path> that reads a password from the environment", async () => {
    const dir = mkdtempSync(join(tmpdir(), "timer-conf-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const conf = join(dir, "login.conf");
    writeFileSync(conf, 'port: 4222\nauthorization { users: [ { user: "u", password: $TIMER_INFRA_TEST_PASSWORD } ] }\n');
    process.env.TIMER_INFRA_TEST_PASSWORD = "pw-infra-1";
    const nats = await startNats({ extraArgs: ["-c", conf] });
    cleanups.push(() => nats.dispose());
    expect(await streamNames(nats.url, { user: "u", pass: "pw-infra-1" })).toEqual([]);
    await expect(connect({ servers: nats.url, user: "u", pass: "wrong", reconnect: false })).rejects.toThrow();
  });
});

// Locally this needs the Postgres server programs (PG_BIN_DIR, PATH or /usr/lib/postgresql/<v>/bin);
// a machine without them skips.
describe.skipIf(path === "local" && !localPostgresAvailable())(`Postgres from the provider (${path})`, () => {
  it("serves database test as postgres and keeps its data across a hard stop and a restart", async () => {
    const postgres = await startPostgres();
    cleanups.push(() => postgres.dispose());
    const query = async (sql: string) => {
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    };
    await query("CREATE TABLE kept (id int); INSERT INTO kept VALUES (7)");
    await postgres.stop(true);
    await postgres.restart();
    expect(await query("SELECT id, current_database() AS db, current_user AS who FROM kept")).toEqual([
      { id: 7, db: "test", who: "postgres" },
    ]);
  });
});
