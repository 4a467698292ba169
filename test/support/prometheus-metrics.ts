/**
 * The one reader of the service's /metrics for tests and bench (Prometheus text format): every sample keyed as
 * `name{label="value",…}` with the labels sorted, so a series can be named in any label order.
 */

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function key(name: string, labelText: string | undefined): string {
  const labels = [...(labelText ?? "").matchAll(LABEL)].map(([, label, value]) => `${label}="${value}"`).sort();
  return labels.length === 0 ? name : `${name}{${labels.join(",")}}`;
}

/** A sample's value; the exposition spells infinities `+Inf` and `-Inf`. */
function sampleValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

/**
 * Every sample of a /metrics text. Shared with `npm run bench` (scripts/bench/harness/prometheus.ts),
 * so tests and bench read the exposition the same way.
 */
export function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (match !== null) samples.set(key(match[1]!, match[2]), sampleValue(match[3]!));
  }
  return samples;
}

/** A series written as in the exposition (`name{a="1",b="2"}`, any label order) as parseMetrics keys it. */
export function normalizeSeries(series: string): string {
  const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/.exec(series.trim());
  return match === null ? series : key(match[1]!, match[2]);
}

/** One sample's key from a name and labels. */
export function series(name: string, labels: Record<string, string> = {}): string {
  return key(
    name,
    Object.entries(labels)
      .map(([label, value]) => `${label}="${value}"`)
      .join(","),
  );
}

/** Every sample of the service at `baseUrl`. */
export async function scrapeMetrics(baseUrl: string): Promise<Map<string, number>> {
  return parseMetrics(await (await fetch(`${baseUrl}/metrics`)).text());
}
