#!/bin/bash
# device: build the probe, generate, run
set -e
cd "$(dirname "$0")"
nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/probe8 probe8.cu
mkdir -p /tmp/p8 $OUT/p8
for pair in "0 0" "1 1" "0 1" "1 0"; do
  set -- $pair
  ./p8bin gen 1 1000 1 $1 $2 /tmp/p8/s$1$2.in
  /tmp/probe8 /tmp/p8/s$1$2.in /tmp/p8/s$1$2.out
  ./p8bin gen 2 24 128 $1 $2 /tmp/p8/l$1$2.in
  /tmp/probe8 /tmp/p8/l$1$2.in /tmp/p8/l$1$2.out
  ./p8bin gen 3 300 4 $1 $2 /tmp/p8/m$1$2.in
  /tmp/probe8 /tmp/p8/m$1$2.in /tmp/p8/m$1$2.out
done
cd /tmp/p8 && for p in 00 11 01 10; do tar cJf $OUT/p8/o$p.txz *$p.out; done && ls -la $OUT/p8
