export const USAGE = `timer-client — schedule, cancel, read and watch timers of the timer service over NATS

Usage:
  timer-client schedule --tenant T --id ID (--at WHEN | --in DURATION) [--data JSON]
                        [--correlation-id C] [--max-lateness DURATION] [--traceparent TP]
                        [--every DURATION | --cron 'MIN HOUR DOM MON DOW' [--tz ZONE]]
                        [--until WHEN] [--max-occurrences N] [--no-confirm]
      Schedule (or reschedule) a timer and print what the service did with it.
      WHEN is ISO 8601 with an offset: 2026-03-01T09:00:00Z or 2026-03-01T10:00:00+01:00
      (a WHEN in the past is sent after a warning: the timer fires at once).
      DURATION is a number and a unit: 250ms, 10s, 5m, 2h, 1d, 1h30m, "10 minutes".
      --every (at least 1s) or --cron with an IANA --tz (default UTC) make it recurring;
      --at/--in is then optional. An id is used once: scheduling a fired id again is
      rejected TIMER_FINAL.
  timer-client cancel --tenant T --id ID [--no-confirm]
  timer-client cancel-prefix --tenant T --id-prefix P [--no-confirm]
      Cancel one timer, or every timer of T whose id starts with P.
  timer-client retry --tenant T (--id ID [--no-confirm] | --state S [--id-prefix P])
      Fire a Failed, TimedOut or Missed timer again at once; with --state (Failed, TimedOut
      or Missed) every timer of T in that state (whose id starts with P).
  timer-client get --tenant T --id ID
      Print the timer as JSON (exit 1 when there is none).
  timer-client history ID --tenant T [--json]
      Print what happened to the timer, oldest first: each command and its outcome,
      each firing, miss and time-out, one line each.
  timer-client list --tenant T [--state S] [--id-prefix P] [--due-after WHEN] [--due-before WHEN]
                    [--created-by NAME] [--since DURATION|WHEN] [--order due|changed]
                    [--limit N] [--cursor C | --all]
      Print timers as JSON lines, by due time (or most recently changed first). One page
      (--limit, default 100, at most 1000); the next page's cursor goes to stderr; --all
      follows the cursors.
  timer-client stats --tenant T
      Print the tenant's counts by state and next due time as JSON.
  timer-client watch [--tenant T]
      Print DueTimeReached, DueTimeMissed and CommandRejected events of T (all tenants
      when omitted) as JSON lines until interrupted.

  schedule, cancel, cancel-prefix and retry --id wait for the service's outcome (applied,
  ignored and why, or rejected and the code) up to --confirm-timeout (default 5s);
  --no-confirm returns once the commands stream has stored the command.

Options:
  --server URL   NATS server(s), comma-separated (default: NATS_URL, else TIMER_BROKER_URL,
                 else nats://127.0.0.1:4222). Credentials: NATS_CREDS (a .creds file),
                 NATS_USER and NATS_PASSWORD, or NATS_TOKEN.
  --prefix P     subject prefix of the service (default: TIMER_SUBJECT_PREFIX or "timer")
  -h, --help     show this help

Exit codes: 0 done (applied or ignored); 1 the broker or the service failed, or no such
timer; 2 a wrong command, flag or value (nothing sent); 3 the service rejected the
command; 4 stored, but no outcome in time (it may still be applied: look with get).

Examples:
  timer-client schedule --tenant acme --id invoice-42 --in 30s --data '{"invoice":42}'
  timer-client schedule --tenant acme --id standup --cron '0 9 * * MON-FRI' --tz Europe/Berlin
  timer-client cancel --tenant acme --id invoice-42
  timer-client history invoice-42 --tenant acme
  timer-client list --tenant acme --state Failed --all
  timer-client retry --tenant acme --state Failed --id-prefix invoice-
  timer-client watch --tenant acme
`;
