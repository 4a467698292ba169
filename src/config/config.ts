/**
 * Service configuration: every environment variable, its default and its range, in one place
 * (CONTRACT §4). Parsed once at start-up into a frozen object; nothing else reads `process.env`.
 */

import { accessSync, constants, statSync } from "node:fs";
import { ConfigError } from "./config-error.js";
import { loadStorageConfig, type StorageConfig } from "./storage-config.js";
import { loadAdminReadToken, loadAdminToken } from "./http-config.js";
import { parseBrokerUrl, type BrokerUrl, type UrlLogin } from "./broker-url.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface NatsCredentials {
  readonly user?: string;
  readonly password?: string;
  readonly token?: string;
  readonly nkeySeed?: string;
  readonly credsFile?: string;
  readonly tlsCaFile?: string;
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
}

export interface TimerServiceConfig {
  /** Server URLs without any user part: a login written into TIMER_BROKER_URL is in natsCredentials. */
  readonly brokerUrls: readonly string[];
  readonly natsCredentials: NatsCredentials;
  readonly dbPath: string;
  /** TIMER_STORE and the Postgres, claim, replica and retention variables (CONTRACT §6–§7). */
  readonly storage: StorageConfig;
  readonly dbSynchronous: "NORMAL" | "FULL";
  readonly pollingIntervalMs: number;
  readonly batchSize: number;
  readonly maxHorizonDays: number;
  /** How far ahead of the service's clock a command's `timestampMs` may be (CONTRACT §3.2 would let it pin a timer). */
  readonly maxClockSkewMs: number;
  /** TIMER_TENANT_MAX_PENDING (CONTRACT §12): Scheduled timers a tenant may have; 0 = no limit. */
  readonly maxPendingPerTenant: number;
  /** TIMER_HISTORY_ENTRIES (CONTRACT §19): the entries each timer's history keeps; 0 = no history. */
  readonly historyEntries: number;
  readonly httpPort: number;
  readonly httpHost: string;
  readonly logLevel: LogLevel;
  readonly subjectPrefix: string;
  readonly commandsStream: string;
  readonly eventsStream: string;
  readonly consumerName: string;
  /** TIMER_COMMAND_PARTITIONS: partitions of the commands stream by tenant, one consumer each (1 = none). */
  readonly commandPartitions: number;
  /** Started by `npm start` (npm sets npm_lifecycle_event): end with npm if npm is killed. */
  readonly launchedByNpmStart: boolean;
  /** TIMER_ADMIN_TOKEN: bearer token of `/v1` and the admin page (CONTRACT §9); unset turns both off. Never logged. */
  readonly adminToken: string | undefined;
  /** TIMER_ADMIN_READ_TOKEN: GETs and the page only (CONTRACT §14). Never logged. */
  readonly adminReadToken?: string | undefined;
}

const NAME_TOKEN = /^[A-Za-z0-9_-]{1,32}$/;

type Env = Readonly<Record<string, string | undefined>>;

function text(env: Env, variable: string, fallback: string): string {
  const value = env[variable];
  return value === undefined || value.trim() === "" ? fallback : value.trim();
}

function optional(env: Env, variable: string): string | undefined {
  const value = env[variable];
  return value === undefined || value === "" ? undefined : value;
}

