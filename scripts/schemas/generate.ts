import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { contractFiles, REPO_ROOT } from "./contract-files.js";

/** `npm run schemas:generate`: writes schemas/, asyncapi.yaml and the client's bundled schemas. */
for (const [path, text] of await contractFiles()) {
  const target = resolve(REPO_ROOT, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
  console.log(`wrote ${path}`);
}
