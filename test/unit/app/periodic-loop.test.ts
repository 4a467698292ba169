import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PeriodicLoop } from "../../../src/app/periodic-loop.js";
import { dateClock, T0 } from "../../support/fakes/fake-clock.js";

const realSetImmediate = globalThis.setImmediate;
const flush = () => new Promise<void>((resolve) => realSetImmediate(resolve));

/** Lets fake time pass by `ms`, running the loop's timers and promise chains on the way. */
async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  await flush();
}

describe("PeriodicLoop", () => {
  const loops: PeriodicLoop[] = [];
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(async () => {
    const stopping = Promise.all(loops.splice(0).map((loop) => loop.stop()));
    await advance(1_000); // runs in hand finish on fake time
    await stopping;
    vi.useRealTimers();
  });
  const started = (loop: PeriodicLoop): PeriodicLoop => {
    loops.push(loop);
    loop.start();
    return loop;
  };

  it("when started, then the task runs after one period and every period after it; immediately runs it at once", async () => {
    const runs: number[] = [];
    const atOnce: number[] = [];
    started(new PeriodicLoop(dateClock, 1_000, () => void runs.push(Date.now() - T0)));
    started(new PeriodicLoop(dateClock, 1_000, () => void atOnce.push(Date.now() - T0), { immediately: true }));
    await flush();
    expect([runs, atOnce]).toEqual([[], [0]]);
    await advance(3_000);
    expect(runs).toEqual([1_000, 2_000, 3_000]);
    expect(atOnce).toEqual([0, 1_000, 2_000, 3_000]);
  });

  it("when a run is slow, then the next starts one period after it ended, never beside it", async () => {
    let inFlight = 0;
    let most = 0;
    const starts: number[] = [];
    started(
      new PeriodicLoop(dateClock, 100, async () => {
        starts.push(Date.now() - T0);
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 250));
        inFlight--;
      }),
    );
    await advance(1_000);
    expect(most).toBe(1);
    expect(starts).toEqual([100, 450, 800]);
  });

  it("when a run throws, then onError gets the error and the loop goes on", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    started(
      new PeriodicLoop(
        dateClock,
        100,
        () => {
          runs++;
          if (runs === 1) throw new Error("first run fails");
        },
        { onError: (error) => errors.push(error) },
      ),
    );
    await advance(300);
    expect(runs).toBe(3);
    expect(errors).toEqual([new Error("first run fails")]);
  });

  it("when stopped, then no run comes after; a run in hand finishes before stop resolves", async () => {
    let finished = 0;
    const loop = started(
      new PeriodicLoop(dateClock, 100, async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        finished++;
      }),
    );
    await advance(120); // the first run is in hand
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    await advance(50);
    await stopping;
    expect(finished).toBe(1);
    await advance(1_000);
    expect(finished).toBe(1);
  });

  it("when started again while its stop is still ending, then one loop runs on after the run in hand, a period later, never two", async () => {
    let inFlight = 0;
    let most = 0;
    const starts: number[] = [];
    const loop = started(
      new PeriodicLoop(dateClock, 100, async () => {
        starts.push(Date.now() - T0);
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 50));
        inFlight--;
      }),
    );
    await advance(120); // the first run is in hand (100 → 150)
    const stopping = loop.stop();
    loop.start();
    await advance(30); // the run in hand ends at 150; the new one waits its period
    await stopping;
    await advance(500);
    expect(most).toBe(1);
    expect(starts).toEqual([100, 250, 400, 550]);
  });
});
