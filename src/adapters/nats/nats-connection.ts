import { readFileSync } from "node:fs";
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import type { NatsCredentials } from "../../config.js";

/**
 * Connection options: reconnect forever (the service outlives broker outages, CONTRACT §3.9) and
 * keep trying when the broker is not up yet at start. Secrets go into the options, never the logs.
 */
export function natsConnectionOptions(servers: readonly string[], credentials: NatsCredentials): NodeConnectionOptions {
  const options: NodeConnectionOptions = {
    servers: [...servers],
    name: "timer-service",
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
    maxPingOut: 3,
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

export async function connectToNats(servers: readonly string[], credentials: NatsCredentials): Promise<NatsConnection> {
  return connect(natsConnectionOptions(servers, credentials));
}
