import { afterEach, describe, expect, it } from "vitest";
import { StorageTimeoutError, withDeadline } from "../../../src/adapters/storage/storage-deadline.js";
import { StorageProbe } from "../../../src/adapters/storage/storage-probe.js";
import { isConnectionFault } from "../../../src/adapters/postgres/connection-fault.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const never = () => new Promise<void>(() => {});

describe("withDeadline", () => {
  it("when the work settles in time, then its result is returned", async () => {
    await expect(withDeadline(Promise.resolve(7), 100, "x")).resolves.toBe(7);
  });

  it("when the work outlasts the deadline, then it fails with StorageTimeoutError naming what and how long", async () => {
    const error = await withDeadline(never(), 30, "Postgres write").catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StorageTimeoutError);
    expect((error as Error).message).toBe("Postgres write did not finish within 30 ms");
  });
});

describe("StorageProbe", () => {
  const probes: StorageProbe[] = [];
  afterEach(() => probes.splice(0).forEach((p) => p.stop()));

  it("when a check hangs past the time-out, then it is unhealthy with the time-out as its error; when checks pass again, then healthy", async () => {
    let hang = false;
    const probe = new StorageProbe(() => (hang ? never() : undefined), { intervalMs: 10, timeoutMs: 40 });
    probes.push(probe);
    probe.start();
    await sleep(30);
    expect(probe.healthy).toBe(true);

    hang = true;
    await sleep(120);
    expect(probe.healthy).toBe(false);
    expect(probe.lastError).toBeInstanceOf(StorageTimeoutError);

    hang = false;
    await sleep(120);
    expect(probe.healthy).toBe(true);
    expect(probe.lastError).toBeUndefined();
  });

  it("when a check throws, then it is unhealthy with that error", async () => {
    const probe = new StorageProbe(
      () => {
        throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      },
      { intervalMs: 10, timeoutMs: 40 },
    );
    probes.push(probe);
    probe.start();
    await sleep(30);
    expect(probe.healthy).toBe(false);
    expect((probe.lastError as Error).message).toBe("database is locked");
  });
});

describe("isConnectionFault", () => {
  it.each([
    ["our time-out", new StorageTimeoutError("x", 1)],
    ["the driver's read time-out", new Error("Query read timeout")],
    ["a pool wait time-out", new Error("timeout exceeded when trying to connect")],
    ["a lost connection", new Error("Connection terminated unexpectedly")],
    ["a refused connection", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["statement_timeout", Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" })],
    ["an admin shutdown", Object.assign(new Error("terminating connection"), { code: "57P01" })],
    ["a connection exception", Object.assign(new Error("connection failure"), { code: "08006" })],
  ])("when the error is %s, then it is a connection fault", (_name, error) => {
    expect(isConnectionFault(error)).toBe(true);
  });

  it.each([
    ["a deadlock", Object.assign(new Error("deadlock detected"), { code: "40P01" })],
    ["a full disk", Object.assign(new Error("could not extend file"), { code: "53100" })],
    ["an application error", new Error("decide failed")],
  ])("when the error is %s, then it is not", (_name, error) => {
    expect(isConnectionFault(error)).toBe(false);
  });
});
