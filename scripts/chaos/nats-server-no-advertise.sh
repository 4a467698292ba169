#!/bin/sh
# nats-server that does not tell clients about the other cluster nodes: each service instance then
# reaches the cluster only through the proxies it was given, so cutting those cuts it off.
exec "${CHAOS_NATS_SERVER_BIN:-nats-server}" "$@" --no_advertise
