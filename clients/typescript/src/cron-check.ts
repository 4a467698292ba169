/**
 * The service's check of a recurrence's cron rule and time zone (its CronerCalendar.problem: an
 * IANA zone Intl knows, at most 256 characters, exactly 5 fields, then croner's 5-part pattern
 * parser), so that the client refuses what the service would reject before anything is sent. The
 * parser is a port of croner's (the service's dependency; the client may depend only on @nats-io/*);
 * test/cron-check.test.ts holds the two to the same answers on a corpus.
 */

const MAX_CRON_LENGTH = 256;
const FIELDS = ["minute", "hour", "day", "month", "dayOfWeek"] as const;
type Field = (typeof FIELDS)[number];
/** Values per field, and the offset croner adds (day and month count from 1). */
const SIZE: Record<Field, number> = { minute: 60, hour: 24, day: 31, month: 12, dayOfWeek: 7 };
const OFFSET: Record<Field, number> = { minute: 0, hour: 0, day: -1, month: -1, dayOfWeek: 0 };

class PatternError extends Error {}
const fail = (message: string): never => {
  throw new PatternError(message);
};

/** The problem with the pair, as the service words it (`field` names the member), or undefined when valid. */
export function cronProblem(cron: string, timezone: string): { field: "cron" | "timezone"; reason: string } | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    return { field: "timezone", reason: `"${timezone}" is not an IANA time zone` };
  }
  if (cron.length > MAX_CRON_LENGTH) return { field: "cron", reason: `longer than ${MAX_CRON_LENGTH} characters` };
  if (cron.trim().split(/\s+/).length !== 5) return { field: "cron", reason: "needs 5 fields: minute hour day-of-month month day-of-week" };
  try {
    parsePattern(cron);
  } catch (error) {
    if (error instanceof PatternError) return { field: "cron", reason: error.message };
    throw error;
  }
  return undefined;
}

