export const USAGE = `timer-service — durable timers over NATS JetStream (the service's own side)

Usage:
  timer-service start
      Run the service (configured by TIMER_* environment variables, see .env.example).
      "serve" is the same.

  timer-service export [--tenant T] [--out FILE] [--history]
      Write every timer (of tenant T) and every prefix cancel of the configured store
      (TIMER_STORE, TIMER_DB_PATH or TIMER_DATABASE_URL + TIMER_DATABASE_SCHEMA) as NDJSON to FILE
      (default standard output): a header line, then one object a line. One consistent snapshot;
      may run while the service runs. --history adds each timer's history: this release and later
      ones import it, the previous release does not (leave it out to roll back).

  timer-service import [--in FILE]
      Write an export (default: standard input) into the configured store, 1,000 lines a
      transaction; a stored timer with a commandTs >= the line's is kept, else replaced, so a
      second import changes nothing. Prints counts of created, replaced and kept. A bad line: exit 1
      with "line N: what is wrong", nothing of its batch written. Stop the store's instances first.

  timer-service backup --out FILE
      Copy the SQLite store (TIMER_DB_PATH) into the new file FILE while the service runs: one
      consistent snapshot, checked, that the service starts on. Postgres: use pg_dump.
      Moving and backing up step by step: docs/operations/move-to-postgres.md, backup.md.

  -h, --help       show this help

Scheduling, cancelling, reading, watching and retrying timers is done over NATS with
timer-client (package @timer-service/client): npx timer-client --help

Examples:
  timer-service start
  timer-service export --out timers.ndjson
  TIMER_STORE=postgres TIMER_DATABASE_URL=postgres://… timer-service import --in timers.ndjson
  timer-service backup --out /backups/timer-$(date -u +%Y%m%dT%H%M%SZ).db
`;