function integer(env: Env, variable: string, fallback: number, min: number, max: number): number {
  const raw = text(env, variable, String(fallback));
  if (!/^\d+$/.test(raw)) throw new ConfigError(variable, `must be an integer from ${min} to ${max}, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(variable, `must be from ${min} to ${max}, got ${value}`);
  return value;
}

function oneOf<T extends string>(env: Env, variable: string, fallback: T, allowed: readonly T[], normalize = (s: string) => s): T {
  const raw = normalize(text(env, variable, fallback));
  const found = allowed.find((candidate) => candidate === raw);
  if (found === undefined) throw new ConfigError(variable, `must be one of ${allowed.join(", ")}, got "${raw}"`);
  return found;
}

function nameToken(env: Env, variable: string, fallback: string): string {
  const value = text(env, variable, fallback);
  if (!NAME_TOKEN.test(value)) throw new ConfigError(variable, `must match ${NAME_TOKEN.source}, got "${value}"`);
  return value;
}

interface BrokerUrlEntry extends BrokerUrl {
  readonly raw: string;
}

function parseBrokerUrls(env: Env): BrokerUrlEntry[] {
  const variable = "TIMER_BROKER_URL";
  const value = text(env, variable, "nats://127.0.0.1:4222");
  const urls = value
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "");
  if (urls.length === 0) throw new ConfigError(variable, "must name at least one NATS server");
  // A value with an "@" carries a secret, and a password may hold a comma: then any entry may
  // hold part of it, so errors name the entry by position only.
  const quote = (url: string, index: number): string => (value.includes("@") ? `entry ${index + 1}` : `"${url}"`);
  return urls.map((url, index) => {
    const parsed = parseBrokerUrl(url);
    if (parsed === undefined) throw new ConfigError(variable, `${quote(url, index)} is not a URL`);
    // The Node transport speaks TCP only; websocket URLs would fail at connect.
    if (!["nats:", "tls:"].includes(parsed.protocol) || parsed.hostname === "") {
      throw new ConfigError(variable, `${quote(url, index)} is not a nats:// or tls:// URL`);
    }
    return { raw: url, server: parsed.server, ...(parsed.login === undefined ? {} : { login: parsed.login }) };
  });
}

/** The one login the URLs carry (all that carry one must agree), or undefined. */
function urlLogin(entries: readonly BrokerUrlEntry[]): UrlLogin | undefined {
  const logins = entries.flatMap((entry) => (entry.login === undefined ? [] : [entry.login]));
  const first = logins[0];
  if (logins.some((login) => JSON.stringify(login) !== JSON.stringify(first))) {
    throw new ConfigError("TIMER_BROKER_URL", "its URLs carry different logins; give one, or use TIMER_NATS_USER/TIMER_NATS_PASSWORD");
  }
  return first;
}

function hostAddress(env: Env): string {
  const variable = "TIMER_HTTP_HOST";
  const host = text(env, variable, "0.0.0.0");
  if (!/^[A-Za-z0-9.:_-]+$/.test(host)) throw new ConfigError(variable, `"${host}" is not a host name or address`);
  return host;
}

export function loadSubjectPrefix(env: Env): string {
  return nameToken(env, "TIMER_SUBJECT_PREFIX", "timer");
}

/** The TIMER_NATS_* credential variables (also used by the CLI). */
export function loadNatsCredentials(env: Env): NatsCredentials {
  return {
    user: optional(env, "TIMER_NATS_USER"),
    password: optional(env, "TIMER_NATS_PASSWORD"),
    token: optional(env, "TIMER_NATS_TOKEN"),
    nkeySeed: optional(env, "TIMER_NATS_NKEY_SEED"),
    credsFile: optional(env, "TIMER_NATS_CREDS_FILE"),
    tlsCaFile: optional(env, "TIMER_NATS_TLS_CA_FILE"),
    tlsCertFile: optional(env, "TIMER_NATS_TLS_CERT_FILE"),
    tlsKeyFile: optional(env, "TIMER_NATS_TLS_KEY_FILE"),
  };
}

