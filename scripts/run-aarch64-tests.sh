#!/usr/bin/env bash
# Runs cross-built aarch64 test suites under qemu-aarch64, adapting to hosts whose
# qemu-user cannot start a thread.
#
#   scripts/run-aarch64-tests.sh LABEL_REGEX [TEST_BINARY...]
#   environment: QEMU_CPU (qemu's CPU model), EDGE_MAX_ISA, JOBS; GTEST_FILTER=-A:B leaves
#   those tests out; EDGE_QEMU_NO_THREADS=1 takes the second path below without the probe
#   (to check that path on a host where threads work).
#
# On some hosts qemu-aarch64 spins forever inside the guest's pthread_create: a bare
# pthread_create and join never returns, while a statically linked program joins (the
# dynamic guest libc under that qemu, not our code; `qemu-aarch64 -L /usr/aarch64-linux-gnu`,
# which mixes two glibc builds, does the same on any host). A CTest run there would hang
# until its timeout on every suite that starts a thread. So first a probe, a few seconds:
# a dynamically linked program that starts and joins one thread, run as CTest runs the
# suites.
# - It finishes: the suites run under CTest as usual (-L LABEL_REGEX).
# - It hangs: each test runs alone, with a guest library preloaded whose pthread_create
#   ends the process at once with exit code 77. A test that passes without starting a
#   thread counts; one that starts a thread is listed as not run on this host; anything
#   else is a failure. The summary says how many of each.
set -euo pipefail
cd "$(dirname "$0")/.."
LABELS=$1
shift
BUILD=build/aarch64
WORK="$BUILD/qemu-probe"
mkdir -p "$WORK"

qemu_threads_work() {
  cat >"$WORK/thread_probe.c" <<'EOF'
#include <pthread.h>
static void* run(void* arg) { return arg; }
int main(void) {
  pthread_t t;
  if (pthread_create(&t, 0, run, 0) != 0) return 2;
  return pthread_join(t, 0) != 0;
}
EOF
  aarch64-linux-gnu-gcc -O1 -pthread "$WORK/thread_probe.c" -o "$WORK/thread_probe"
  timeout 10 qemu-aarch64 "$WORK/thread_probe"
}

if [ "${EDGE_QEMU_NO_THREADS:-0}" != 1 ] && qemu_threads_work; then
  ctest --preset aarch64 -j "${JOBS:-$(nproc)}" --timeout 1200 -L "$LABELS" ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"}
  exit 0
fi

if [ "${EDGE_QEMU_NO_THREADS:-0}" = 1 ]; then
  why="EDGE_QEMU_NO_THREADS=1: taken as a qemu-aarch64 that cannot start a thread"
else
  why="qemu-aarch64 on this host cannot start a thread (a pthread_create + join probe did not finish in 10 s)"
fi
echo "aarch64: $why: each test runs alone; a test that starts a thread is reported as not" \
  "run here instead of hanging"
cat >"$WORK/no_threads.c" <<'EOF'
/* Preloaded into tests under a qemu-aarch64 that hangs in pthread_create: end at once. */
#include <pthread.h>
#include <unistd.h>
int pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) {
  static const char msg[] = "edge: this test starts a thread; qemu-aarch64 here cannot\n";
  (void)t, (void)a, (void)f, (void)arg;
  (void)!write(2, msg, sizeof msg - 1);
  _exit(77);
}
EOF
aarch64-linux-gnu-gcc -O1 -shared -fPIC "$WORK/no_threads.c" -o "$WORK/no_threads.so"

# GTEST_FILTER=-A:B (what CTest's runs leave out) leaves the same tests out here.
filter=${GTEST_FILTER:-}
excluded=""
[[ "$filter" == -* ]] && excluded=":${filter#-}:"
passed=0 needs_threads=0 failed=0
failures=()
for bin in "$@"; do
  path="$BUILD/$bin"
  # "Suite." lines, then "  test" lines (comments after '#' for parameterised tests).
  mapfile -t names < <(qemu-aarch64 "$path" --gtest_list_tests | awk '
    /^[^ ]/ { suite = $1; next }
    /^  /   { print suite $1 }')
  for name in "${names[@]}"; do
    [[ "$name" == *DISABLED_* || "$excluded" == *":$name:"* ]] && continue
    rc=0
    GTEST_FILTER= QEMU_SET_ENV="LD_PRELOAD=$PWD/$WORK/no_threads.so" \
      timeout 600 qemu-aarch64 "$path" --gtest_filter="$name" >"$WORK/last.log" 2>&1 || rc=$?
    case $rc in
      0) passed=$((passed + 1)) ;;
      77) needs_threads=$((needs_threads + 1)) ;;
      *) failed=$((failed + 1)); failures+=("$bin $name (exit $rc)"); tail -n 30 "$WORK/last.log" ;;
    esac
  done
done
echo "aarch64 (${QEMU_CPU:-default CPU}${EDGE_MAX_ISA:+, EDGE_MAX_ISA=$EDGE_MAX_ISA}):" \
  "$passed passed, $failed failed, $needs_threads not run here (they start a thread)"
if ((failed)); then
  printf '  failed: %s\n' "${failures[@]}"
  exit 1
fi
