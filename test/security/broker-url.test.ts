import { describe, expect, it } from "vitest";
import { parseBrokerUrl, redactUrl } from "../../src/config/broker-url.js";
import { natsConnectionOptions } from "../../src/adapters/nats/nats-connection.js";
import { BrokerUnreachableLog } from "../../src/adapters/nats/broker-unreachable-log.js";

describe("redactUrl", () => {
  it.each([
    ["nats://svc:hunter2@nats-1:4222", "nats://***@nats-1:4222"],
    ["nats://hunter2@nats-1:4222", "nats://***@nats-1:4222"],
    ["svc:hunter2@nats-1:4222", "***@nats-1:4222"],
    ["nats://svc:hun@ter2@nats-1:4222", "nats://***@nats-1:4222"],
    ["nats://svc:hun/ter2@nats-1:99999", "nats://***@nats-1:99999"],
    ["nats://nats-1:4222", "nats://nats-1:4222"],
    ["not a url at all", "not a url at all"],
  ])("when given %s, then it shows %s", (text, shown) => {
    expect(redactUrl(text)).toBe(shown);
  });
});

describe("parseBrokerUrl", () => {
  it("when the URL has user:password, then it returns them decoded and the URL without them", () => {
    expect(parseBrokerUrl("nats://svc:p%40ss%2Cw@nats-1:4222")).toMatchObject({
      server: "nats://nats-1:4222",
      login: { user: "svc", password: "p@ss,w" },
    });
  });

  it("when the URL has a user part alone, then it is a token", () => {
    expect(parseBrokerUrl("tok3n@nats-1:4222")).toMatchObject({ server: "nats://nats-1:4222", login: { token: "tok3n" } });
  });

  it("when the URL has no user part, then it is returned as written", () => {
    expect(parseBrokerUrl("nats-1:4222")).toMatchObject({ server: "nats-1:4222" });
    expect(parseBrokerUrl("nats-1:4222")?.login).toBeUndefined();
  });

  it("when the text is not a URL, then it returns undefined", () => {
    expect(parseBrokerUrl("nats://a:99999")).toBeUndefined();
  });
});

describe("natsConnectionOptions: the client ignores a URL's user part, so the options carry it", () => {
  it("when a URL carries user:password and no other login is given, then they go into user/pass and the URL loses them", () => {
    const options = natsConnectionOptions(["nats://svc:hunter2@a:4222", "b:4222"], {});

    expect(options).toMatchObject({ servers: ["nats://a:4222", "b:4222"], user: "svc", pass: "hunter2" });
  });

  it("when a URL carries a token, then it goes into token", () => {
    expect(natsConnectionOptions(["nats://tok3n@a:4222"], {})).toMatchObject({ servers: ["nats://a:4222"], token: "tok3n" });
  });

  it("when the credentials name a login, then it wins over the URL's (the CLI's --server with TIMER_NATS_* set)", () => {
    const options = natsConnectionOptions(["nats://svc:hunter2@a:4222"], { token: "from-env" });

    expect(options).toMatchObject({ servers: ["nats://a:4222"], token: "from-env" });
    expect(options.pass).toBeUndefined();
  });
});

describe("BrokerUnreachableLog", () => {
  function harness(): { log: BrokerUnreachableLog; lines: Record<string, unknown>[]; advance(ms: number): void } {
    let nowMs = 1_000_000;
    const lines: Record<string, unknown>[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (fields: object, message?: string) => lines.push({ ...fields, message }),
    };
    const log = new BrokerUnreachableLog(logger, ["nats://svc:hunter2@a:4222", "nats://b:4222"], () => nowMs, 10_000);
    return { log, lines, advance: (ms) => (nowMs += ms) };
  }

  it("when attempts fail every 250 ms for 25 s, then it logs three lines (at once, after 10 s, after 20 s) with the redacted URLs and the count", () => {
    const { log, lines, advance } = harness();

    for (let i = 0; i < 100; i++) {
      log.attempt(new Error("connection refused"));
      advance(250);
    }

    expect(lines.map((line) => line.attempts)).toEqual([1, 41, 81]);
    expect(lines[0]).toMatchObject({
      servers: ["nats://***@a:4222", "nats://b:4222"],
      error: "connection refused",
      message: "NATS broker unreachable; still trying",
    });
    expect(JSON.stringify(lines)).not.toContain("hunter2");
  });

  it("when an outage was already logged (the disconnect line), then the first 'unreachable' line waits the interval", () => {
    const { log, lines, advance } = harness();

    log.outageLogged();
    log.attempt();
    advance(10_000);
    log.attempt();

    expect(lines.map((line) => line.attempts)).toEqual([2]);
  });

  it("when the broker is reached, then it returns the attempt count and the next outage counts from 1 and logs at once", () => {
    const { log, lines } = harness();
    log.attempt();
    log.attempt();

    expect(log.reached()).toBe(2);
    log.attempt();
    expect(lines.map((line) => line.attempts)).toEqual([1, 1]);
  });
});
