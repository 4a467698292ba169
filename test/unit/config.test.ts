import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

/** Runs loadConfig and returns the ConfigError it throws (fails the test when it does not throw one). */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe("loadConfig: defaults (CONTRACT §4)", () => {
  it("when no variable is set, then every setting has its documented default", () => {
    const config = loadConfig({});

    expect(config).toMatchObject({
      brokerUrls: ["nats://127.0.0.1:4222"],
      dbPath: "./data/timer.db",
      dbSynchronous: "FULL",
      pollingIntervalMs: 5000,
      batchSize: 100,
      maxHorizonDays: 3650,
      maxClockSkewMs: 86_400_000,
      maxPendingPerTenant: 0,
      historyEntries: 20,
      httpPort: 8080,
      httpHost: "0.0.0.0",
      logLevel: "info",
      subjectPrefix: "timer",
      commandsStream: "TIMER_COMMANDS",
      eventsStream: "TIMER_EVENTS",
      consumerName: "timer-service",
      commandPartitions: 8,
    });
  });

  it("when a variable is set to the empty string or blanks, then its default applies", () => {
    const config = loadConfig({ TIMER_BATCH_SIZE: "", TIMER_POLLING_INTERVAL: "   ", TIMER_SUBJECT_PREFIX: "" });

    expect(config.batchSize).toBe(100);
    expect(config.pollingIntervalMs).toBe(5000);
    expect(config.subjectPrefix).toBe("timer");
  });

  it("when variables unrelated to the service are set, then they are ignored", () => {
    expect(loadConfig({ PATH: "/bin", TIMER_UNKNOWN: "x" }).batchSize).toBe(100);
  });
});

describe("loadConfig: integer bounds", () => {
  const bounds = [
    { variable: "TIMER_POLLING_INTERVAL", key: "pollingIntervalMs", min: 10, max: 3_600_000 },
    { variable: "TIMER_BATCH_SIZE", key: "batchSize", min: 1, max: 10_000 },
    { variable: "TIMER_MAX_HORIZON_DAYS", key: "maxHorizonDays", min: 1, max: 36_500 },
    { variable: "TIMER_MAX_CLOCK_SKEW_MS", key: "maxClockSkewMs", min: 1000, max: 31_536_000_000 },
    { variable: "TIMER_TENANT_MAX_PENDING", key: "maxPendingPerTenant", min: 0, max: 100_000_000 },
    { variable: "TIMER_HISTORY_ENTRIES", key: "historyEntries", min: 0, max: 1000 },
    { variable: "TIMER_COMMAND_PARTITIONS", key: "commandPartitions", min: 1, max: 64 },
    { variable: "TIMER_HTTP_PORT", key: "httpPort", min: 0, max: 65_535 },
  ] as const;

  describe.each(bounds)("$variable", ({ variable, key, min, max }) => {
    it(`when it is the minimum ${min}, then it is accepted`, () => {
      expect(loadConfig({ [variable]: String(min) })[key]).toBe(min);
    });

    it(`when it is the maximum ${max}, then it is accepted`, () => {
      expect(loadConfig({ [variable]: String(max) })[key]).toBe(max);
    });

    it("when it has surrounding blanks, then they are trimmed", () => {
      expect(loadConfig({ [variable]: ` ${max} ` })[key]).toBe(max);
    });

    it.each([
      ["min - 1", String(min - 1)],
      ["max + 1", String(max + 1)],
      ["non-integer", `${min}.5`],
      ["exponent notation", "1e3"],
      ["hexadecimal", "0x10"],
      ["a word", "ten"],
      ["a unit suffix", `${max}ms`],
      ["a huge number", "9".repeat(400)],
      ["a sign", `+${min}`],
    ])("when it is %s, then loading fails with an error naming the variable", (_name, value) => {
      const error = configError({ [variable]: value });

      expect(error.variable).toBe(variable);
      expect(error.message).toContain(variable);
    });
  });
});

