import { describe, expect, it } from "vitest";
import { requireBinary, runCommand } from "./ops-support.js";

// promtool ships with Debian's `prometheus` package; CI installs it. Missing promtool is a failure.
const promtool = (): string => requireBinary("promtool", "install it with `apt-get install -y prometheus`");

describe("Prometheus files in deploy/prometheus", () => {
  it.each(["deploy/prometheus/prometheus.yml", "deploy/prometheus/prometheus.local.yml"])(
    "when promtool checks %s, then the config and the rule files it names are valid",
    (file) => {
      const result = runCommand(promtool(), ["check", "config", file]);
      expect(result.code, result.output).toBe(0);
    },
  );

  it("when promtool checks timer-alerts.yml, then every rule is valid", () => {
    const result = runCommand(promtool(), ["check", "rules", "deploy/prometheus/timer-alerts.yml"]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain("SUCCESS: 9 rules found");
  });

  it("when promtool runs the alert unit tests, then they all pass", () => {
    const result = runCommand(promtool(), ["test", "rules", "deploy/prometheus/timer-alerts.test.yml"]);
    expect(result.code, result.output).toBe(0);
  });
});
