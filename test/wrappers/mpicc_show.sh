#!/bin/sh
# mpicc_show.sh PREFIX: the installed mpicc prints the flags build systems
# parse, picks the compiler asked for, keeps arguments intact, and links
# programs that run without LD_LIBRARY_PATH. pkg-config hashi agrees with it.
# Exit 0 pass, 1 fail, 77 skip.

prefix=${1:?usage: mpicc_show.sh PREFIX}
mpicc=$prefix/bin/mpicc
failures=0
checks=0

ok() { checks=$((checks + 1)); echo "ok - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
skip() { echo "skip - $*"; }
# check DESCRIPTION COMMAND...: pass if the command succeeds.
check() {
    desc=$1
    shift
    if "$@"; then ok "$desc"; else fail "$desc"; fi
}
# Whether the word list (one shell-quoted command line) contains WORD exactly.
has_word() {
    line=$1 word=$2
    eval "set -- $line"
    for w in "$@"; do [ "$w" = "$word" ] && return 0; done
    return 1
}
first_word() {
    eval "set -- $1"
    printf '%s\n' "$1"
}

if [ ! -x "$mpicc" ]; then
    echo "FAIL - $mpicc is not installed"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hashi-mpicc-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
unset HASHI_CC

# Where mpicc says the header and the library are: they must be there, under PREFIX.
incdir=$("$mpicc" -showme:incdirs)
libdir=$("$mpicc" -showme:libdirs)
real_prefix=$(cd "$prefix" && pwd -P)
case $(cd "$incdir" 2>/dev/null && pwd -P) in
"$real_prefix"/*) ok "-showme:incdirs is under PREFIX ($incdir)" ;;
*) fail "-showme:incdirs '$incdir' is not a directory under $prefix" ;;
esac
case $(cd "$libdir" 2>/dev/null && pwd -P) in
"$real_prefix"/*) ok "-showme:libdirs is under PREFIX ($libdir)" ;;
*) fail "-showme:libdirs '$libdir' is not a directory under $prefix" ;;
esac
check "mpi.h is in $incdir" test -f "$incdir/mpi.h"
check "libmpi_abi.so.1 is in $libdir" test -e "$libdir/libmpi_abi.so.1"
check "-showme:libs prints mpi_abi" test "$("$mpicc" -showme:libs)" = mpi_abi

inc_flag="-I$incdir"
set -- "-L$libdir" "-Wl,-rpath,$libdir" "-lmpi_abi"
link_flags="$*"

# expect_flags NAME OUTPUT WANT_INCLUDE WANT_LINK
expect_flags() {
    name=$1 out=$2 want_inc=$3 want_link=$4
    good=yes
    if [ "$want_inc" = yes ]; then has_word "$out" "$inc_flag" || good=no
    else has_word "$out" "$inc_flag" && good=no; fi
    for flag in "-L$libdir" "-Wl,-rpath,$libdir" -lmpi_abi; do
        if [ "$want_link" = yes ]; then has_word "$out" "$flag" || good=no
        else has_word "$out" "$flag" && good=no; fi
    done
    if [ "$good" = yes ]; then
        ok "$name prints the right flags: $out"
    else
        fail "$name: expected include=$want_inc ($inc_flag) link=$want_link ($link_flags), got: $out"
    fi
}

# show_flags NAME WANT_INCLUDE WANT_LINK MPICC_ARGS...
show_flags() {
    name=$1 want_inc=$2 want_link=$3
    shift 3
    if out=$("$mpicc" "$@"); then
        expect_flags "$name" "$out" "$want_inc" "$want_link"
    else
        fail "mpicc $* failed"
    fi
}

default_cc=$("$mpicc" -showme:command)
check "-showme:command names a compiler ($default_cc)" test -n "$default_cc"

show_flags "-show" yes yes -show
show_flags "-showme" yes yes -showme
show_flags "-showme:compile" yes no -showme:compile
show_flags "-showme:link" no yes -showme:link
show_flags "--showme:link" no yes --showme:link
show_flags "-compile_info" yes no -compile_info
show_flags "-link_info" yes yes -link_info
show_flags "-compile-info" yes no -compile-info
show_flags "-link-info" yes yes -link-info
show_flags "-show -c (compile only)" yes no -show -c x.c
show_flags "-show -E (preprocess only)" yes no -show -E x.c
show_flags "-show x.o -o x (link)" yes yes -show x.o -o x

out=$("$mpicc" -show x.c)
check "-show starts with the default compiler" test "$(first_word "$out")" = "$default_cc"
case $("$mpicc" -showme:version) in
*Hashi*5.0*) ok "-showme:version names Hashi and MPI 5.0" ;;
*) fail "-showme:version: $("$mpicc" -showme:version)" ;;
esac

# Compiler choice: -cc= beats HASHI_CC beats the build compiler.
out=$("$mpicc" -cc=gcc -show x.c)
check "-cc=gcc runs gcc" test "$(first_word "$out")" = gcc
if command -v clang >/dev/null 2>&1; then
    out=$(HASHI_CC=clang "$mpicc" -show x.c)
    check "HASHI_CC=clang runs clang" test "$(first_word "$out")" = clang
    out=$(HASHI_CC=clang "$mpicc" -cc=gcc -show x.c)
    check "-cc=gcc overrides HASHI_CC=clang" test "$(first_word "$out")" = gcc
else
    skip "HASHI_CC=clang (clang is not installed)"
fi
out=$(HASHI_CC='' "$mpicc" -show x.c)
check "empty HASHI_CC means the build compiler" test "$(first_word "$out")" = "$default_cc"

# Arguments with spaces and quotes survive -show's quoting.
out=$("$mpicc" -show '-DGREETING="hello world"' "-DNAME=it's" "my file.c")
if has_word "$out" '-DGREETING="hello world"' && has_word "$out" "-DNAME=it's" && has_word "$out" "my file.c"; then
    ok "-show quotes arguments with spaces and quotes: $out"
else
    fail "-show lost an argument's spaces or quotes: $out"
fi

# --version goes to the compiler alone.
check "--version is the compiler's" test "$("$mpicc" --version 2>&1 | head -n 1)" = "$($default_cc --version 2>&1 | head -n 1)"
check "-dumpversion is the compiler's" test "$("$mpicc" -dumpversion)" = "$($default_cc -dumpversion)"

# A real program, compiled and linked in one step; a define with a space.
cat > "$work/prog.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(void)
{
    int version = 0, subversion = 0;
    MPI_Get_version(&version, &subversion);
    printf("%s %d.%d\n", GREETING, version, subversion);
    return 0;
}
EOF
if "$mpicc" '-DGREETING="hello world"' -o "$work/prog" "$work/prog.c"; then
    ok "mpicc compiles and links a program"
    out=$(env -u LD_LIBRARY_PATH "$work/prog" 2>&1)
    check "it runs without LD_LIBRARY_PATH and the spaced define survived ($out)" test "$out" = "hello world 5.0"
    needed=$(readelf -d "$work/prog" | sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\].*/\1/p')
    check "its NEEDED entry is libmpi_abi.so.1 ($needed)" test "$needed" = libmpi_abi.so.1
    if readelf -d "$work/prog" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF "$libdir"; then
        ok "its run path contains $libdir"
    else
        fail "its run path does not contain $libdir"
    fi
else
    fail "mpicc could not build prog.c"
fi

# Two steps: compile (no link flags needed), then link.
if "$mpicc" '-DGREETING="two steps"' -c -o "$work/prog2.o" "$work/prog.c" &&
   "$mpicc" -o "$work/prog2" "$work/prog2.o" &&
   [ "$(env -u LD_LIBRARY_PATH "$work/prog2")" = "two steps 5.0" ]; then
    ok "mpicc -c then mpicc -o links and runs"
else
    fail "mpicc -c then mpicc -o"
fi

if command -v clang >/dev/null 2>&1; then
    if HASHI_CC=clang "$mpicc" '-DGREETING="with clang"' -o "$work/prog3" "$work/prog.c" &&
       [ "$(env -u LD_LIBRARY_PATH "$work/prog3")" = "with clang 5.0" ]; then
        ok "HASHI_CC=clang builds a program that runs"
    else
        fail "HASHI_CC=clang could not build or run the program"
    fi
fi

# autoconf's AX_MPI sets CC=mpicc and runs AC_CHECK_FUNC(MPI_Init): a call
# linked without the header.
cat > "$work/conftest.c" <<'EOF'
char MPI_Init(void);
int main(void) { return MPI_Init(); }
EOF
check "AX_MPI's test links (CC=mpicc, AC_CHECK_FUNC(MPI_Init))" \
    "$mpicc" -o "$work/conftest" "$work/conftest.c"

# pkg-config hashi gives the same flags.
if command -v pkg-config >/dev/null 2>&1; then
    pc_dir=$libdir/pkgconfig
    pc_flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs hashi 2>&1)
    if has_word "$pc_flags" "$inc_flag" && has_word "$pc_flags" -lmpi_abi && has_word "$pc_flags" "-L$libdir"; then
        ok "pkg-config hashi: $pc_flags"
        # shellcheck disable=SC2086
        if cc '-DGREETING="via pkg-config"' -o "$work/prog4" "$work/prog.c" $pc_flags &&
           [ "$(env -u LD_LIBRARY_PATH "$work/prog4")" = "via pkg-config 5.0" ]; then
            ok "a program built with pkg-config's flags runs"
        else
            fail "a program built with pkg-config's flags does not build or run"
        fi
    else
        fail "pkg-config hashi (PKG_CONFIG_PATH=$pc_dir): $pc_flags"
    fi
else
    skip "pkg-config is not installed"
fi

# Errors are clear.
if "$mpicc" -cc=no-such-compiler-hashi x.c 2>"$work/err"; then
    fail "a missing compiler is an error"
else
    check "a missing compiler is named: $(cat "$work/err")" grep -q no-such-compiler-hashi "$work/err"
fi
if "$mpicc" -showme:nonsense >/dev/null 2>&1; then
    fail "-showme:nonsense is an error"
else
    ok "-showme:nonsense is an error"
fi

echo "$((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
