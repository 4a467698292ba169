import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { watchConfirmedTenants } from "../../src/adapters/nats/confirmed-tenants.js";
import { NatsServerProcess } from "../support/nats-server.js";

/** On a shared store each instance hears the others' outcomes, so that its shared stats answers are dropped (CONTRACT §19). */
describe("watchConfirmedTenants", () => {
  let server: NatsServerProcess;
  let instance: NatsConnection;
  let other: NatsConnection;

  beforeAll(async () => {
    server = await NatsServerProcess.start();
    [instance, other] = await Promise.all([connect({ servers: server.url }), connect({ servers: server.url })]);
  });

  afterAll(async () => {
    await Promise.all([instance?.close(), other?.close()]);
    await server?.dispose();
  });

  it("when another instance publishes outcomes, then this one is told their tenants in order, and nothing of other subjects", async () => {
    const tenants: string[] = [];
    const sub = watchConfirmedTenants(instance, "tw", (tenantId) => tenants.push(tenantId));
    await instance.flush();

    other.publish("tw.outcomes.acme", "{}");
    other.publish("tw.events.due.acme", "{}");
    other.publish("timer.outcomes.globex", "{}");
    other.publish("tw.outcomes.globex", "{}");
    await other.flush();
    // A request on the same connection after them: the server delivers the outcomes to the instance first.
    instance.subscribe("tw.query.stats.acme", { callback: (_e, msg) => void msg.respond(JSON.stringify(tenants)) });
    await instance.flush();
    const seen = (await other.request("tw.query.stats.acme", "{}", { timeout: 5_000 })).json<string[]>();

    expect(seen).toEqual(["acme", "globex"]);
    sub.unsubscribe();
  });
});
