// ESLint flat config: the recommended rules for JavaScript and TypeScript, and the layer rule of
// the hexagon (docs/adr/0001-hexagonal-architecture.md), checked on every `npm run lint`.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // bench-results/: bench output, and the bench's build of v1 (scripts/bench/baseline.ts).
  { ignores: ["dist/**", "node_modules/**", "examples/node_modules/**", "test-artifacts/**", "coverage/**", "bench-results/**"] },
  { ignores: ["clients/typescript/dist/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "no-constant-condition": ["error", { checkLoops: false }],
      // A `let` captured by a closure before its one assignment (readiness checks in the composition root).
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Plain Node scripts (the README's Quickstart): Node's globals.
    files: ["**/*.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
  {
    // Tests and scripts read untyped JSON from the wire on purpose.
    files: ["test/**/*.ts", "scripts/**/*.ts", "clients/typescript/test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    // The domain: timer rules in plain TypeScript, nothing but other domain files and Node built-ins.
    files: ["src/domain/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!\\./|node:)", message: "the domain imports only other domain files (./x.js) and node: built-ins" }] },
      ],
    },
  },
  {
    // The application: use cases and their ports; it may use the domain and zod (the one validation
    // library of the command rules), never an adapter or the composition root.
    files: ["src/app/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { regex: "(^|/)adapters/", message: "the application depends on ports, not on adapters" },
            {
              regex: "(^|/)(composition|config)/|(^|/)main\\.js$",
              message: "the application does not know the composition root or its configuration",
            },
            { regex: "^(?!\\.|node:|zod$)", message: "the application imports only the domain, its own files, node: built-ins and zod" },
          ],
        },
      ],
    },
  },
  {
    // Configuration is parsed at start-up from the environment alone: it knows no adapter (the
    // arrows point from the composition root and the adapters to it, never from it up).
    files: ["src/config/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "(^|/)(adapters|composition|app)/|(^|/)main\\.js$",
              message: "src/config imports only its own files, the domain and node: built-ins",
            },
          ],
        },
      ],
    },
  },
  {
    // The service's CLI keeps the server-side commands (start, export, import, backup); what a
    // producer or operator sends over NATS is timer-client's, one implementation of the formats.
    files: ["src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^@nats-io/(jetstream|services)$",
              message: "commands and queries over NATS belong to timer-client (clients/typescript)",
            },
          ],
        },
      ],
    },
  },
  {
    // The client is its own package: bundled schemas, nothing of the service's code, only @nats-io/* at run time.
    files: ["clients/typescript/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!\\./|@nats-io/)", message: "the client imports only its own files (./x.js) and @nats-io/*" }] },
      ],
    },
  },
  {
    // Its command-line tool runs only on Node: Node's own modules too, still no package beyond @nats-io/*.
    files: ["clients/typescript/src/cli.ts", "clients/typescript/src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(?!\\./|\\.\\./(?!\\.\\./)|@nats-io/|node:)",
              message: "the client's CLI imports its own files (./x.js, ../x.js), node:* and @nats-io/*",
            },
          ],
        },
      ],
    },
  },
  {
    // An adapter implements ports; it never reaches into another technology's adapter.
    files: ["src/adapters/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "(^|/)composition/|(^|/)main\\.js$", message: "adapters do not import the composition root" }] },
      ],
    },
  },
);
