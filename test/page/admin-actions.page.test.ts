import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { repoRoot } from "../ops/ops-support.js";
import { eventually } from "../integration/integration-support.js";

/** The operator actions of the admin page (CONTRACT §14) in Chromium; screenshots go to test-artifacts/. */
const TOKEN = "page-actions-admin-token-5e1";
const READER = "page-actions-read-token-9c4";
const TENANT = "ops";
const EVIL = "evil\u202Eexe.txt";
const ARTIFACTS = join(repoRoot, "test-artifacts");

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let client: TimerClient;
let browser: Browser;
let seq = 0;

const send = (kind: string, type: string, payload: Record<string, unknown>) =>
  client.publishRaw(
    `timer.commands.${kind}.${TENANT}`,
    JSON.stringify({ id: `p-${++seq}`, type, tenantId: TENANT, timestampMs: Date.now(), payload: { tenantId: TENANT, ...payload } }),
  );
const schedule = (id: string, dueAtMs: number, extra: Record<string, unknown> = {}) =>
  send("schedule", "ScheduleTimer", { serviceCallId: id, dueAt: new Date(dueAtMs).toISOString(), ...extra });
async function view(id: string): Promise<Record<string, any> | null> {
  const response = await fetch(`${service.baseUrl}/v1/tenants/${TENANT}/timers/${encodeURIComponent(id)}`, {
    headers: { Authorization: `Bearer ${TOKEN}` },
  });
  return response.status === 404 ? null : ((await response.json()) as { timer: Record<string, any> }).timer;
}
const stateOf = (id: string, state: string) => eventually(async () => expect(await view(id)).toMatchObject({ state }), 20_000);

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, {
    TIMER_POLLING_INTERVAL: "100",
    TIMER_ADMIN_TOKEN: TOKEN,
    TIMER_ADMIN_READ_TOKEN: READER,
  });
  client = await TimerClient.connect(nats.url);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_BIN ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const failing = ["failed-1", "batch-1", "batch-2", "batch-3"];
  for (const id of failing) await schedule(id, Date.now(), { delivery: { maxRetries: 0, completionTimeoutMs: 600_000 } });
  await schedule("late-1", Date.now() - 10_000, { maxLatenessMs: 0 });
  await schedule(EVIL, Date.now() - 10_000, { maxLatenessMs: 0 });
  await schedule("pending-1", Date.now() + 3_600_000);
  for (const id of failing) {
    await stateOf(id, "Fired");
    await send("fail", "TimerFailed", { serviceCallId: id, reason: "downstream 503" });
    await stateOf(id, "Failed");
  }
  await stateOf("late-1", "Missed");
  await stateOf(EVIL, "Missed");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await client?.close();
  await service?.dispose();
  await nats?.dispose();
});

async function openPage(token: string): Promise<{ page: Page; dialogs: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.accept();
  });
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(service.baseUrl);
  await page.fill("#token", token);
  await page.click("#login button");
  await page.waitForSelector("#main:not([hidden])");
  await page.waitForSelector("#undone td:has-text('failed-1')", { timeout: 15_000 });
  return { page, dialogs, errors };
}

