import { defineConfig } from "drizzle-kit";

// The Postgres store's migrations; drizzle.config.ts holds SQLite's. `npm run db:generate` runs both.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/adapters/postgres/timer-schedules.schema.ts",
  out: "./drizzle/postgres",
});
