# timer-service image: build with the dev toolchain, run with production dependencies only.
#   docker build -t timer-service .
#   docker run -e TIMER_BROKER_URL=nats://nats:4222 -p 8080:8080 -v timer-data:/data timer-service

# Node.js 26 is the Active LTS line (since 2026-10-28, "Lithium"; supported until 2029-04-30); the
# official image's default Debian for it is 13 "trixie". better-sqlite3 12.10+ lists 26.x in its
# engines and ships Node 26 prebuilt binaries (linux x64/arm64, glibc). CI tests on Node 20.
# Override with --build-arg NODE_MAJOR=24 for the previous LTS line.
ARG NODE_MAJOR=26

# ---- build: compile better-sqlite3 if no prebuilt binary fits, tsc into dist/ ----
FROM node:${NODE_MAJOR}-trixie-slim AS builder
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
# The client is an npm workspace: `npm ci` links it and its timer-client command (bin/), the build compiles it first.
COPY clients/typescript/package.json clients/typescript/tsconfig.build.json ./clients/typescript/
COPY clients/typescript/bin ./clients/typescript/bin
COPY clients/typescript/src ./clients/typescript/src
COPY src ./src
# `npm ci` also runs the `prepare` script (the client, then tsc -p tsconfig.build.json), so src must be here.
RUN npm ci \
 && npm prune --omit=dev \
 && npm cache clean --force

# ---- runtime ----
FROM node:${NODE_MAJOR}-trixie-slim AS runtime
ENV NODE_ENV=production \
    TIMER_DB_PATH=/data/timer.db \
    TIMER_HTTP_HOST=0.0.0.0 \
    TIMER_HTTP_PORT=8080
WORKDIR /app
# The image's `node` user (uid 1000) runs the service; /data must belong to it before VOLUME,
# so a fresh named volume is created with that owner.
RUN mkdir -p /data && chown node:node /data
COPY --from=builder --chown=root:root /app/node_modules ./node_modules
COPY --from=builder --chown=root:root /app/dist ./dist
# node_modules/@timer-service/client links here; `npx timer-client` in the image runs bin/ (its
# @nats-io/* resolve from /app/node_modules when the client has no copies of its own).
COPY --from=builder --chown=root:root /app/clients/typescript/package.json ./clients/typescript/
COPY --from=builder --chown=root:root /app/clients/typescript/bin ./clients/typescript/bin
COPY --from=builder --chown=root:root /app/clients/typescript/dist ./clients/typescript/dist
COPY --chown=root:root drizzle ./drizzle
COPY --chown=root:root asyncapi.yaml ./
COPY --chown=root:root schemas ./schemas
COPY --chown=root:root package.json ./
USER node
VOLUME ["/data"]
EXPOSE 8080
# No curl in the slim image: node's own fetch. Follows TIMER_HTTP_PORT if it is overridden.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TIMER_HTTP_PORT || '8080') + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 (not npm, not a shell), so SIGTERM from `docker stop` reaches the service's handler.
CMD ["node", "dist/main.js"]
