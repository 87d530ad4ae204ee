#!/bin/sh
# The point-to-point, collective and MPI-IO suites on an ASan + UBSan copy of the
# whole tree (built on demand in BUILDDIR/sanitized/), at 2 and 4 ranks on the
# default cell. The
# 2^31-byte message is left out: it needs ~4.5 GB, which ASan's shadow doubles.
#   sanitized.sh TOP_SRCDIR TOP_BUILDDIR PYTHON3 [runtests args...]
set -u
src=$1 build=$2 py=$3
shift 3
san=$build/sanitized
# This runs inside the outer tree's `make check`, whose command-line variables
# (TEST_LOGS=...) reach any make started here through MAKEFLAGS: drop them, or
# the copy would run the outer tree's whole test list (this script included).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
mkdir -p "$san" && cd "$san" || exit 1
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [ ! -f Makefile ] || [ "$src/configure" -nt config.status ]; then
    if ! "$src/configure" --prefix="$san/_inst" --disable-sanitizers --enable-werror \
            CFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" >configure.log 2>&1; then
        echo "Bail out! configuring the sanitized copy failed (see $san/configure.log)"
        tail -n 20 configure.log
        exit 1
    fi
fi
if ! { make -j2 all && make -j2 $(make -s print-check-programs); } >make.log 2>&1; then
    echo "Bail out! building the sanitized copy failed (see $san/make.log)"
    grep -E 'error|Error' make.log | head -n 20
    exit 1
fi
# PMIx keeps allocations until exit; leak checking belongs to valgrind runs.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=86
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
export ASAN_OPTIONS UBSAN_OPTIONS
exec "$py" "$src/test/runtests" --suite p2p --suite coll --suite io --cell default \
    --only '^((p2p_(?!bigmsg)|coll_)[a-z0-9_]*_[24]|io_[24])$' \
    --top-srcdir "$src" --top-builddir "$san" --mpirun "$san/mpirun" "$@"
