export { connectTimerClient, TimerClient, type TimerClientOptions } from "./timer-client.js";
export { TimerClientError, type TimerClientErrorCode, type TimerClientErrorOptions } from "./timer-client-error.js";
export type {
  CommandEnvelope,
  CommandOptions,
  ConsumeOptions,
  Delivery,
  DueTimeMissedPayload,
  DueTimeReachedPayload,
  EventKind,
  EventSubscription,
  ListQuery,
  Repeat,
  ScheduleInput,
  SendResult,
  Timer,
  TimerEvent,
  TimerPage,
  TimerState,
  TimerStats,
} from "./types.js";
