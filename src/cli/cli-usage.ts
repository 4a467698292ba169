import { QUERY_USAGE } from "./query-commands.js";

export const USAGE = `timer-service — durable timers over NATS JetStream

Usage:
  timer-service serve
      Run the service (configured by TIMER_* environment variables, see .env.example).

  timer-service schedule --tenant T --id ID (--at WHEN | --in DURATION)
                         [--data JSON] [--correlation-id C] [--max-lateness DURATION]
                         [--every DURATION | --cron 'MIN HOUR DOM MON DOW' [--tz ZONE]]
                         [--until WHEN] [--max-occurrences N] [--traceparent TP]
      Publish a ScheduleTimer. WHEN is ISO 8601 with an offset (2026-12-01T09:00:00Z)
      or plain words ("tomorrow 9am", "next friday 17:00", local time zone); a WHEN in
      the past is sent after a warning (the timer fires at once).
      DURATION is like 10s, 10 seconds, 5 minutes, 1h30m, 2 days, 250ms, as one
      argument or several words (--in 1 hour 30 minutes).
      --every (at least 1s) or --cron with an IANA --tz (default UTC) make it recurring:
      --at/--in is then optional (--every starts one interval from now, --cron at its
      next time). --max-lateness: publish DueTimeMissed instead when that late.
      --traceparent: a W3C traceparent (00-<32 hex trace-id>-<16 hex span-id>-<2 hex flags>)
      sent as the command's header; the timer's events continue that trace.

  timer-service cancel --tenant T (--id ID | --id-prefix P) [--correlation-id C] [--traceparent TP]
      Publish a CancelTimer, or with --id-prefix a CancelTimersByPrefix: every timer
      of T whose id starts with P. (--prefix is the subject prefix, see below.)

  timer-service retry --tenant T (--id ID | --state S [--id-prefix P]) [--traceparent TP]
      Publish a RetryTimer: a Failed, TimedOut or Missed timer fires again at once as a new
      generation (other states ignore it). With --state (Failed, TimedOut or Missed) one
      RetryTimer for every timer of T in that state (whose id starts with P).

  timer-service watch [--tenant T]
      Print DueTimeReached, DueTimeMissed and CommandRejected events of tenant T (all tenants when
      omitted) as JSON lines until interrupted.
${QUERY_USAGE}
  timer-service export [--tenant T] [--out FILE]
      Write every timer (of tenant T) and every prefix cancel of the configured store
      (TIMER_STORE, TIMER_DB_PATH or TIMER_DATABASE_URL + TIMER_DATABASE_SCHEMA) as NDJSON to FILE
      (default standard output): a header line, then one object a line. One consistent snapshot;
      may run while the service runs.

  timer-service import [--in FILE]
      Write an export (default: standard input) into the configured store, 1,000 lines a
      transaction; a stored timer with a commandTs >= the line's is kept, else replaced, so a
      second import changes nothing. Prints counts of created, replaced and kept. A bad line: exit 1
      with "line N: what is wrong", nothing of its batch written. Stop the store's instances first.

  timer-service backup --out FILE
      Copy the SQLite store (TIMER_DB_PATH) into the new file FILE while the service runs: one
      consistent snapshot, checked, that the service starts on. Postgres: use pg_dump.
      Moving and backing up step by step: docs/operations/move-to-postgres.md, backup.md.

Common options:
  --server URL     NATS server(s), comma-separated (default: TIMER_BROKER_URL or
                   nats://127.0.0.1:4222). Credentials come from TIMER_NATS_* variables.
  --prefix P       subject prefix (default: TIMER_SUBJECT_PREFIX or "timer")
  -h, --help       show this help

Examples:
  timer-service schedule --tenant acme --id invoice-42 --in 30s --data '{"invoice":42}'
  timer-service schedule --tenant acme --id reminder-7 --in 10 minutes
  timer-service schedule --tenant acme --id standup --at 'tomorrow 9am'
  timer-service cancel --tenant acme --id invoice-42
  timer-service schedule --tenant acme --id heartbeat --every 5m
  timer-service schedule --tenant acme --id standup --cron '0 9 * * MON-FRI' --tz Europe/Berlin
  timer-service schedule --tenant acme --id call-back --in 10m --max-lateness 30s
  timer-service schedule --tenant acme --id traced --in 1m \
                         --traceparent 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
  timer-service cancel --tenant acme --id-prefix order-4711:
  timer-service retry --tenant acme --id invoice-42
  timer-service retry --tenant acme --state Failed --id-prefix invoice-
  timer-service watch --tenant acme
  timer-service get --tenant acme --id invoice-42
  timer-service list --tenant acme --state Scheduled --id-prefix invoice- --all
  timer-service stats --tenant acme
  timer-service export --out timers.ndjson
  TIMER_STORE=postgres TIMER_DATABASE_URL=postgres://… timer-service import --in timers.ndjson
  timer-service backup --out /backups/timer-$(date -u +%Y%m%dT%H%M%SZ).db
`;
