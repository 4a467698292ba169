import type { Clock } from "../../app/clock.js";

export const systemClock: Clock = { now: () => Date.now() };
