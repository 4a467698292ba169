#!/usr/bin/env node
/**
 * `timer-client`: everything a producer or an operator does with the timer service over NATS —
 * schedule, cancel, retry, read, list and watch timers — from a shell in any project that installed
 * @timer-service/client. A layer over the client, so its checks and error texts are the client's.
 */
import { main } from "./cli/main.js";

main(process.argv.slice(2));
