import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "clients/typescript/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration and fault tests start real processes; two cores run two files at a time.
    maxWorkers: 2,
    // With TEST_CONTAINERS=1 (or DOCKER_HOST), one Postgres container for the run; nothing otherwise.
    globalSetup: ["test/support/containers.global-setup.ts"],
  },
});
