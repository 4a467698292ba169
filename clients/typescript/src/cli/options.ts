import type { parseArgs } from "node:util";

/** Every flag of every command; each command checks that it got only the ones it reads. */
export const OPTIONS = {
  tenant: { type: "string" },
  id: { type: "string" },
  at: { type: "string" },
  in: { type: "string" },
  data: { type: "string" },
  "correlation-id": { type: "string" },
  every: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  until: { type: "string" },
  "max-occurrences": { type: "string" },
  "max-lateness": { type: "string" },
  traceparent: { type: "string" },
  "no-confirm": { type: "boolean" },
  "confirm-timeout": { type: "string" },
  state: { type: "string" },
  "id-prefix": { type: "string" },
  "due-after": { type: "string" },
  "due-before": { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  all: { type: "boolean" },
  order: { type: "string" },
  since: { type: "string" },
  "created-by": { type: "string" },
  json: { type: "boolean" },
  server: { type: "string" },
  prefix: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];
