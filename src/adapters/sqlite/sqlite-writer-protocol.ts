import type { SqliteWriter } from "./sqlite-writer.js";

/** What the main thread asks of the writer thread: a SqliteWriter method and its arguments. */
export type WriterOp = keyof SqliteWriter;

export interface WriterRequest {
  readonly id: number;
  readonly op: WriterOp;
  readonly args: readonly unknown[];
}

/** The answer to one request; a SQLite error keeps its code (SQLITE_BUSY, SQLITE_FULL, …). */
export interface WriterReply {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: { readonly message: string; readonly code?: string; readonly name?: string };
}
