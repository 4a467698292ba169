/**
 * The client's cron and time-zone check gives the service's answers (CronerCalendar.problem): same
 * field, same reason, on a hand-picked corpus and on random patterns built from cron's own tokens.
 */
import { describe, expect, it } from "vitest";
import { CronerCalendar } from "../../../src/adapters/cron/croner-calendar.js";
import { cronProblem } from "../src/cron-check.js";

const calendar = new CronerCalendar();

const CORPUS = [
  "0 9 * * *",
  "*/15 * * * *",
  "0 0 1 1 *",
  "30 2 * * 0",
  "0 0 31W 2 *",
  "0 0 L * *",
  "0 0 LW * *",
  "0 0 15W * *",
  "0 0 * * 5L",
  "0 0 * * 1#2",
  "0 0 * * 1#",
  "0 0 * * 1#6",
  "0 0 * * 1#L",
  "0 0 * * MON-FRI",
  "0 0 * JAN-MAR *",
  "0 0 * * sun",
  "0 0 * * 7",
  "0 0 * * 8",
  "0 0 * * 5-7",
  "0 0 * * -sun",
  "0 0 * * +1",
  "0 0 * * +",
  "0 0 ? * ?",
  "60 * * * *",
  "* 24 * * *",
  "* * 0 * *",
  "* * 32 * *",
  "* * * 0 *",
  "* * * 13 *",
  "1-5/2 * * * *",
  "5-1 * * * *",
  "*/0 * * * *",
  "*/61 * * * *",
  "*/60 * * * *",
  "5/2 * * * *",
  "/5 * * * *",
  "1-2-3 * * * *",
  "1,,2 * * * *",
  "1, * * * *",
  "a * * * *",
  "every monday",
  "@daily",
  "0 0 * * * *",
  "0 0 * *",
  "",
  " ",
  "0 0 1W-5 * *",
  "0 0 */2W * *",
  "0 0 1-5/2W * *",
  "0 0 * * 1W",
  "0 0 5L * *",
  "1#2 * * * *",
  "0 0 * * 1-3#2",
  "0 0 * * */2#3",
  "0 0 * * 1/2",
  "0 0 * * */8",
  "0 0 * * */7",
  "0 0 * * 0-7/2",
  "00 09 * * *",
  "0 0 L-2 * *",
  "0 0 1L * *",
  "0 0 W * *",
  "1-60 * * * *",
  "0-23/24 * * * *",
  "0 0 * * 1#0",
  "x".repeat(257),
];
const ZONES = ["UTC", "Europe/Berlin", "America/Santiago", "Mars/Olympus", "", "utc", "Etc/GMT+5", "+01:00"];

describe("cronProblem", () => {
  it("when a cron rule of the corpus is checked, then the client answers as the service does", () => {
    for (const cron of CORPUS) expect(cronProblem(cron, "UTC"), cron).toEqual(calendar.problem(cron, "UTC"));
  });

  it("when a time zone is checked, then the client answers as the service does", () => {
    for (const zone of ZONES) expect(cronProblem("0 9 * * *", zone), zone).toEqual(calendar.problem("0 9 * * *", zone));
  });

  it("when 5,000 random patterns of cron tokens are checked, then the client answers as the service does", () => {
    const tokens = ["*", "?", "0", "1", "5", "7", "12", "23", "31", "59", "60", "-", "/", ",", "#", "L", "W", "MON", "jan", "+", "2"];
    let seed = 36;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const field = () => Array.from({ length: 1 + random(3) }, () => tokens[random(tokens.length)]).join("");
    for (let i = 0; i < 5_000; i++) {
      const cron = Array.from({ length: 5 }, field).join(" ");
      expect(cronProblem(cron, "UTC"), cron).toEqual(calendar.problem(cron, "UTC"));
    }
  });
});
