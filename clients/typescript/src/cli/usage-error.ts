/** A wrong command, flag or value: printed with a hint, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
