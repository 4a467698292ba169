const UNIT_MS: ReadonlyMap<string, number> = new Map(
  (
    [
      [1, ["ms", "msec", "msecs", "millisecond", "milliseconds"]],
      [1_000, ["s", "sec", "secs", "second", "seconds"]],
      [60_000, ["m", "min", "mins", "minute", "minutes"]],
      [3_600_000, ["h", "hr", "hrs", "hour", "hours"]],
      [86_400_000, ["d", "day", "days"]],
      [604_800_000, ["w", "wk", "wks", "week", "weeks"]],
    ] as const
  ).flatMap(([ms, names]) => names.map((name) => [name, ms] as const)),
);

// One "<number><unit>" part, optionally after a separator: spaces, a comma or "and".
const DURATION_PART = /\s*(?:(?:,|and\b)\s*)?(\d+(?:\.\d+)?)\s*([a-z]+)/y;

/**
 * Parses a duration into milliseconds: `10s`, `10 seconds`, `5 minutes`, `1h30m`, `1 hour and 30
 * minutes`, `2 days`, `250ms`, `1.5h`. Every number needs a unit; anything else gives undefined.
 */
export function parseDuration(text: string): number | undefined {
  const source = text.trim().toLowerCase();
  if (source === "") return undefined;
  DURATION_PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = DURATION_PART.exec(source); match !== null; match = DURATION_PART.exec(source)) {
    const unitMs = UNIT_MS.get(match[2]!);
    if (unitMs === undefined) return undefined;
    total += Number(match[1]) * unitMs;
    consumed = DURATION_PART.lastIndex;
  }
  return consumed === source.length ? Math.round(total) : undefined;
}

/** Flags whose value is a duration, which may be given as several argv words. */
const DURATION_FLAGS = ["--in", "--every", "--max-lateness"] as const;

/**
 * Lets `--in` (and `--every`, `--max-lateness`) take several argv words (`--in 10 seconds`, `--in 1
 * hour 30 minutes`): the words that follow its value are joined to it as long as the longest such
 * run still reads as a duration. Other arguments are returned unchanged; nothing after `--` is touched.
 */
export function joinDurationWords(argv: readonly string[]): string[] {
  const result: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") return [...result, ...argv.slice(i)];
    const flag = DURATION_FLAGS.find((name) => arg === name || arg.startsWith(`${name}=`));
    if (flag === undefined) {
      result.push(arg);
      continue;
    }
    const inline = arg !== flag;
    const valueAt = inline ? i : i + 1;
    const first = inline ? arg.slice(flag.length + 1) : argv[valueAt];
    if (first === undefined) {
      result.push(arg);
      continue;
    }
    let value = first;
    let last = valueAt;
    let candidate = first;
    for (let j = valueAt + 1; j < argv.length && !argv[j]!.startsWith("-"); j++) {
      candidate = `${candidate} ${argv[j]!}`;
      if (parseDuration(candidate) !== undefined) {
        value = candidate;
        last = j;
      }
    }
    result.push(flag, value);
    i = last;
  }
  return result;
}

const READABLE_UNITS = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
] as const;

/** A short human form of a duration, at most two units: `3d 4h`, `2m 5s`, `450ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of READABLE_UNITS) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    } else if (parts.length > 0) {
      break;
    }
  }
  return parts.join(" ");
}
