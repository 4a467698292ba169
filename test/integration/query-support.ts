import type { NatsConnection } from "@nats-io/transport-node";

/** A NATS query reply: the JSON body and the micro protocol's error headers. */
export interface NatsQueryReply {
  readonly body: any;
  readonly errorCode: string | undefined;
  readonly error: string | undefined;
}

export async function natsQuery(
  nc: NatsConnection,
  endpoint: string,
  tenant: string,
  body: unknown = {},
  prefix = "timer",
): Promise<NatsQueryReply> {
  const payload = typeof body === "string" ? body : JSON.stringify(body);
  const reply = await nc.request(`${prefix}.query.${endpoint}.${tenant}`, payload, { timeout: 5_000 });
  return {
    body: reply.data.length === 0 ? undefined : reply.json(),
    errorCode: reply.headers?.get("Nats-Service-Error-Code") || undefined,
    error: reply.headers?.get("Nats-Service-Error") || undefined,
  };
}

export interface HttpReply {
  readonly status: number;
  readonly body: any;
  readonly headers: Headers;
}

export async function httpGet(baseUrl: string, path: string, token?: string): Promise<HttpReply> {
  const response = await fetch(`${baseUrl}${path}`, token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (the page)
  }
  return { status: response.status, body, headers: response.headers };
}
