import { readFileSync } from "node:fs";
import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  UserAuthenticationExpiredError,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import type { NatsCredentials } from "../../config/config.js";
import type { Logger } from "../../app/logger.js";
import { BrokerUnreachableLog } from "./broker-unreachable-log.js";
import { parseBrokerUrl, type BrokerUrl } from "../../config/broker-url.js";

/** How long one connect or reconnect attempt may take before the next one starts. */
const CONNECT_ATTEMPT_TIMEOUT_MS = 5_000;
/** Pause between two rounds over the servers while the broker has never been reached. */
const FIRST_CONNECT_RETRY_MS = 250;

/**
 * Connection options: reconnect forever (the service outlives broker outages, CONTRACT §3.9).
 * Secrets go into the options, never the logs. The client ignores a URL's user part, so a login
 * written into a URL (the CLI passes its URLs as given) is moved into the options, unless
 * `given` names a login of its own.
 */
export function natsConnectionOptions(servers: readonly string[], given: NatsCredentials): NodeConnectionOptions {
  const parsed = servers.map((url): BrokerUrl => parseBrokerUrl(url) ?? { server: url });
  const urlLogin = parsed.find((entry) => entry.login !== undefined)?.login;
  const hasLogin = [given.user, given.token, given.nkeySeed, given.credsFile].some((value) => value !== undefined);
  const credentials: NatsCredentials =
    urlLogin === undefined || hasLogin
      ? given
      : { ...given, ...("token" in urlLogin ? { token: urlLogin.token } : { user: urlLogin.user, password: urlLogin.password }) };
  const options: NodeConnectionOptions = {
    servers: parsed.map((entry) => entry.server),
    name: "timer-service",
    maxReconnectAttempts: -1,
    // One attempt waits this long for the server's INFO and PONG (the client's default is 20 s). A
    // port that accepts but never speaks (a container engine's forwarder before the broker behind
    // it listens) otherwise holds a reconnect for those 20 s.
    timeout: CONNECT_ATTEMPT_TIMEOUT_MS,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    pingInterval: 10_000,
    maxPingOut: 3,
    // Otherwise every request (the backlog bypass reads a stream message per request) builds an
    // Error with a stack trace up front, and its time-out another, for the case that it fails.
    noAsyncTraces: true,
  };
  if (credentials.user !== undefined) {
    options.user = credentials.user;
    options.pass = credentials.password;
  }
  if (credentials.token !== undefined) options.token = credentials.token;
  if (credentials.nkeySeed !== undefined) options.authenticator = nkeyAuthenticator(new TextEncoder().encode(credentials.nkeySeed));
  if (credentials.credsFile !== undefined) options.authenticator = credsAuthenticator(readFileSync(credentials.credsFile));
  if (credentials.tlsCaFile !== undefined || credentials.tlsCertFile !== undefined) {
    options.tls = {
      ...(credentials.tlsCaFile === undefined ? {} : { caFile: credentials.tlsCaFile }),
      ...(credentials.tlsCertFile === undefined ? {} : { certFile: credentials.tlsCertFile }),
      ...(credentials.tlsKeyFile === undefined ? {} : { keyFile: credentials.tlsKeyFile }),
    };
  }
  return options;
}

/**
 * Connects, waiting as long as it takes for a broker that is not up yet; meanwhile a warn line says
 * so (rate-limited, URLs redacted). A refused login is not retried: it needs an operator.
 */
export async function connectToNats(servers: readonly string[], credentials: NatsCredentials, logger: Logger): Promise<NatsConnection> {
  // One round over the servers per call: this loop, unlike the client's waitOnFirstConnect, can
  // count the attempts and log them.
  const options = natsConnectionOptions(servers, credentials);
  const unreachable = new BrokerUnreachableLog(logger, servers);
  for (;;) {
    try {
      return await connect(options);
    } catch (error) {
      if (error instanceof AuthorizationError || error instanceof UserAuthenticationExpiredError) throw error;
      unreachable.attempt(error);
      await new Promise((resolve) => setTimeout(resolve, FIRST_CONNECT_RETRY_MS));
    }
  }
}