describe("loadConfig: TIMER_BROKER_URL", () => {
  it("when it lists URLs separated by commas, then each is kept, trimmed, in order", () => {
    const config = loadConfig({ TIMER_BROKER_URL: "nats://a:4222, nats://b:4222 ,tls://c:4443" });

    expect(config.brokerUrls).toEqual(["nats://a:4222", "nats://b:4222", "tls://c:4443"]);
  });

  it("when an entry has no scheme, then it is accepted as a NATS host:port", () => {
    expect(loadConfig({ TIMER_BROKER_URL: "nats-1:4222" }).brokerUrls).toEqual(["nats-1:4222"]);
  });

  it("when the list has empty entries, then they are skipped", () => {
    expect(loadConfig({ TIMER_BROKER_URL: "nats://a:4222,,nats://b:4222," }).brokerUrls).toEqual(["nats://a:4222", "nats://b:4222"]);
  });

  it.each([
    ["only commas", ",,,"],
    ["an http URL", "http://a:4222"],
    ["a URL without a host", "nats://"],
    ["a good and a bad URL", "nats://a:4222,http://b"],
  ])("when it is %s, then loading fails naming TIMER_BROKER_URL", (_name, value) => {
    expect(configError({ TIMER_BROKER_URL: value }).variable).toBe("TIMER_BROKER_URL");
  });
});

describe("loadConfig: names (prefix, streams, consumer)", () => {
  const names = [
    { variable: "TIMER_SUBJECT_PREFIX", key: "subjectPrefix" },
    { variable: "TIMER_COMMANDS_STREAM", key: "commandsStream" },
    { variable: "TIMER_EVENTS_STREAM", key: "eventsStream" },
    { variable: "TIMER_CONSUMER", key: "consumerName" },
  ] as const;

  describe.each(names)("$variable", ({ variable, key }) => {
    it.each([["x"], ["A-b_9"], ["a".repeat(32)]])("when it is %s, then it is accepted", (value) => {
      const env: Record<string, string> = { [variable]: value };
      // The two stream names must differ; keep the other one distinct from the value under test.
      if (variable === "TIMER_COMMANDS_STREAM") env.TIMER_EVENTS_STREAM = "OTHER_EVENTS";
      if (variable === "TIMER_EVENTS_STREAM") env.TIMER_COMMANDS_STREAM = "OTHER_COMMANDS";

      expect(loadConfig(env)[key]).toBe(value);
    });

    it.each([
      ["33 characters", "a".repeat(33)],
      ["a dot (a subject separator)", "a.b"],
      ["a wildcard *", "a*"],
      ["a wildcard >", ">"],
      ["a space inside", "a b"],
      ["a slash", "a/b"],
      ["non-ASCII", "tïmer"],
    ])("when it has %s, then loading fails naming the variable", (_name, value) => {
      expect(configError({ [variable]: value }).variable).toBe(variable);
    });
  });

  it("when both streams have the same name, then loading fails naming TIMER_EVENTS_STREAM", () => {
    expect(configError({ TIMER_COMMANDS_STREAM: "S", TIMER_EVENTS_STREAM: "S" }).variable).toBe("TIMER_EVENTS_STREAM");
  });
});

describe("loadConfig: other variables", () => {
  it.each([["debug"], ["WARN"], ["silent"], ["fatal"]])("when TIMER_LOG_LEVEL is %s, then it is accepted in lower case", (level) => {
    expect(loadConfig({ TIMER_LOG_LEVEL: level }).logLevel).toBe(level.toLowerCase());
  });

  it("when TIMER_LOG_LEVEL is not a pino level, then loading fails naming it", () => {
    expect(configError({ TIMER_LOG_LEVEL: "verbose" }).variable).toBe("TIMER_LOG_LEVEL");
  });

  it("when TIMER_DB_PATH is set, then it is used", () => {
    expect(loadConfig({ TIMER_DB_PATH: "/var/lib/timer/t.db" }).dbPath).toBe("/var/lib/timer/t.db");
  });

  it.each([["127.0.0.1"], ["::"], ["localhost"], ["my-host.internal"]])("when TIMER_HTTP_HOST is %s, then it is accepted", (host) => {
    expect(loadConfig({ TIMER_HTTP_HOST: host }).httpHost).toBe(host);
  });

  it("when TIMER_HTTP_HOST is not a host, then loading fails naming it", () => {
    expect(configError({ TIMER_HTTP_HOST: "http://x/" }).variable).toBe("TIMER_HTTP_HOST");
  });

  it("when only one of TIMER_NATS_USER and TIMER_NATS_PASSWORD is set, then loading fails naming the missing one", () => {
    expect(configError({ TIMER_NATS_USER: "u" }).variable).toBe("TIMER_NATS_PASSWORD");
    expect(configError({ TIMER_NATS_PASSWORD: "p" }).variable).toBe("TIMER_NATS_USER");
  });

  it("when an error is thrown, then it names the variable and not the value of a secret", () => {
    const error = configError({ TIMER_NATS_PASSWORD: "s3cr3t-value" });

    expect(error.message).not.toContain("s3cr3t-value");
  });
});

