#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz": clang, ASan+UBSan, build/fuzz) and, for each,
# replays the crash reproducers kept in tests/fuzz/regressions/<target>/, then fuzzes for a
# bounded time over a COPY of the seed corpus tests/fuzz/corpus/<target>/ (the tree's corpus
# never grows). Exits non-zero if any input crashes, leaks, times out or runs out of memory;
# each reproducer is kept under $FUZZ_WORK/artifacts/<target>/ (copy it to
# tests/fuzz/regressions/<target>/ with a regression test when you fix the bug).
#
#   FUZZ_SECONDS   fuzzing time per target (default 30; 0 = only replay seeds + regressions)
#   FUZZ_TARGETS   space-separated subset, e.g. "gguf chat_template" (default: all)
#   FUZZ_WORK      work directory (default build/fuzz/work; wiped per target each run)
#   FUZZ_RSS_MB    memory limit per target (default 2048)
#   FUZZ_TIMEOUT   seconds one input may run (default 10)
#   FUZZ_BUILD_JOBS  build parallelism (default 2)
#   FUZZ_SEED      libFuzzer's random seed (default 1: CI explores the same inputs on every run,
#                  so a red run is this change's doing; set 0 for a fresh seed when hunting)
# One fuzzer process runs at a time (no -jobs/-workers): CI and dev machines have 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${FUZZ_SECONDS:-30}
TARGETS=${FUZZ_TARGETS:-"gguf safetensors llama2c tokenizer_json chat_template openai_request media"}
WORK=${FUZZ_WORK:-build/fuzz/work}
RSS_MB=${FUZZ_RSS_MB:-2048}
TIMEOUT=${FUZZ_TIMEOUT:-10}
JOBS=${FUZZ_BUILD_JOBS:-2}
SEED=${FUZZ_SEED:-1}
T0=$(date +%s)
stamp() { echo "== [$(($(date +%s) - T0)) s] $*"; }

# clang and its libFuzzer runtime (Debian: libclang-rt-<version>-dev).
fuzzer_runtime_present() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir
  dir="$(clang++ -print-resource-dir)/lib/linux"
  [ -e "$dir/libclang_rt.fuzzer-x86_64.a" ] || [ -e "$dir/libclang_rt.fuzzer-$(uname -m).a" ]
}
if ! fuzzer_runtime_present; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  stamp "installing clang and libFuzzer"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    clang libclang-rt-dev
  fuzzer_runtime_present || { echo "run-fuzz: clang's libFuzzer runtime is still missing" >&2; exit 1; }
fi

stamp "fuzz: build"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$JOBS"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
BIN=build/fuzz/tests/fuzz
failed=()
for t in $TARGETS; do
  exe=$BIN/fuzz_$t
  [ -x "$exe" ] || { echo "run-fuzz: no target $exe" >&2; exit 2; }
  corpus=$WORK/corpus/$t
  artifacts=$WORK/artifacts/$t
  log=$WORK/logs/$t.log
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  cp -r "tests/fuzz/corpus/$t/." "$corpus/"
  common=(-rss_limit_mb="$RSS_MB" -timeout="$TIMEOUT" -artifact_prefix="$artifacts/" -seed="$SEED")
  dict=tests/fuzz/dict/$t.dict
  [ -f "$dict" ] && common+=(-dict="$dict")

  regressions=()
  [ -d "tests/fuzz/regressions/$t" ] &&
    mapfile -t regressions < <(find "tests/fuzz/regressions/$t" -type f ! -name '*.md' | sort)
  if ((${#regressions[@]})); then
    stamp "$t: replay ${#regressions[@]} regression input(s)"
    if ! "$exe" "${common[@]}" "${regressions[@]}" >"$log.replay" 2>&1; then
      tail -n 40 "$log.replay"
      failed+=("$t (regression replay)")
      continue
    fi
  fi

  stamp "$t: fuzz ${SECONDS_EACH}s over a copy of $(find "$corpus" -type f | wc -l) seed(s)"
  runs=(); [ "$SECONDS_EACH" = 0 ] && runs=(-runs=0)
  if "$exe" "${common[@]}" "${runs[@]}" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
       "$corpus" >"$log" 2>&1; then
    { grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" ||
        true; } | tr -s ' \n' ' ' | sed 's/^/   /'
    echo
  else
    tail -n 60 "$log"
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  stamp "fuzz: FAILED: ${failed[*]}"
  echo "reproducers (logs in $WORK/logs/):"
  find "$WORK/artifacts" -type f -printf '  %p\n'
  exit 1
fi
stamp "fuzz: no crashes in: $TARGETS"
