#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, over binaries built here by
# `make gpu-bin`: every package's tests, the sanitizer over a reduced set, then
# the bench. Full logs go to $OUT when it is set; a short summary prints last.
#   GPU_TESTS=0      skip the tests          GPU_SANITIZE=0   skip compute-sanitizer
#   GPU_BENCH=0      skip the bench          BENCH_ARGS=...   extra bench flags
#   TEST_ARGS=...    extra go test flags, e.g. -test.run=TestX
set -u
# On the GPU machine a missing GPU is a failure, never a skip.
export DETGEMM_REQUIRE_GPU=1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# make gpu-bin ships the binaries xz-compressed (the travelling tree is capped);
# without an xz program, Python's lzma unpacks them.
if [ -f .gpu/bin.tgz ]; then tar xzf .gpu/bin.tgz -C .gpu && rm -f .gpu/bin.tgz; fi
if [ -f .gpu/bin.txz ]; then
	{ tar xJf .gpu/bin.txz -C .gpu 2>/dev/null ||
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/bin.txz .gpu; } &&
		rm -f .gpu/bin.txz
fi
out=${OUT:-$root/.gpu/out}
mkdir -p "$out"
summary=()
status=0

summary+=("gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1 | head -1)")
rm -f "$out/tests.log" "$out/sanitize.log"

if [ "${GPU_TESTS:-1}" != 0 ]; then
  while read -r rel name; do
    bin="$root/.gpu/$name.test"
    log="$out/.test_$name.log"
    ( cd "$root/$rel" && "$bin" -test.count=1 -test.v ${TEST_ARGS:-} ) > "$log" 2>&1
    rc=$?
    { echo "===== $rel (rc=$rc)"; cat "$log"; } >> "$out/tests.log"
    pass=$(grep -c -- '^--- PASS' "$log"); fail=$(grep -c -- '--- FAIL' "$log"); skip=$(grep -c -- '--- SKIP' "$log")
    summary+=("test $rel: rc=$rc pass=$pass fail=$fail skip=$skip")
    if [ $rc -ne 0 ]; then status=1; grep -B2 -A20 -- '--- FAIL' "$log" | head -60; fi
    rm -f "$log"
  done < "$root/.gpu/packages.txt"
fi

if [ "${GPU_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
  for name in $(awk '{print $2}' "$root/.gpu/packages.txt"); do
    # A reduced sweep per package: memcheck slows kernels by orders of magnitude.
    case "$name" in
      cudaload) pattern=. ;;
      # Subtest names are matched level by level: strategy (or TC tile), op, ...
      gemm) pattern='TestContractEveryVariant/(tiled|split-slab|rows-one-launch|rows-tma|stream-short|wg128x256|wg192x192|wg128x128s|tcrows8|tmarows16|tc64-any|tcdw64-vec)/(Forward|DX|DW)/(f32-f32|bf16-bf16|bf16-f32)/|TestNaNAndInf|TestUtilConversion|TestTiledTailCut|TestRowsOneLaunch' ;;
      triad) pattern='TestGPU(Training|EveryOutput)' ;;
      *) continue ;;
    esac
    rel=$(awk -v n="$name" '$2==n{print $1}' "$root/.gpu/packages.txt")
    log="$out/.sanitize_$name.log"
    ( cd "$root/$rel" && compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 "$root/.gpu/$name.test" -test.count=1 -test.short -test.v -test.run "${SANITIZE_RUN:-$pattern}" ) > "$log" 2>&1
    rc=$?
    summary+=("memcheck $rel: rc=$rc passed=$(grep -c -- '--- PASS' "$log") $(grep -E 'ERROR SUMMARY' "$log" | tail -1)")
    { echo "===== $rel (rc=$rc)"; cat "$log"; } >> "$out/sanitize.log"; rm -f "$log"
    [ $rc -ne 0 ] && status=1
  done
fi

if [ "${GPU_BENCH:-1}" != 0 ]; then
  "$root/.gpu/bench" --json "$out/bench.json" ${BENCH_ARGS:-} > "$out/bench.txt" 2> "$out/bench.err"
  rc=$?
  summary+=("bench: rc=$rc (table in bench.txt, figures in bench.json)")
  [ $rc -ne 0 ] && status=1
  cat "$out/bench.txt"; tail -5 "$out/bench.err"
  if [ -s "$out/bench.json" ]; then
    # The README's tables from the saved figures (what `go run ./bench
    # --from bench.json --format md` gives anywhere). The plot is drawn
    # where the JSON comes back: this binary is built without it.
    ( cd "$out" && "$root/.gpu/bench" --from bench.json --format md --quiet > bench.md )
    rc=$?
    summary+=("bench render: rc=$rc (README tables in bench.md)")
    [ $rc -ne 0 ] && status=1
  fi
fi

echo
echo "== summary =="
printf '%s\n' "${summary[@]}"
exit $status
