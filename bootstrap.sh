#!/usr/bin/env bash
# Hashi bootstrap.
#   ./bootstrap.sh          install dependencies, build, install, run the demo
#   ./bootstrap.sh check    the same set-up, then the whole test suite (make check)
# PREFIX (default: _install/ here) and BUILD (default: _build/ here) may be set.
set -euo pipefail

top=$(cd "$(dirname "$0")" && pwd)
mode=${1:-demo}
case "$mode" in
    demo|check) ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bootstrap.sh: unknown mode '$mode' (use no argument, or 'check')" >&2; exit 2 ;;
esac
PREFIX=${PREFIX:-$top/_install}
BUILD=${BUILD:-$top/_build}
jobs=$(nproc 2>/dev/null || echo 2)

say() { printf '==> %s\n' "$*"; }

# ---- dependencies (Debian packages) ----
build_deps=(autoconf automake libtool pkgconf make gcc python3
            libfabric-dev libfabric-bin libpmix-dev libpmix-bin libhwloc-dev hwloc)
check_deps=(cmake valgrind)
wanted=("${build_deps[@]}")
[ "$mode" = check ] && wanted+=("${check_deps[@]}")
missing=()
for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
        echo "bootstrap.sh: missing Debian packages. Install them with:" >&2
        echo "  sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# ---- build and install (each step only when needed) ----
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ] \
   || [ -n "$(find . -name Makefile.inc -newer configure -not -path './_*' -print -quit)" ]; then
    say "autoreconf"
    autoreconf -fi
fi
mkdir -p "$BUILD"
cd "$BUILD"
# A build configured before valgrind was installed lacks memcheck's
# annotations (src/runtime/valgrind.h), which the memcheck tests need.
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ] \
   || ! grep -q -- "--prefix=$PREFIX" config.status 2>/dev/null \
   || { [ -f /usr/include/valgrind/memcheck.h ] \
        && ! grep -q HAVE_VALGRIND_MEMCHECK_H config/hashi_config.h 2>/dev/null; }; then
    say "configure --prefix=$PREFIX"
    "$top/configure" --prefix="$PREFIX" --enable-werror -q
fi
say "make"
make -s -j"$jobs"
say "make install"
make -s install >/dev/null

if [ "$mode" = check ]; then
    say "make check"
    status=0
    make -s -j1 check || status=$?
    # One summary line that CI and people can read at a glance.
    total=$(sed -n 's/^# TOTAL: *//p' test-suite.log test/*.log 2>/dev/null | head -n1)
    logs=$(find . -name '*.trs' -print)
    pass=0; fail=0; skip=0
    if [ -n "$logs" ]; then
        pass=$(cat $logs | grep -c '^:test-result: PASS' || true)
        fail=$(cat $logs | grep -c -E '^:test-result: (FAIL|ERROR|XPASS)' || true)
        skip=$(cat $logs | grep -c '^:test-result: SKIP' || true)
    fi
    if [ "$status" -ne 0 ]; then
        echo "---- failing test logs ----"
        for trs in $logs; do
            if grep -q -E '^:test-result: (FAIL|ERROR)' "$trs"; then
                log=${trs%.trs}.log
                echo "== $log"; tail -n 60 "$log"
            fi
        done
    fi
    echo "$pass passed, $fail failed, $skip skipped"
    exit "$status"
fi

say "demo: mpirun -n 2 hello"
"$PREFIX/bin/mpirun" -n 2 "$BUILD/examples/hello"
say "demo: mpirun -n 2 ping-pong on the default device (examples/bench/p2p_bench)"
"$PREFIX/bin/mpirun" -n 2 "$BUILD/examples/bench/p2p_bench" latency 4096
echo
echo "Hashi is installed in $PREFIX. To use it:"
echo "  export PATH=\"$PREFIX/bin:\$PATH\""
