/**
 * The storage and multi-instance variables of CONTRACT §6 and §7, parsed and validated with the
 * rest of the configuration (src/config/config.ts).
 */
import { ConfigError } from "./config-error.js";

export type StoreKind = "sqlite" | "postgres";

export interface StorageConfig {
  readonly store: StoreKind;
  /** Required with `postgres`; logged only through redactDatabaseUrl (it may hold a password). */
  readonly databaseUrl: string | undefined;
  readonly databaseSchema: string;
  readonly claimTtlMs: number;
  readonly streamReplicas: number;
  /** 0 keeps everything. */
  readonly retentionMs: number;
  /** The longest any storage call may wait (CONTRACT §16): connect, pool acquire, statement. */
  readonly databaseTimeoutMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function value(env: Env, variable: string): string | undefined {
  const raw = env[variable]?.trim();
  return raw === undefined || raw === "" ? undefined : raw;
}

function integerIn(env: Env, variable: string, fallback: number, min: number, max: number): number {
  const raw = value(env, variable) ?? String(fallback);
  if (!/^\d+$/.test(raw)) throw new ConfigError(variable, `must be an integer from ${min} to ${max}, got "${raw}"`);
  const parsed = Number(raw);
  if (parsed < min || parsed > max) throw new ConfigError(variable, `must be from ${min} to ${max}, got ${parsed}`);
  return parsed;
}

function retentionMs(env: Env): number {
  const variable = "TIMER_RETENTION_HOURS";
  const raw = value(env, variable) ?? "168";
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new ConfigError(variable, `must be a non-negative decimal number of hours, got "${raw}"`);
  const hours = Number(raw);
  if (hours > 876_000) throw new ConfigError(variable, `must be at most 876000 (100 years), got ${raw}`);
  return Math.round(hours * 3_600_000);
}

export function loadStorageConfig(env: Env): StorageConfig {
  const storeRaw = (value(env, "TIMER_STORE") ?? "sqlite").toLowerCase();
  if (storeRaw !== "sqlite" && storeRaw !== "postgres") {
    throw new ConfigError("TIMER_STORE", `must be one of sqlite, postgres, got "${storeRaw}"`);
  }
  const databaseUrl = value(env, "TIMER_DATABASE_URL");
  if (storeRaw === "postgres") {
    if (databaseUrl === undefined) throw new ConfigError("TIMER_DATABASE_URL", "is required with TIMER_STORE=postgres");
    let parsed: URL | undefined;
    try {
      parsed = new URL(databaseUrl);
    } catch {
      parsed = undefined;
    }
    // The URL is never echoed: it may hold a password.
    if (parsed === undefined || (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:")) {
      throw new ConfigError("TIMER_DATABASE_URL", "must be a postgres://user:pass@host:port/db URL");
    }
  }
  const databaseSchema = value(env, "TIMER_DATABASE_SCHEMA") ?? "timer";
  if (!SCHEMA_NAME.test(databaseSchema)) {
    throw new ConfigError("TIMER_DATABASE_SCHEMA", `must match ${SCHEMA_NAME.source}, got "${databaseSchema}"`);
  }
  return Object.freeze({
    store: storeRaw,
    databaseUrl,
    databaseSchema,
    claimTtlMs: integerIn(env, "TIMER_CLAIM_TTL_MS", 30_000, 1_000, 600_000),
    streamReplicas: integerIn(env, "TIMER_STREAM_REPLICAS", 1, 1, 5),
    retentionMs: retentionMs(env),
    databaseTimeoutMs: integerIn(env, "TIMER_DATABASE_TIMEOUT_MS", 10_000, 1_000, 600_000),
  });
}
