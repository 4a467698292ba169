import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/adapters/sqlite/timer-schedules.schema.ts",
  out: "./drizzle/sqlite",
});
