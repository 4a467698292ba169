/** A login written into a broker URL: `nats://user:pass@host` or `nats://token@host`. */
export type UrlLogin = { readonly user: string; readonly password: string } | { readonly token: string };

/** One entry of TIMER_BROKER_URL split into the server address and the login it carried. */
export interface BrokerUrl {
  /** The URL without its user part: safe to log and to hand to the client. */
  readonly server: string;
  readonly login?: UrlLogin;
}

/**
 * The text with everything between the scheme and the last `@` replaced by `***`. Works on text
 * that is not a valid URL too (a bad port, a stray space), so that error messages can quote it.
 */
export function redactUrl(text: string): string {
  const at = text.lastIndexOf("@");
  if (at < 0) return text;
  const scheme = text.indexOf("://");
  const start = scheme >= 0 && scheme < at ? scheme + 3 : 0;
  return `${text.slice(0, start)}***${text.slice(at)}`;
}

/** A broker URL that parsed, with its scheme and host for validation. */
export interface ParsedBrokerUrl extends BrokerUrl {
  readonly protocol: string;
  readonly hostname: string;
}

/**
 * Parses one broker URL (a bare `host:port` means `nats://`). A user with a password is a
 * user/password login, a user part alone a token (as in the Go client); both are percent-decoded.
 * Returns undefined when the text is not a URL.
 */
export function parseBrokerUrl(url: string): ParsedBrokerUrl | undefined {
  try {
    const parsed = new URL(url.includes("://") ? url : `nats://${url}`);
    const { protocol, hostname, username, password } = parsed;
    if (!url.includes("@")) return { server: url, protocol, hostname };
    const server = `${protocol}//${parsed.host}`;
    if (password !== "")
      return { server, protocol, hostname, login: { user: decodeURIComponent(username), password: decodeURIComponent(password) } };
    if (username !== "") return { server, protocol, hostname, login: { token: decodeURIComponent(username) } };
    return { server, protocol, hostname };
  } catch {
    // new URL or a malformed percent escape (decodeURIComponent)
    return undefined;
  }
}
