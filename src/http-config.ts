/**
 * TIMER_ADMIN_TOKEN (CONTRACT §9): the bearer token of the HTTP query API `/v1` and of the admin
 * page. Unset: `/` and `/v1/*` answer 404. Never logged.
 */
import { ConfigError } from "./config.js";

type Env = Readonly<Record<string, string | undefined>>;

/** Shorter tokens are refused: the token is the only guard of every tenant's timers over HTTP. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

export function loadAdminToken(env: Env): string | undefined {
  const raw = env.TIMER_ADMIN_TOKEN;
  if (raw === undefined || raw === "") return undefined;
  // The message never quotes the value.
  if (raw.trim() !== raw || !/^[\x21-\x7E]+$/.test(raw)) {
    throw new ConfigError("TIMER_ADMIN_TOKEN", "must be printable ASCII without spaces");
  }
  if (raw.length < MIN_ADMIN_TOKEN_LENGTH)
    throw new ConfigError("TIMER_ADMIN_TOKEN", `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters long`);
  return raw;
}
