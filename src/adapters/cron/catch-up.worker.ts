import { parentPort } from "node:worker_threads";
import { decideFiring } from "../../domain/firing-rules.js";
import { CronerCalendar } from "./croner-calendar.js";
import type { CatchUpReply, CatchUpRequest } from "./catch-up-protocol.js";

/** The catch-up thread: the same pure firing rule as the main thread, with a calendar of its own. */
const calendar = new CronerCalendar();
const port = parentPort!;

port.on("message", ({ id, timer, nowMs, prefixCancelTs }: CatchUpRequest) => {
  let reply: CatchUpReply;
  try {
    reply = { id, decision: decideFiring(timer, nowMs, calendar, prefixCancelTs) };
  } catch (error) {
    reply = { id, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
});
