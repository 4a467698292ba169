export { connectTimerClient, TimerClient, type TimerClientOptions } from "./timer-client.js";
export { TimerClientError, type TimerClientErrorCode, type TimerClientErrorOptions } from "./timer-client-error.js";
export type {
  CommandEnvelope,
  CommandOptions,
  CommandRejectedPayload,
  ConsumeOptions,
  Delivery,
  DueTimeMissedPayload,
  DueTimeReachedPayload,
  EventKind,
  EventSubscription,
  ListQuery,
  RejectionCode,
  Repeat,
  ScheduleInput,
  SendResult,
  Timer,
  TimerEvent,
  TimerPage,
  TimerState,
  TimerStats,
} from "./types.js";
