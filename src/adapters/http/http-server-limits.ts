import type { Server, ServerOptions } from "node:http";
import type { Socket } from "node:net";

/**
 * Time limits of the HTTP server. Node's defaults (60 s for headers, 5 min per request, checked
 * every 30 s, no idle limit) let a slowloris client hold a socket for minutes.
 */
export const HTTP_SERVER_OPTIONS: ServerOptions = {
  /** The request line and headers must be complete within this. */
  headersTimeout: 5_000,
  /** The whole request, body included. */
  requestTimeout: 10_000,
  /** How often the two limits above are checked: a slow client is cut within a second of them. */
  connectionsCheckingInterval: 1_000,
  /** An idle keep-alive socket is closed after this. */
  keepAliveTimeout: 5_000,
  maxHeaderSize: 16_384,
};

/** Open sockets beyond this evict the least recently used one. */
export const MAX_HTTP_CONNECTIONS = 512;
/** A socket that sends and receives nothing for this long is destroyed. */
const SOCKET_IDLE_TIMEOUT_MS = 15_000;
const MAX_REQUESTS_PER_SOCKET = 1_000;

/**
 * Applies the per-socket limits and caps open sockets. Node's own `maxConnections` drops the
 * newest connection when full, so idle sockets held by an attacker would shut out the health
 * probe; here the newest connection is always accepted and the socket that has waited longest
 * without sending a request is closed instead. The cap also keeps the process below its file
 * descriptor limit, which the broker connection and the database need too.
 */
export function applyHttpLimits(server: Server, maxConnections = MAX_HTTP_CONNECTIONS): void {
  server.maxRequestsPerSocket = MAX_REQUESTS_PER_SOCKET;
  // Without a 'timeout' listener, Node destroys the socket when it fires.
  server.setTimeout(SOCKET_IDLE_TIMEOUT_MS);
  // Insertion order = least recently used first.
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    if (sockets.size > maxConnections) {
      const oldest = sockets.values().next().value!;
      sockets.delete(oldest);
      oldest.destroy();
    }
  });
  server.on("request", (request: { socket: Socket }) => {
    if (sockets.delete(request.socket)) sockets.add(request.socket);
  });
}
