import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/**
 * A worker thread running the module next to `compiled` (`x.worker.js` in dist/), or its TypeScript
 * source `x.worker.ts` through tsx where the service runs from sources (tests, scripts).
 */
export function startModuleWorker(compiled: URL, workerData?: unknown): Worker {
  if (existsSync(fileURLToPath(compiled))) return new Worker(fileURLToPath(compiled), { workerData });
  const source = new URL(compiled.href.replace(/\.js$/, ".ts"));
  const boot = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(source.href)}); })`;
  return new Worker(boot, { eval: true, workerData });
}
