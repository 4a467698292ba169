import { fileURLToPath } from "node:url";
import { mergeConfig } from "vitest/config";
import base from "../../vitest.config.js";

// vitest.config.ts plus a global setup that starts one Postgres for the run on the containers path
// (it sets TIMER_TEST_DATABASE_URL, which the Postgres contract tests read). Used by
// prove-testcontainers.sh; the same line in vitest.config.ts would make it the default (it does
// nothing on the local path).
export default mergeConfig(base, {
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    globalSetup: ["test/support/containers.global-setup.ts"],
  },
});
