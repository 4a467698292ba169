const SECOND_MS = 1_000;
const DAY_MS = 86_400_000;
/**
 * Offsets are sampled weekly and every change found is narrowed to its second. Zones change offset
 * at most twice within months (the shortest known there-and-back, Morocco's Ramadan hour, lasts
 * about a month), so a week between samples misses none.
 */
const SAMPLE_MS = 7 * DAY_MS;
/** The table is built a chunk of 52 sampled weeks at a time, as far as it is asked for. */
const CHUNK_MS = 52 * SAMPLE_MS;
/** Chunks kept over all zones; past this many the table starts over. */
const MAX_CHUNKS = 100_000;

/** A stretch of time during which a zone keeps one UTC offset. */
export interface OffsetSpan {
  readonly startMs: number;
  /** The first instant after the span (a change of offset, or where the table's chunk ends). */
  readonly endMs: number;
  readonly offsetMs: number;
  /** The offset just before `startMs`: larger means the span starts by repeating wall-clock times (fall back). */
  readonly previousOffsetMs: number;
  /** The offset from `endMs` on: larger means wall-clock times between the two do not exist (spring forward). */
  readonly nextOffsetMs: number;
}

interface Change {
  readonly atMs: number;
  readonly offsetMs: number;
}

interface Chunk {
  readonly startMs: number;
  readonly endMs: number;
  readonly offsetBeforeMs: number;
  readonly startOffsetMs: number;
  readonly endOffsetMs: number;
  /** Changes of offset strictly inside (startMs, endMs), in time order. */
  readonly changes: readonly Change[];
}

/**
 * The UTC offsets of IANA zones over time, read from the runtime's time-zone data (Intl) once per
 * zone and stretch of time, so that wall-clock arithmetic becomes plain addition within a span.
 * Offsets may have seconds (local mean time before standard time).
 */
export class ZoneOffsets {
  readonly #chunks = new Map<string, Chunk>();
  readonly #formats = new Map<string, Intl.DateTimeFormat>();

  /** The span of `timezone` that contains `ms`. */
  spanAt(timezone: string, ms: number): OffsetSpan {
    const chunk = this.#chunk(timezone, Math.floor(ms / CHUNK_MS));
    const { changes } = chunk;
    let index = -1;
    for (let i = 0; i < changes.length && changes[i]!.atMs <= ms; i++) index = i;
    const start = index >= 0 ? changes[index]! : undefined;
    const next = changes[index + 1];
    return {
      startMs: start?.atMs ?? chunk.startMs,
      endMs: next?.atMs ?? chunk.endMs,
      offsetMs: start?.offsetMs ?? chunk.startOffsetMs,
      previousOffsetMs: start === undefined ? chunk.offsetBeforeMs : index > 0 ? changes[index - 1]!.offsetMs : chunk.startOffsetMs,
      nextOffsetMs: next?.offsetMs ?? chunk.endOffsetMs,
    };
  }

  #chunk(timezone: string, index: number): Chunk {
    const key = `${timezone}\u0000${index}`;
    let chunk = this.#chunks.get(key);
    if (chunk === undefined) {
      if (this.#chunks.size >= MAX_CHUNKS) this.#chunks.clear();
      chunk = this.#build(timezone, index * CHUNK_MS);
      this.#chunks.set(key, chunk);
    }
    return chunk;
  }

  #build(timezone: string, startMs: number): Chunk {
    const endMs = startMs + CHUNK_MS;
    const changes: Change[] = [];
    let atMs = startMs;
    let offsetMs = this.offsetAt(timezone, startMs);
    const startOffsetMs = offsetMs;
    while (atMs < endMs) {
      const sampleMs = Math.min(atMs + SAMPLE_MS, endMs);
      const sampleOffsetMs = this.offsetAt(timezone, sampleMs);
      if (sampleOffsetMs === offsetMs) {
        atMs = sampleMs;
        continue;
      }
      // Narrow the first change after atMs to its second; a second change before the sample is found next round.
      let low = atMs / SECOND_MS;
      let high = sampleMs / SECOND_MS;
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2);
        if (this.offsetAt(timezone, middle * SECOND_MS) === offsetMs) low = middle;
        else high = middle;
      }
      atMs = high * SECOND_MS;
      offsetMs = this.offsetAt(timezone, atMs);
      if (atMs < endMs) changes.push({ atMs, offsetMs });
    }
    return {
      startMs,
      endMs,
      offsetBeforeMs: this.offsetAt(timezone, startMs - SECOND_MS),
      startOffsetMs,
      endOffsetMs: this.offsetAt(timezone, endMs),
      changes,
    };
  }

  /** The zone's UTC offset at `ms`, to the second. */
  offsetAt(timezone: string, ms: number): number {
    let format = this.#formats.get(timezone);
    if (format === undefined) {
      format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" });
      this.#formats.set(timezone, format);
    }
    const name = format.formatToParts(ms).find((part) => part.type === "timeZoneName")?.value ?? "GMT";
    const m = /GMT([+-])(\d{2}):?(\d{2})?(?::(\d{2}))?/.exec(name);
    if (m === null) return 0;
    const seconds = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
    return (m[1] === "-" ? -1 : 1) * seconds * SECOND_MS;
  }
}
