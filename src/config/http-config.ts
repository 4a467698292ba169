/**
 * TIMER_ADMIN_TOKEN (CONTRACT §9): the bearer token of the HTTP query API `/v1` and of the admin
 * page. Unset: `/` and `/v1/*` answer 404. Never logged.
 */
import { ConfigError } from "./config-error.js";

type Env = Readonly<Record<string, string | undefined>>;

/** Shorter tokens are refused: the token is the only guard of every tenant's timers over HTTP. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

export function loadAdminToken(env: Env): string | undefined {
  return bearerTokenOf(env, "TIMER_ADMIN_TOKEN");
}

/**
 * TIMER_ADMIN_READ_TOKEN (CONTRACT §14): a second token for every GET and the page, refused (403)
 * on the POST actions. Needs TIMER_ADMIN_TOKEN (without it /v1 is off) and must differ from it.
 */
export function loadAdminReadToken(env: Env): string | undefined {
  const read = bearerTokenOf(env, "TIMER_ADMIN_READ_TOKEN");
  if (read === undefined) return undefined;
  const admin = loadAdminToken(env);
  if (admin === undefined) throw new ConfigError("TIMER_ADMIN_READ_TOKEN", "needs TIMER_ADMIN_TOKEN set too (without it /v1 is off)");
  if (admin === read) throw new ConfigError("TIMER_ADMIN_READ_TOKEN", "must differ from TIMER_ADMIN_TOKEN");
  return read;
}

function bearerTokenOf(env: Env, variable: string): string | undefined {
  const raw = env[variable];
  if (raw === undefined || raw === "") return undefined;
  // The message never quotes the value.
  if (raw.trim() !== raw || !/^[\x21-\x7E]+$/.test(raw)) {
    throw new ConfigError(variable, "must be printable ASCII without spaces");
  }
  if (raw.length < MIN_ADMIN_TOKEN_LENGTH) throw new ConfigError(variable, `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters long`);
  return raw;
}
