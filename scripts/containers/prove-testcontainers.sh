#!/usr/bin/env bash
# Proves the testcontainers path of the test infrastructure provider (docs/adr/0007) on a machine
# without Docker and without any image registry: Debian's podman serves the Docker API on a unix
# socket, the images are built locally from a debootstrapped Debian 12 with Debian's nats-server and
# postgresql-15, and a chosen set of tests runs with TEST_CONTAINERS=1 against that socket.
#
#   sudo scripts/containers/prove-testcontainers.sh                 # build what is missing, run the default tests
#   sudo scripts/containers/prove-testcontainers.sh test/fault/broker-outage.test.ts   # other tests
#   sudo scripts/containers/prove-testcontainers.sh --build-only    # only the images
#   sudo scripts/containers/prove-testcontainers.sh --rebuild       # debootstrap and build again
#
# Needs root (rootful podman, debootstrap) and a Debian 12 host whose apt can reach a Debian mirror.
# Environment: WORK_DIR (default /var/tmp/timer-service-containers), DEBIAN_MIRROR (default: the
# mirror of this machine's apt sources), PODMAN_SOCKET (default /run/podman/podman.sock);
# TIMER_TEST_CONTAINER_NETWORK=host runs the containers on the host network instead of published ports.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO_ROOT/scripts/containers"
WORK_DIR="${WORK_DIR:-/var/tmp/timer-service-containers}"
PODMAN_SOCKET="${PODMAN_SOCKET:-/run/podman/podman.sock}"
BASE_IMAGE="localhost/timer-test-debian:bookworm"
NATS_IMAGE="${TIMER_TEST_NATS_IMAGE:-localhost/timer-test-nats:debian12}"
POSTGRES_IMAGE="${TIMER_TEST_POSTGRES_IMAGE:-localhost/timer-test-postgres:debian12}"
LABEL="org.timer-service.test"
DEFAULT_TESTS=(
  test/integration/schedule-and-fire.test.ts
  test/integration/jetstream-unavailable.test.ts
  test/fault/broker-outage.test.ts
  test/security/broker-credentials.test.ts
  test/ops/tenant-permissions.test.ts
  test/contract/postgres-timer-store.test.ts
  test/contract/postgres-concurrency.test.ts
  test/support/test-infrastructure.test.ts
)

BUILD_ONLY=0
REBUILD=0
TESTS=()
for arg in "$@"; do
  case "$arg" in
    --build-only) BUILD_ONLY=1 ;;
    --rebuild) REBUILD=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) TESTS+=("$arg") ;;
  esac
