#!/bin/bash
# run-fp8-patches.sh PART — issue 26's fp8 patches on the GPU machine, from the repo root
# after .gpu/p/a.tar.xz (bench/patches/build-fp8-patches.sh) is unpacked into .gpu/a.
# Parts, each under one call's 600 s: a (cuda13 sets of p1 and p2 built in the background
# through the engine's cache, the base fp8 suites, the probe of main, p2, p1); b (on the
# same warm machine: the probes again, p2's cuda13 suite, the bench's fp8 rows); s (p2
# alone: its cuda13 set, both suites, the probes of main and p2, the bench); c (memcheck,
# p1's cuda13 suite). Logs go to
# $OUT/logs.tar, rewritten after each step; the cuda13 sets to $OUT/gemm_fp8_cuda13_pN.gz.
part=$1
R=$PWD
B=$R/.gpu/a
L=/tmp/logs
mkdir -p $L
export DETGEMM_REQUIRE_GPU=1
ts() { date -u +%H:%M:%S; }
save() { (cd /tmp && tar -cf $OUT/logs.tar logs); }
step() { # name timeout cmd...
  local name=$1 to=$2; shift 2
  echo "[$(ts)] start $name" | tee -a $L/steps.txt
  local t0=$(date +%s)
  (cd $R/gemm && timeout $to "$@") > $L/$name.log 2>&1
  local rc=$?
  echo "[$(ts)] end $name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a $L/steps.txt
  tail -n 4 $L/$name.log | sed 's/^/    /'
  save
}
probe() { # name tag
  local n=$1
  step probe_${n}_$2 150 env DETGEMM_FP8_PERF=1 DETGEMM_FP8_RANDOM=1 \
    DETGEMM_FP8_PERF_SHAPES="4096x7168x16384 8192x8192x8192 4096x4096x4096 64x4096x7168 128x4096x7168 128x24576x7168" \
    DETGEMM_FP8_PERF_MODES="block tensor-prom tensor-fast" DETGEMM_CACHE_DIR=/tmp/dgc_$n \
    $B/${n}_gemm.test -test.run 'TestFP8Throughput$' -test.v
  grep -E "fp8perf" $L/probe_${n}_$2.log | head -n 40 | sed 's/^/    /'
}
gen() { # p1|p2: the cuda13 gemm_fp8 set, compiled through the cache the engine reads
  local n=$1 t0=$(date +%s)
  (cd $R/kernels && DETGEMM_CACHE_DIR=/tmp/dgc_$n $B/gencubin_$n -use-cache -variant cuda13 -archs sm_90a \
    -families gemm_fp8 -out /tmp/emb_$n -table /dev/null) > $L/gen_$n.log 2>&1
  echo "gen $n rc=$? $(( $(date +%s) - t0 ))s" >> $L/gen_$n.log
  cp /tmp/emb_$n/sm_90a+cuda13/gemm_fp8.gz $OUT/gemm_fp8_cuda13_$n.gz 2>>$L/gen_$n.log
}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $L/gpu.txt 2>&1; cat $L/gpu.txt
case $part in
a)
  gen p2 & g2=$!
  gen p1 & g1=$!
  step suite_p2_base 200 env DETGEMM_EMBEDDED_VARIANT=base $B/p2_gemm.test -test.run 'FP8' -test.v
  step suite_p1_base 150 env DETGEMM_EMBEDDED_VARIANT=base $B/p1_gemm.test -test.run 'FP8' -test.v
  wait $g2 $g1
  tail -n 3 $L/gen_p2.log $L/gen_p1.log
  save
  probe main c13
  probe p2 c13
  probe p1 c13
  ;;
b)
  probe p2 c13r2
  probe main c13r2
  probe p1 c13r2
  step suite_p2_c13 200 env DETGEMM_CACHE_DIR=/tmp/dgc_p2 $B/p2_gemm.test -test.run 'FP8' -test.v
  step bench_p2 240 env DETGEMM_CACHE_DIR=/tmp/dgc_p2 $B/bench_p2 --startup=false --modes fp8,copy --dtypes bf16 --shapes-set fp8 --json $OUT/bench-fp8-p2.json
  ;;
s)
  gen p2 & g2=$!
  step suite_p2_base 150 env DETGEMM_EMBEDDED_VARIANT=base $B/p2_gemm.test -test.run 'FP8' -test.v
  wait $g2
  tail -n 3 $L/gen_p2.log
  save
  step suite_p2_c13 120 env DETGEMM_CACHE_DIR=/tmp/dgc_p2 $B/p2_gemm.test -test.run 'FP8' -test.v
  probe main c13
  probe p2 c13
  step bench_p2 240 env DETGEMM_CACHE_DIR=/tmp/dgc_p2 $B/bench_p2 --startup=false --modes fp8,copy --dtypes bf16 --shapes-set fp8 --json $OUT/bench-fp8-p2.json
  ;;
c)
  step memcheck_p2 300 env DETGEMM_EMBEDDED_VARIANT=base compute-sanitizer --tool memcheck $B/p2_gemm.test -test.run 'TestFP8MatmulMatchesReference|TestFP8MatmulBatchInvariance' -test.short
  step suite_p1_c13 200 env DETGEMM_CACHE_DIR=/tmp/dgc_p1 $B/p1_gemm.test -test.run 'FP8' -test.v
  ;;
*)
  echo "run-fp8-patches.sh: unknown part '$part' (want a, b, s or c)" >&2
  exit 2
  ;;
esac
save
cat $L/steps.txt
