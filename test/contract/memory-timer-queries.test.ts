import { describeTimerQueriesContract } from "./timer-queries.contract.js";
import { describeTimerRetentionContract } from "./timer-retention.contract.js";
import { memoryHarness } from "./query-harnesses.js";

describeTimerQueriesContract("MemoryTimerQueries", memoryHarness);
describeTimerRetentionContract("MemoryTimerRetention", memoryHarness);
