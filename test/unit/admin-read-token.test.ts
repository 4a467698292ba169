import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

const ADMIN = "admin-token-0123456789";
const READ = "read-token-0123456789";

function configError(env: Record<string, string>): ConfigError | undefined {
  try {
    loadConfig(env);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}

describe("TIMER_ADMIN_READ_TOKEN (CONTRACT §14)", () => {
  it("when both tokens are valid and differ, then both are in the configuration", () => {
    expect(loadConfig({ TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: READ })).toMatchObject({
      adminToken: ADMIN,
      adminReadToken: READ,
    });
  });

  it("when it is unset or empty, then there is no read-only token", () => {
    expect(loadConfig({ TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: "" }).adminReadToken).toBeUndefined();
  });

  it.each([
    ["too short", { TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: "short-token" }],
    ["with a space", { TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: "read token 0123456789" }],
    ["not printable ASCII", { TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: "read-token-0123456789\u00e9" }],
    ["without TIMER_ADMIN_TOKEN", { TIMER_ADMIN_READ_TOKEN: READ }],
    ["the same as TIMER_ADMIN_TOKEN", { TIMER_ADMIN_TOKEN: ADMIN, TIMER_ADMIN_READ_TOKEN: ADMIN }],
  ])("when it is %s, then start fails naming the variable and not quoting the value", (_label, env) => {
    const error = configError(env);

    expect(error?.variable).toBe("TIMER_ADMIN_READ_TOKEN");
    expect(error?.message).not.toContain(env.TIMER_ADMIN_READ_TOKEN);
  });

  it("when the admin token is invalid, then start fails on it even with a valid read token", () => {
    expect(configError({ TIMER_ADMIN_TOKEN: "short", TIMER_ADMIN_READ_TOKEN: READ })?.variable).toBe("TIMER_ADMIN_TOKEN");
  });
});