/** Reads and validates the configuration; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env): TimerServiceConfig {
  const brokerUrls = parseBrokerUrls(env);
  const config: TimerServiceConfig = {
    brokerUrls: brokerUrls.map((entry) => entry.server),
    natsCredentials: loadNatsCredentials(env),
    dbPath: text(env, "TIMER_DB_PATH", "./data/timer.db"),
    storage: loadStorageConfig(env),
    dbSynchronous: oneOf(env, "TIMER_DB_SYNCHRONOUS", "FULL", ["NORMAL", "FULL"] as const, (s) => s.toUpperCase()),
    pollingIntervalMs: integer(env, "TIMER_POLLING_INTERVAL", 5000, 10, 3_600_000),
    batchSize: integer(env, "TIMER_BATCH_SIZE", 100, 1, 10_000),
    maxHorizonDays: integer(env, "TIMER_MAX_HORIZON_DAYS", 3650, 1, 36_500),
    maxClockSkewMs: integer(env, "TIMER_MAX_CLOCK_SKEW_MS", 86_400_000, 1000, 31_536_000_000),
    maxPendingPerTenant: integer(env, "TIMER_TENANT_MAX_PENDING", 0, 0, 100_000_000),
    historyEntries: integer(env, "TIMER_HISTORY_ENTRIES", 20, 0, 1000),
    httpPort: integer(env, "TIMER_HTTP_PORT", 8080, 0, 65_535),
    httpHost: hostAddress(env),
    logLevel: oneOf(env, "TIMER_LOG_LEVEL", "info", LOG_LEVELS, (s) => s.toLowerCase()),
    subjectPrefix: loadSubjectPrefix(env),
    commandsStream: nameToken(env, "TIMER_COMMANDS_STREAM", "TIMER_COMMANDS"),
    eventsStream: nameToken(env, "TIMER_EVENTS_STREAM", "TIMER_EVENTS"),
    consumerName: nameToken(env, "TIMER_CONSUMER", "timer-service"),
    commandPartitions: integer(env, "TIMER_COMMAND_PARTITIONS", 8, 1, 64),
    launchedByNpmStart: env.npm_lifecycle_event === "start",
    adminToken: loadAdminToken(env),
    adminReadToken: loadAdminReadToken(env),
  };
  const { user, password, tlsCertFile, tlsKeyFile } = config.natsCredentials;
  if ((user === undefined) !== (password === undefined)) {
    throw new ConfigError(
      user === undefined ? "TIMER_NATS_USER" : "TIMER_NATS_PASSWORD",
      "TIMER_NATS_USER and TIMER_NATS_PASSWORD go together",
    );
  }
  const login = urlLogin(brokerUrls);
  const logins = [
    ...(login === undefined ? [] : ["TIMER_BROKER_URL"]),
    ...(["TIMER_NATS_USER", "TIMER_NATS_TOKEN", "TIMER_NATS_NKEY_SEED", "TIMER_NATS_CREDS_FILE"] as const).filter(
      (variable) => optional(env, variable) !== undefined,
    ),
  ];
  if (logins.length > 1) throw new ConfigError(logins[1]!, `use one way to log in to NATS, not ${logins.join(" and ")}`);
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    throw new ConfigError(
      tlsCertFile === undefined ? "TIMER_NATS_TLS_CERT_FILE" : "TIMER_NATS_TLS_KEY_FILE",
      "the TLS certificate and key go together",
    );
  }
  if (config.commandsStream === config.eventsStream) {
    throw new ConfigError("TIMER_EVENTS_STREAM", "must differ from TIMER_COMMANDS_STREAM");
  }
  checkCredentialFiles(config.natsCredentials);
  const natsCredentials = login === undefined ? config.natsCredentials : { ...config.natsCredentials, ...urlCredentials(login) };
  return Object.freeze({ ...config, brokerUrls: Object.freeze(config.brokerUrls), natsCredentials: Object.freeze(natsCredentials) });
}

const CREDENTIAL_FILES = [
  ["credsFile", "TIMER_NATS_CREDS_FILE"],
  ["tlsCaFile", "TIMER_NATS_TLS_CA_FILE"],
  ["tlsCertFile", "TIMER_NATS_TLS_CERT_FILE"],
  ["tlsKeyFile", "TIMER_NATS_TLS_KEY_FILE"],
] as const;

/**
 * Throws ConfigError naming the variable of a credentials or TLS file that is not a readable file,
 * so that a wrong path fails at start with its variable (CONTRACT §4), not later as a bare ENOENT
 * from the NATS connect after storage and HTTP were opened.
 */
export function checkCredentialFiles(credentials: NatsCredentials): void {
  for (const [field, variable] of CREDENTIAL_FILES) {
    const path = credentials[field];
    if (path === undefined) continue;
    try {
      accessSync(path, constants.R_OK);
      if (!statSync(path).isFile()) throw new Error("not a file");
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new ConfigError(variable, `cannot read "${path}" (${reason})`);
    }
  }
}

function urlCredentials(login: UrlLogin): NatsCredentials {
  return "token" in login ? { token: login.token } : { user: login.user, password: login.password };
}

export { ConfigError };