function parsePattern(pattern: string): void {
  const parts = pattern.match(/\S+/g) ?? [""];
  let [minute, hour, day, month, dayOfWeek] = parts as [string, string, string, string, string];
  let lastDay = false;
  let lastWeekday = false;
  if (day.toUpperCase() === "LW") {
    lastWeekday = true;
    day = "";
  } else if (day.toUpperCase().includes("L")) {
    day = day.replace(/L/gi, "");
    lastDay = true;
  }
  if (month.length >= 3) month = replaceMonthNames(month);
  if (dayOfWeek.length >= 3) dayOfWeek = replaceDayNames(dayOfWeek);
  if (dayOfWeek.startsWith("+")) {
    dayOfWeek = dayOfWeek.slice(1);
    if (dayOfWeek === "") fail("Day-of-week field cannot be empty after '+' modifier.");
  }
  if (pattern.includes("?"))
    [minute, hour, day, month, dayOfWeek] = [minute, hour, day, month, dayOfWeek].map((p) => p.replace(/\?/g, "*")) as [
      string,
      string,
      string,
      string,
      string,
    ];
  const entries = ["0", minute, hour, day, month, dayOfWeek];
  entries.forEach((entry, i) => {
    const illegal = i === 3 ? /[^/*0-9,WwLl-]+/ : i === 5 ? /[^/*0-9,#Ll-]+/ : /[^/*0-9,-]+/;
    if (illegal.test(entry)) fail(`configuration entry ${i} (${entry}) contains illegal characters.`);
  });
  const values: Record<Field, string> = { minute, hour, day, month, dayOfWeek };
  for (const field of FIELDS) part(field, values[field], field === "day" && (lastDay || lastWeekday));
}

function part(field: Field, text: string, lastModifier: boolean): void {
  if (text === "" && !lastModifier) fail(`configuration entry ${field} (${text}) is empty, check for trailing spaces.`);
  if (text === "*") return;
  const items = text.split(",");
  if (items.length > 1) {
    for (const item of items) part(field, item, lastModifier);
    return;
  }
  if (text.includes("-") && text.includes("/")) rangeWithStep(field, text);
  else if (text.includes("-")) range(field, text);
  else if (text.includes("/")) step(field, text);
  else if (text !== "") single(field, text);
}

/** The value and its nth-weekday modifier (`#n` or `L`, day-of-week only). */
function extractNth(text: string, field: Field): [string, string | undefined] {
  if (text.includes("#")) {
    if (field !== "dayOfWeek") fail("nth (#) only allowed in day-of-week field");
    return [text.split("#")[0]!, text.split("#")[1]];
  }
  if (text.toUpperCase().endsWith("L")) {
    if (field !== "dayOfWeek") fail("L modifier only allowed in day-of-week field (use L alone for day-of-month)");
    return [text.slice(0, -1), "L"];
  }
  return [text, undefined];
}

function single(field: Field, text: string): void {
  const [value, nth] = extractNth(text, field);
  const nearestWeekday = text.toUpperCase().includes("W");
  if (field !== "day" && nearestWeekday) fail("Nearest weekday modifier (W) only allowed in day-of-month.");
  const n = parseInt(value, 10) + OFFSET[field];
  if (Number.isNaN(n)) fail(`${nearestWeekday ? "nearestWeekdays" : field} is not a number: '${text}'`);
  setPart(nearestWeekday ? "nearestWeekdays" : field, n, nth);
}

function range(field: Field, text: string): void {
  if (text.toUpperCase().includes("W")) fail("Syntax error, W is not allowed in a range.");
  const [value, nth] = extractNth(text, field);
  const bounds = value.split("-");
  if (bounds.length !== 2) fail(`Syntax error, illegal range: '${text}'`);
  const from = parseInt(bounds[0]!, 10) + OFFSET[field];
  const to = parseInt(bounds[1]!, 10) + OFFSET[field];
  if (Number.isNaN(from)) fail("Syntax error, illegal lower range (NaN)");
  if (Number.isNaN(to)) fail("Syntax error, illegal upper range (NaN)");
  checkRange(field, from, to, undefined, text);
  for (let v = from; v <= to; v++) setPart(field, v, nth);
}

function rangeWithStep(field: Field, text: string): void {
  if (text.toUpperCase().includes("W")) fail("Syntax error, W is not allowed in ranges with stepping.");
  const [value, nth] = extractNth(text, field);
  const match = /^(\d+)-(\d+)\/(\d+)$/.exec(value);
  if (match === null) return fail(`Syntax error, illegal range with stepping: '${text}'`);
  const from = parseInt(match[1]!, 10) + OFFSET[field];
  const to = parseInt(match[2]!, 10) + OFFSET[field];
  const by = parseInt(match[3]!, 10);
  checkRange(field, from, to, by, text);
  for (let v = from; v <= to; v += by) setPart(field, v, nth);
}

function step(field: Field, text: string): void {
  if (text.toUpperCase().includes("W")) fail("Syntax error, W is not allowed in parts with stepping.");
  const [value, nth] = extractNth(text, field);
  const pieces = value.split("/");
  if (pieces.length !== 2) fail(`Syntax error, illegal stepping: '${text}'`);
  if (pieces[0] === "")
    fail(`Syntax error, stepping with missing prefix ('${text}') is not allowed. Use wildcard (*/step) or range (min-max/step) instead.`);
  if (pieces[0] !== "*")
    fail(`Syntax error, stepping with numeric prefix ('${text}') is not allowed. Use wildcard (*/step) or range (min-max/step) instead.`);
  const by = parseInt(pieces[1]!, 10);
  if (Number.isNaN(by)) fail("Syntax error, illegal stepping: (NaN)");
  checkRange(field, 0, SIZE[field] - 1, by, text);
  for (let v = 0; v < SIZE[field]; v += by) setPart(field, v, nth);
}

function checkRange(field: Field, from: number, to: number, by: number | undefined, text: string): void {
  if (from > to) fail(`From value is larger than to value: '${text}'`);
  if (by === undefined) return;
  if (by === 0) fail("Syntax error, illegal stepping: 0");
  if (by > SIZE[field]) fail(`Syntax error, steps cannot be greater than maximum value of part (${SIZE[field]})`);
}

function setPart(field: Field | "nearestWeekdays", value: number, nth: string | undefined): void {
  if (field === "dayOfWeek") {
    const day = value === 7 ? 0 : value;
    if (day < 0 || day > 6) fail(`Invalid value for dayOfWeek: ${day}`);
    // croner falls back to "every" for a missing or empty nth (`1#`).
    if (nth === undefined || nth === "" || nth.toUpperCase() === "L") return;
    const n = Number(nth);
    if (!(n < 6 && n > 0)) fail(`nth weekday out of range, should be 1-5 or L. Value: ${nth}, Type: string`);
    return;
  }
  const size = field === "nearestWeekdays" ? 31 : SIZE[field];
  if (value < 0 || value >= size) fail(`Invalid value for ${field}: ${value}`);
}

function replaceDayNames(text: string): string {
  return text
    .replace(/-sun/gi, "-7")
    .replace(/sun/gi, "0")
    .replace(/mon/gi, "1")
    .replace(/tue/gi, "2")
    .replace(/wed/gi, "3")
    .replace(/thu/gi, "4")
    .replace(/fri/gi, "5")
    .replace(/sat/gi, "6");
}

function replaceMonthNames(text: string): string {
  const names = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
  return names.reduce((t, name, i) => t.replace(new RegExp(name, "gi"), String(i + 1)), text);
}
