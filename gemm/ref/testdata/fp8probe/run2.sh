#!/bin/bash
set -e
cd "$(dirname "$0")"
nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/probe8 probe8.cu
mkdir -p /tmp/p8 $OUT/p8
for pair in "0 0" "1 1" "0 1" "1 0"; do
  set -- $pair
  ./p8bin gen 11 400 1 $1 $2 /tmp/p8/z$1$2.in
  /tmp/probe8 /tmp/p8/z$1$2.in /tmp/p8/z$1$2.out
  ./p8bin gen 1 1000 1 $1 $2 /tmp/p8/s$1$2.in
  /tmp/probe8 /tmp/p8/s$1$2.in /tmp/p8/s$1$2.out
done
cd /tmp/p8 && tar cJf $OUT/p8/z.txz z*.out
