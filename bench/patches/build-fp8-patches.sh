#!/bin/bash
# build-fp8-patches.sh — builds what bench/patches/run-fp8-patches.sh runs on the GPU
# machine: main's gemm test binary and, for p1 (fp8-block-scales-in-place.patch) and
# p2 (that patch, then fp8-decode-pairs.patch), the gemm test binary with base gemm_fp8
# CUBINs rebuilt by the local NVRTC 12.x, gencubin (for the cuda13 set, which only the
# GPU machine's NVRTC 13 can build) and the bench; packed into .gpu/p/a.tar.xz with the
# run script. Run from the repository root; needs NVRTC 12 (.ci/run's install_nvrtc).
#
# The device call (kernels/embedded moved out of the tree for it, so the copy stays
# under the carry cap; put it back after):
#   carry [".gpu/p"], command:
#   cd .gpu && xz -dc p/a.tar.xz | tar -xf - && cd .. && timeout 560 bash .gpu/p/run-fp8-patches.sh a; ls $OUT
set -euo pipefail
root=$PWD
out=$root/.gpu/a
rm -rf "$out" && mkdir -p "$out" "$root/.gpu/p"
go test -c -trimpath -tags=detgemm_only_sm90a -ldflags="-s -w" -o "$out/main_gemm.test" ./gemm
for n in p1 p2; do
  wt=$(mktemp -d /tmp/detgemm-$n.XXXX)
  git worktree add -f --detach "$wt" HEAD >/dev/null
  (cd "$wt" && git apply bench/patches/fp8-block-scales-in-place.patch &&
    if [ $n = p2 ]; then git apply bench/patches/fp8-decode-pairs.patch; fi)
  (cd "$wt/kernels" && go build -trimpath -tags detgemm_noembed -o "$out/gencubin_$n" ./internal/gencubin &&
    "$out/gencubin_$n" -variant base -archs sm_90a -families gemm_fp8 -out embedded -table /dev/null &&
    go run ./internal/gencubin -retable -out embedded -table zembedded.go)
  (cd "$wt" && go test -c -trimpath -tags=detgemm_only_sm90a -ldflags="-s -w" -o "$out/${n}_gemm.test" ./gemm &&
    cd bench && go build -trimpath -tags=noplot,detgemm_only_sm90a -ldflags="-s -w -X main.buildCommit=$(git rev-parse --short=12 HEAD)+$n" -o "$out/bench_$n" .)
  echo "$n: $wt (base gemm_fp8 at $wt/kernels/embedded/sm_90a/gemm_fp8.gz)"
done
cp bench/patches/run-fp8-patches.sh "$root/.gpu/p/"
(cd "$root/.gpu" && tar -cf - a | xz -T1 --lzma2=preset=9,dict=256MiB > p/a.tar.xz)
ls -la "$root/.gpu/p"
