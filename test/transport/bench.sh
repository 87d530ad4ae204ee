#!/bin/sh
# Figures for docs/transport.md: tiny-write and block round trips, and PUSH
# bandwidth by size through CMA against the staged two-chunk pipeline. The
# two cores change placement every few seconds (docs machine-notes), so the
# variants alternate and each runs several times; read best and median.
#   test/transport/bench.sh BUILDDIR [ROUNDS]
set -e
b=${1:?usage: bench.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
i=0
while [ "$i" -lt "$rounds" ]; do
    for variant in "cma" "pipe512k" "pipe1m"; do
        case $variant in
        cma) env="HASHI_EMU_PIPE_MIN=0" ;;
        pipe512k) env="HASHI_EMU_PIPE_MIN=1 HASHI_EMU_PIPE_CHUNK=512k" ;;
        pipe1m) env="HASHI_EMU_PIPE_MIN=1 HASHI_EMU_PIPE_CHUNK=1m" ;;
        esac
        echo "== round $i: $variant ($env)"
        env $env HASHI_TRANSPORT=emu "$b/mpirun" -n 2 "$b/test/transport/tl_test" bench
    done
    i=$((i + 1))
done
