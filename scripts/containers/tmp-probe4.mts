import { startNats } from "/work/main/test/support/test-infrastructure.ts";
import { connect } from "@nats-io/transport-node";
const mode = process.argv[2] ?? "hard";
const n = await startNats({ jetstream: mode !== "recreate" });
const t0 = Date.now();
const nc = await connect({ servers: n.url, maxReconnectAttempts: -1, reconnectTimeWait: 250, reconnectJitter: 100, pingInterval: 10_000, maxPingOut: 3 });
(async () => { for await (const s of nc.status()) console.log(Date.now() - t0, s.type, (s as any).error?.message ?? ""); })();
await new Promise(r => setTimeout(r, 300));
console.log(Date.now() - t0, "stop");
if (mode === "recreate") { await n.stop(); n.jetstream = true; } else await n.stop(mode === "hard");
console.log(Date.now() - t0, "stopped");
await new Promise(r => setTimeout(r, 1500));
await n.restart();
console.log(Date.now() - t0, "restarted");
const deadline = Date.now() + 30000;
while (Date.now() < deadline) { try { await nc.flush(); break; } catch { await new Promise(r => setTimeout(r, 100)); } }
console.log(Date.now() - t0, "flushed");
await nc.close(); await n.dispose();
