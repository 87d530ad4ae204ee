#!/bin/sh
# The DIMMnet paper's Figure 5 on this machine: BOTF-only against PUSH-only
# eager bandwidth, 64 B .. 64 KiB, 2 ranks on the emu transport, with the
# crossover marked (docs/dimmnet.md). Writes dimmnet_fig5.{botf,push}.dat and
# dimmnet_fig5.png in the current directory.
#   examples/bench/dimmnet_fig5.sh BUILDDIR [TRANSPORT]
set -e
build=${1:?usage: dimmnet_fig5.sh BUILDDIR [emu|fabric]}
transport=${2:-emu}
run() {
    "$build/mpirun" -n 2 -x HASHI_DEVICE=dimmnet -x HASHI_TRANSPORT="$transport" \
        -x HASHI_DIMMNET_BOTF_MAX=464 -x HASHI_DIMMNET_EAGER_MAX=64k -x HASHI_DIMMNET_RECV_BUF_SIZE=64k \
        -x HASHI_DIMMNET_PUSH_MIN="$1" \
        "$build/examples/bench/dimmnet_fig5" "$2"
}
run 1g "BOTF only" > dimmnet_fig5.botf.dat
run 1 "PUSH only" > dimmnet_fig5.push.dat
# Crossover: the first size from which PUSH stays ahead of BOTF.
cross=$(paste dimmnet_fig5.botf.dat dimmnet_fig5.push.dat | awk '
    /^#/ { next }
    { size[NR] = $1; botf[NR] = $2; push[NR] = $4; n = NR }
    END { c = ""; for (i = n; i >= 1; i--) { if (push[i] > botf[i]) c = size[i]; else break } print c }')
echo "crossover (PUSH ahead from): ${cross:-none} bytes"
command -v gnuplot >/dev/null || { echo "gnuplot not installed: data only"; exit 0; }
gnuplot <<GP
set terminal png size 800,500
set output 'dimmnet_fig5.png'
set title 'DIMMnet Figure 5 on $transport: eager bandwidth, BOTF only vs PUSH only'
set logscale x 2
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set key left top
set grid
${cross:+set arrow from $cross, graph 0 to $cross, graph 1 nohead dt 2 lc rgb 'gray'}
${cross:+set label 'crossover $cross B' at $cross, graph 0.95 offset 1,0}
plot 'dimmnet_fig5.botf.dat' using 1:2 with linespoints title 'BOTF only', \
     'dimmnet_fig5.push.dat' using 1:2 with linespoints title 'PUSH only'
GP
echo "wrote dimmnet_fig5.png"
