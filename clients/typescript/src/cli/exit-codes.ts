/** The exit codes of `timer-client`, so a script can tell what happened. */
export const EXIT = {
  OK: 0,
  /** The broker or the service failed, or a `get` found no timer. */
  FAILED: 1,
  /** A wrong command, flag or value: nothing was sent. */
  USAGE: 2,
  /** The service rejected the command (its outcome says `rejected`, with the code). */
  REJECTED: 3,
  /** The command is stored but no outcome came in time: it may still be applied. */
  NO_OUTCOME: 4,
} as const;