done
[ ${#TESTS[@]} -gt 0 ] || TESTS=("${DEFAULT_TESTS[@]}")

log() { printf '\n== %s  [%ss]\n' "$*" "$SECONDS"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (rootful podman and debootstrap)"
mkdir -p "$WORK_DIR"

# --- 1. podman, debootstrap, runc -------------------------------------------------------------
# runc, not Debian 12's default crun 1.8: crun refuses hosts whose cgroups are "hybrid" with a
# controller on the v2 hierarchy ("cgroups in hybrid mode not supported, drop all controllers from
# cgroupv2"); runc runs there and everywhere else.
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v runc >/dev/null || missing+=(runc)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
podman --version

# Podman's settings for this run only (CONTAINERS_CONF; the machine's /etc/containers is untouched):
# - runtime runc (see above); cgroupfs and file events, since there is no systemd;
# - ulimits no higher than this process's own: without CAP_SYS_RESOURCE (a sandbox) podman's
#   defaults (nofile=1048576, nproc=max) make runc fail with "error setting rlimit type 7/6:
#   operation not permitted".
nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] && nofile=1048576
nproc="$(ulimit -Hu)"; [ "$nproc" = unlimited ] && nproc=4096
[ "$nproc" -gt 4096 ] && nproc=4096
export CONTAINERS_CONF="$WORK_DIR/containers.conf"
cat > "$CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}} cgroups {{.Host.CgroupsVersion}}' \
  || die "podman info failed; see the ADR for the settings this script needs"

# --- 2. the Docker-compatible socket -----------------------------------------------------------
SERVICE_PID=""
cleanup() {
  local ids
  ids="$(podman ps -aq --filter "label=$LABEL" 2>/dev/null || true)"
  if [ -n "$ids" ]; then
    echo "removing $(echo "$ids" | wc -l) leftover test container(s)"
    # shellcheck disable=SC2086
    podman rm -f $ids >/dev/null 2>&1 || true
  fi
  if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

ping_socket() { curl -sf --unix-socket "$PODMAN_SOCKET" http://d/_ping >/dev/null 2>&1; }
if ! ping_socket; then
  log "podman system service on unix://$PODMAN_SOCKET"
  mkdir -p "$(dirname "$PODMAN_SOCKET")"
  podman system service --time=0 "unix://$PODMAN_SOCKET" > "$WORK_DIR/podman-service.log" 2>&1 &
  SERVICE_PID=$!
  for _ in $(seq 1 100); do ping_socket && break; sleep 0.1; done
  ping_socket || die "the podman socket did not answer; see $WORK_DIR/podman-service.log"
else
  echo "a podman/docker API already answers on $PODMAN_SOCKET (its settings are its own)"
fi
curl -s --unix-socket "$PODMAN_SOCKET" http://d/version | head -c 300; echo

# --- 3. images ---------------------------------------------------------------------------------
# The mirror apt uses here (deb822 .sources or one-line .list).
debian_mirror() {
  local uri
  uri="$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1)"
  [ -n "$uri" ] || uri="$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -E ' bookworm( |$)' | awk '{print $2}' | head -1)"
  echo "${uri:-http://deb.debian.org/debian}"
}
MIRROR="${DEBIAN_MIRROR:-$(debian_mirror)}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-$(grep -hsE '^URIs:.*security' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -1)}"
SECURITY_MIRROR="${SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

if [ "$REBUILD" = 1 ]; then
  podman rmi -f "$NATS_IMAGE" "$POSTGRES_IMAGE" "$BASE_IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK_DIR/rootfs-bookworm"
fi

if ! podman image exists "$BASE_IMAGE"; then
  ROOTFS="$WORK_DIR/rootfs-bookworm"
  if [ ! -x "$ROOTFS/usr/bin/apt-get" ]; then
    log "debootstrap --variant=minbase bookworm from $MIRROR"
    rm -rf "$ROOTFS"
    debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" > "$WORK_DIR/debootstrap.log" 2>&1 \
      || { tail -20 "$WORK_DIR/debootstrap.log"; die "debootstrap failed"; }
  fi
  cat > "$ROOTFS/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
EOF
  rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb
  log "podman import $BASE_IMAGE"
  tar -C "$ROOTFS" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
fi

build() {
  local image="$1" file="$2"
  if podman image exists "$image"; then echo "image $image exists"; return; fi
  log "podman build $image from $file"
  podman build --pull=never --build-arg "BASE=$BASE_IMAGE" -f "$HERE/$file" -t "$image" "$HERE" > "$WORK_DIR/build-$file.log" 2>&1 \
    || { tail -20 "$WORK_DIR/build-$file.log"; die "podman build $image failed"; }
}
build "$NATS_IMAGE" nats.Containerfile
build "$POSTGRES_IMAGE" postgres.Containerfile
podman images --filter reference='localhost/timer-test-*'

[ "$BUILD_ONLY" = 1 ] && exit 0

# --- 4. the tests, through testcontainers --------------------------------------------------------
# Ryuk (testcontainers' reaper) is an image from Docker Hub: off here; the EXIT trap removes
# leftovers by label instead. TIMER_TEST_BUILD_IMAGES=0: a missing image is an error, not a build.
log "vitest on the containers path: ${TESTS[*]}"
cd "$REPO_ROOT"
set +e
DOCKER_HOST="unix://$PODMAN_SOCKET" TEST_CONTAINERS=1 TESTCONTAINERS_RYUK_DISABLED=true TIMER_TEST_BUILD_IMAGES=0 \
  TIMER_TEST_NATS_IMAGE="$NATS_IMAGE" TIMER_TEST_POSTGRES_IMAGE="$POSTGRES_IMAGE" \
  npx vitest run --config scripts/containers/vitest.containers.config.ts "${TESTS[@]}"
status=$?
set -e
log "done: vitest exited $status"
exit $status
