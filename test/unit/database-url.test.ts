import { describe, expect, it } from "vitest";
import { redactDatabaseUrl } from "../../src/config/database-url.js";

describe("redactDatabaseUrl", () => {
  it("when the URL has a password, then the password is replaced and user, host, port and database stay", () => {
    expect(redactDatabaseUrl("postgres://timer:s3cr%40t@db.internal:5433/timers")).toBe("postgres://timer:***@db.internal:5433/timers");
  });

  it("when a query parameter may carry a secret, then its value is replaced and the others stay", () => {
    expect(redactDatabaseUrl("postgresql://timer@db/timers?sslpassword=x&sslkey=/k.pem&application_name=svc")).toBe(
      "postgresql://timer@db/timers?sslpassword=***&sslkey=***&application_name=svc",
    );
  });

  it("when the URL has no password, then it is unchanged", () => {
    expect(redactDatabaseUrl("postgres://postgres@127.0.0.1:5432/test")).toBe("postgres://postgres@127.0.0.1:5432/test");
  });

  it("when the text is not a URL, then none of it is quoted", () => {
    expect(redactDatabaseUrl("hunter2")).toBe("(not a URL)");
  });
});
