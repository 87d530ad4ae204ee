#!/bin/sh
# cmake_findmpi.sh PREFIX: CMake's FindMPI detects the Hashi installed in PREFIX,
# given the wrapper (-DMPI_C_COMPILER) and found on PATH with no hint; reports
# MPI_C_VERSION 5.0; builds test/wrappers/cmake and the binary runs as a
# singleton. Exit 0 pass, 1 fail, 77 skip (no cmake).

prefix=${1:?usage: cmake_findmpi.sh PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
project=$here/cmake
failures=0
checks=0

ok() { checks=$((checks + 1)); echo "ok - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }

if ! command -v cmake >/dev/null 2>&1; then
    echo "skip - cmake is not installed"
    exit 77
fi
if [ ! -x "$prefix/bin/mpicc" ]; then
    echo "FAIL - $prefix/bin/mpicc is not installed"
    exit 1
fi
if [ ! -f "$project/CMakeLists.txt" ]; then
    echo "FAIL - $project/CMakeLists.txt is missing"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hashi-cmake-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
unset HASHI_CC LD_LIBRARY_PATH
real_prefix=$(cd "$prefix" && pwd -P)

# The value the project printed for VAR (its "HASHI_CHECK VAR=value" line).
result() {
    sed -n "s/^-- HASHI_CHECK $2=//p" "$1" | head -n 1
}

# try NAME [cmake arguments...]: configure, check FindMPI's results, build, run.
try() {
    name=$1
    shift
    build=$work/$name
    log=$work/$name.log
    echo "# $name: cmake $*"
    if ! cmake -S "$project" -B "$build" "$@" >"$log" 2>&1; then
        fail "$name: configure failed"
        sed 's/^/#   /' "$log"
        return
    fi
    ok "$name: find_package(MPI REQUIRED COMPONENTS C) succeeded"

    found=$(result "$log" MPI_C_FOUND)
    version=$(result "$log" MPI_C_VERSION)
    compiler=$(result "$log" MPI_C_COMPILER)
    incdirs=$(result "$log" MPI_C_INCLUDE_DIRS)
    libs=$(result "$log" MPI_C_LIBRARIES)
    case $found in
    TRUE | ON | YES | 1) ok "$name: MPI_C_FOUND=$found" ;;
    *) fail "$name: MPI_C_FOUND='$found'" ;;
    esac
    if [ "$version" = 5.0 ]; then ok "$name: MPI_C_VERSION=5.0"; else fail "$name: MPI_C_VERSION='$version', expected 5.0"; fi
    case $(cd "$(dirname "$compiler")" 2>/dev/null && pwd -P)/$(basename "$compiler") in
    "$real_prefix/bin/mpicc") ok "$name: MPI_C_COMPILER=$compiler" ;;
    *)
        # Without a hint FindMPI looks for the compiler next to the first
        # mpiexec it finds: PREFIX/bin/mpiexec must be installed.
        fail "$name: MPI_C_COMPILER='$compiler', expected $prefix/bin/mpicc" \
            "(FindMPI found mpiexec at '$(result "$log" MPIEXEC_EXECUTABLE)')" ;;
    esac
    case $incdirs in
    "$real_prefix"/* | "$prefix"/*) ok "$name: MPI_C_INCLUDE_DIRS=$incdirs" ;;
    *) fail "$name: MPI_C_INCLUDE_DIRS='$incdirs' is not under $prefix" ;;
    esac
    case $libs in
    *libmpi_abi.so*) ok "$name: MPI_C_LIBRARIES=$libs" ;;
    *) fail "$name: MPI_C_LIBRARIES='$libs' does not name libmpi_abi" ;;
    esac

    if ! cmake --build "$build" >"$log.build" 2>&1; then
        fail "$name: building hello_findmpi failed"
        sed 's/^/#   /' "$log.build"
        return
    fi
    ok "$name: hello_findmpi built with MPI::MPI_C"
    out=$(cd "$build" && timeout 60 ./hello_findmpi 2>&1)
    status=$?
    if [ "$status" -eq 0 ] && [ "$out" = "hello_findmpi: rank 0 of 1" ]; then
        ok "$name: runs as a singleton without LD_LIBRARY_PATH ($out)"
    else
        fail "$name: hello_findmpi exited with $status: $out"
    fi
}

try hint -DMPI_C_COMPILER="$prefix/bin/mpicc"
PATH=$prefix/bin:$PATH
export PATH
try path

echo "$((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