describe("operator actions on the admin page in Chromium (CONTRACT §14)", () => {
  it("when an operator retries, cancels and bulk-retries with confirmation, then each result and the new state show", async () => {
    const { page, dialogs, errors } = await openPage(TOKEN);
    mkdirSync(ARTIFACTS, { recursive: true });

    // A right-to-left override in an id is shown escaped, never applied.
    const undone = await page.locator("#undone").innerText();
    expect(undone).toContain("evil\\u{202E}exe.txt");
    expect(undone).not.toContain("\u202E");
    await page.screenshot({ path: join(ARTIFACTS, "admin-actions-before.png"), fullPage: true });

    await page.locator("#undone tbody tr", { hasText: "late-1" }).getByRole("button", { name: "Retry" }).click();
    await page.waitForSelector("#action-result:has-text('Retry of late-1: now')", { timeout: 15_000 });
    expect(dialogs[0]).toContain("Retry timer late-1 of tenant ops (now Missed)?");
    expect(await page.locator("#action-result").innerText()).toMatch(/now (Scheduled|Reached) \(generation 2\)/);
    await stateOf("late-1", "Reached");

    await page.locator("#next tbody tr", { hasText: "pending-1" }).getByRole("button", { name: "Cancel" }).click();
    await page.waitForSelector("#action-result:has-text('Cancel of pending-1: now Cancelled')", { timeout: 15_000 });
    expect(dialogs[1]).toContain("Cancel timer pending-1 of tenant ops (now Scheduled)?");

    await page.fill("#bulk-prefix", "batch-");
    await page.click("#bulk-retry");
    await page.waitForSelector("#action-result:has-text('Bulk retry: 3 retry commands sent')", { timeout: 15_000 });
    expect(dialogs[2]).toBe("Retry 3 Failed timers of tenant ops starting with batch-?");
    for (const id of ["batch-1", "batch-2", "batch-3"])
      await eventually(async () => expect(await view(id)).toMatchObject({ generation: 2 }), 20_000);
    expect(await view("failed-1")).toMatchObject({ state: "Failed", generation: 1 });
    // The retried rows leave the not-done table once it refreshes.
    await eventually(async () => expect(await page.locator("#undone").innerText()).not.toContain("batch-"), 15_000);
    await page.screenshot({ path: join(ARTIFACTS, "admin-actions-after.png"), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("when timers are due over the next hours, then the chart draws a bar per hour with their counts", async () => {
    const inHours = (h: number) => Date.now() + h * 3_600_000 + 60_000;
    for (const [i, h] of [0, 0, 0, 5, 5, 23].entries()) await schedule(`coming-${i}`, inHours(h));
    await stateOf("coming-5", "Scheduled");
    const { page } = await openPage(TOKEN);

    await eventually(async () => expect(await page.locator("#chart rect").count()).toBe(25), 15_000);
    const titles = await page.locator("#chart rect title").allTextContents();
    expect(titles[0]).toMatch(/^overdue: \d+$/);
    expect(titles[1]).toMatch(/^\+0h \(\d\d:\d\dZ\): 3$/);
    expect(titles[6]).toMatch(/: 2$/);
    expect(titles[24]).toMatch(/: 1$/);
    // The fires-per-minute sparkline needs two samples of /metrics: one refresh later.
    await page.waitForSelector("#sparkline polyline", { state: "attached", timeout: 15_000 });
    await eventually(async () => expect(await page.locator("#fire-rate").innerText()).toMatch(/^\d+\/min now$/), 15_000);
    await page.locator("#chart").screenshot({ path: join(ARTIFACTS, "admin-chart.png") });
    await page.screenshot({ path: join(ARTIFACTS, "admin-overview.png"), fullPage: true });
    await page.close();
  }, 30_000);

  it("when the operator declines the confirmation, then nothing is sent", async () => {
    const page = await browser.newPage();
    page.on("dialog", (dialog) => void dialog.dismiss());
    await page.goto(service.baseUrl);
    await page.fill("#token", TOKEN);
    await page.click("#login button");
    await page.waitForSelector("#undone td:has-text('failed-1')", { timeout: 15_000 });

    await page.locator("#undone tbody tr", { hasText: "failed-1" }).getByRole("button", { name: "Retry" }).click();
    await page.waitForTimeout(500);

    expect(await view("failed-1")).toMatchObject({ state: "Failed", generation: 1 });
    expect(await page.locator("#action-result").innerText()).toBe("");
    await page.close();
  }, 30_000);

  it("when a read-only token tries an action, then the page says it cannot act and nothing changes", async () => {
    const { page } = await openPage(READER);

    await page.locator("#undone tbody tr", { hasText: "failed-1" }).getByRole("button", { name: "Retry" }).click();

    await page.waitForSelector("#action-result.error:has-text('read-only token cannot act')", { timeout: 15_000 });
    expect(await view("failed-1")).toMatchObject({ state: "Failed", generation: 1 });
    await page.screenshot({ path: join(ARTIFACTS, "admin-actions-read-only.png"), fullPage: true });
    await page.close();
  }, 30_000);
});