describe("loadConfig: the result", () => {
  it("when loaded, then the object and its nested parts are frozen", () => {
    const config = loadConfig({});

    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.brokerUrls)).toBe(true);
    expect(Object.isFrozen(config.natsCredentials)).toBe(true);
    expect(() => {
      (config as { batchSize: number }).batchSize = 1;
    }).toThrow(TypeError);
    expect(() => (config.brokerUrls as string[]).push("nats://x")).toThrow(TypeError);
  });

  it("when the same environment is loaded twice, then the results are equal and independent", () => {
    const env = { TIMER_BATCH_SIZE: "7" };

    expect(loadConfig(env)).toEqual(loadConfig(env));
    expect(loadConfig(env)).not.toBe(loadConfig(env));
  });

  it("when loading, then the environment object is not modified", () => {
    const env = Object.freeze({ TIMER_BATCH_SIZE: " 7 " });

    expect(() => loadConfig(env)).not.toThrow();
    expect(env.TIMER_BATCH_SIZE).toBe(" 7 ");
  });
});

describe("loadConfig: transport and launch", () => {
  it.each(["ws://a:8080", "wss://a:443"])(
    "when TIMER_BROKER_URL is the websocket URL %s, then loading fails naming it (the Node transport speaks TCP)",
    (url) => {
      expect(configError({ TIMER_BROKER_URL: url }).variable).toBe("TIMER_BROKER_URL");
    },
  );

  it("when npm runs the start script, then the service ends with npm; under any other npm script it does not", () => {
    expect(loadConfig({ npm_lifecycle_event: "start" }).launchedByNpmStart).toBe(true);
    expect(loadConfig({ npm_lifecycle_event: "test" }).launchedByNpmStart).toBe(false);
    expect(loadConfig({}).launchedByNpmStart).toBe(false);
  });

  it("when a credentials or TLS file cannot be read, then loading fails naming its variable and path", () => {
    const directory = mkdtempSync(join(tmpdir(), "timer-config-"));
    try {
      const readable = join(directory, "ca.pem");
      writeFileSync(readable, "-----BEGIN CERTIFICATE-----\n");
      expect(loadConfig({ TIMER_NATS_TLS_CA_FILE: readable }).natsCredentials.tlsCaFile).toBe(readable);
      for (const variable of ["TIMER_NATS_CREDS_FILE", "TIMER_NATS_TLS_CA_FILE"]) {
        const missing = configError({ [variable]: join(directory, "missing") });
        expect(missing.variable).toBe(variable);
        expect(missing.message).toContain("missing");
        expect(configError({ [variable]: directory }).variable).toBe(variable);
      }
      const cert = configError({ TIMER_NATS_TLS_CERT_FILE: readable, TIMER_NATS_TLS_KEY_FILE: join(directory, "key.pem") });
      expect(cert.variable).toBe("TIMER_NATS_TLS_KEY_FILE");
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("when two ways to log in to NATS are set, then loading fails naming the second", () => {
    expect(configError({ TIMER_NATS_TOKEN: "t", TIMER_NATS_CREDS_FILE: "/x.creds" }).variable).toBe("TIMER_NATS_CREDS_FILE");
  });
});

describe("loadConfig: credentials in TIMER_BROKER_URL", () => {
  it("when the URL carries user:password, then they become the NATS login and leave the URL", () => {
    const config = loadConfig({ TIMER_BROKER_URL: "nats://svc:p%40ss@nats-1:4222" });

    expect(config.brokerUrls).toEqual(["nats://nats-1:4222"]);
    expect(config.natsCredentials).toMatchObject({ user: "svc", password: "p@ss" });
  });

  it("when the URL carries a user part alone, then it is a token (as in the Go client)", () => {
    const config = loadConfig({ TIMER_BROKER_URL: "tls://s3cr3t-token@nats-1:4443" });

    expect(config.brokerUrls).toEqual(["tls://nats-1:4443"]);
    expect(config.natsCredentials.token).toBe("s3cr3t-token");
    expect(config.natsCredentials.user).toBeUndefined();
  });

  it("when several URLs carry the same login or none, then it applies to all; different logins fail naming TIMER_BROKER_URL", () => {
    expect(loadConfig({ TIMER_BROKER_URL: "nats://u:p@a:4222,nats://b:4222,u:p@c:4222" }).brokerUrls).toEqual([
      "nats://a:4222",
      "nats://b:4222",
      "nats://c:4222",
    ]);
    expect(configError({ TIMER_BROKER_URL: "nats://u:p@a:4222,nats://u:q@b:4222" }).variable).toBe("TIMER_BROKER_URL");
  });

  it.each([
    ["TIMER_NATS_USER", { TIMER_NATS_USER: "u", TIMER_NATS_PASSWORD: "p" }],
    ["TIMER_NATS_TOKEN", { TIMER_NATS_TOKEN: "t" }],
    ["TIMER_NATS_NKEY_SEED", { TIMER_NATS_NKEY_SEED: "SUA" }],
    ["TIMER_NATS_CREDS_FILE", { TIMER_NATS_CREDS_FILE: "/x.creds" }],
  ])("when the URL carries a login and %s is set too, then loading fails naming it", (variable, env) => {
    const error = configError({ TIMER_BROKER_URL: "nats://u:hunter2@a:4222", ...env });

    expect(error.variable).toBe(variable);
    expect(error.message).toContain("TIMER_BROKER_URL");
    expect(error.message).not.toContain("hunter2");
  });

  it.each([
    ["a bad port", "nats://svc:hunter2@nats-1:99999"],
    ["a space in the host", "nats://svc:hunter2@nats 1:4222"],
    ["an http URL", "http://svc:hunter2@nats-1:4222"],
    ["a websocket URL", "ws://hunter2@nats-1:8080"],
    ["a password with a comma", "nats://svc:hun,ter2@nats-1:4222"],
    ["a password with a slash", "nats://svc:hun/ter2@nats-1:4222"],
    ["a bad percent escape", "nats://svc:hunter2%zz@nats-1:4222"],
  ])("when a URL with a password has %s, then the error names TIMER_BROKER_URL and holds no part of the password", (_name, url) => {
    const error = configError({ TIMER_BROKER_URL: url });

    expect(error.variable).toBe("TIMER_BROKER_URL");
    for (const part of ["hunter2", "hun", "ter2"]) expect(error.message).not.toContain(part);
  });

  it("when a URL without credentials is invalid, then the error still quotes it", () => {
    expect(configError({ TIMER_BROKER_URL: "nats://nats-1:99999" }).message).toContain('"nats://nats-1:99999"');
  });
});

describe("loadConfig: TIMER_DATABASE_TIMEOUT_MS (CONTRACT §16)", () => {
  it("when unset, then storage calls are bounded by 10000 ms", () => {
    expect(loadConfig({}).storage.databaseTimeoutMs).toBe(10_000);
  });

  it.each([
    ["1000", 1_000],
    ["600000", 600_000],
  ])("when it is %s, then it is accepted", (value, expected) => {
    expect(loadConfig({ TIMER_DATABASE_TIMEOUT_MS: value }).storage.databaseTimeoutMs).toBe(expected);
  });

  it.each(["999", "600001", "10s", "-1", "1e4"])("when it is %s, then loading fails naming the variable", (value) => {
    const error = configError({ TIMER_DATABASE_TIMEOUT_MS: value });

    expect(error.variable).toBe("TIMER_DATABASE_TIMEOUT_MS");
    expect(error.message).toContain("TIMER_DATABASE_TIMEOUT_MS");
  });
});
