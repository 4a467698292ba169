import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import { NatsServerProcess } from "../support/nats-server.js";
import { TimerServiceProcess } from "../support/timer-service-process.js";
import { TimerClient } from "../support/timer-client.js";
import { repoRoot } from "../ops/ops-support.js";

const TOKEN = "page-admin-token-8d2e71";
const ARTIFACTS = join(repoRoot, "test-artifacts");

let nats: NatsServerProcess;
let service: TimerServiceProcess;
let client: TimerClient;
let browser: Browser;

beforeAll(async () => {
  nats = await NatsServerProcess.start();
  service = await TimerServiceProcess.start(nats.url, { TIMER_POLLING_INTERVAL: "100", TIMER_ADMIN_TOKEN: TOKEN });
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
});

afterAll(async () => {
  await browser?.close();
  await client?.close();
  await service?.dispose();
  await nats?.dispose();
});

describe("the admin page in Chromium", () => {
  it("when an operator logs in with the token, then a new timer appears, fires and shows as Reached with its lag", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => message.type() === "error" && errors.push(message.text()));

    await page.goto(service.baseUrl);
    await page.fill("#token", "wrong-token");
    await page.click("#login button");
    await page.waitForSelector("#login-error:has-text('refused')");

    await page.fill("#token", TOKEN);
    await page.click("#login button");
    await page.waitForSelector("#main:not([hidden])");

    await client.schedule("acme", "invoice-42", new Date(Date.now() + 5_000), { data: { invoice: 42 } });
    await client.schedule("acme", "reminder-7", new Date(Date.now() + 3_600_000));
    await client.schedule("globex", "report-1", new Date(Date.now() + 3_600_000));
    // Auto-refresh brings the timer in as Scheduled, then, once it fired, as a recent fire.
    await page.waitForSelector("#next td:has-text('invoice-42')", { timeout: 15_000 });
    await page.waitForSelector("#counts td:has-text('globex')");
    await client.waitForDue("acme", "invoice-42", 15_000);
    await page.waitForSelector("#fires td:has-text('invoice-42')", { timeout: 15_000 });
    const fireRow = await page.locator("#fires tbody tr", { hasText: "invoice-42" }).innerText();
    expect(fireRow).toMatch(/\d+ ms/);

    await page.fill("#lookup-id", "invoice-42");
    await page.click("#lookup button");
    await page.waitForSelector("#lookup-result:has-text('Reached')");
    const lookedUp = JSON.parse(await page.locator("#lookup-result").innerText());
    expect(lookedUp).toMatchObject({ tenantId: "acme", serviceCallId: "invoice-42", state: "Reached", data: { invoice: 42 } });
    // Its history (CONTRACT §19) as a timeline: the schedule applied, then the firing that published its event.
    await page.waitForSelector("#lookup-history:not([hidden])");
    const timeline = await page.locator("#lookup-history tbody tr").allInnerTexts();
    expect(timeline).toHaveLength(2);
    expect(timeline[0]).toMatch(/ScheduleTimer applied/);
    expect(timeline[1]).toMatch(/fired\t.*ms late; event acme:invoice-42:\d+:1/);
    const acmeRow = await page.locator("#counts tbody tr", { hasText: "acme" }).innerText();
    expect(acmeRow.split("\t").slice(0, 3)).toEqual(["acme", "1", "1"]);

    // The token lives in the tab's sessionStorage only.
    expect(await page.evaluate("[sessionStorage.length, localStorage.length, document.cookie]")).toEqual([1, 0, ""]);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "admin-page.png"), fullPage: true });
    // Only the refused wrong token is an error.
    expect(errors.filter((e) => !e.includes("401"))).toEqual([]);
    await page.close();
  }, 60_000);
});
