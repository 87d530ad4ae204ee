#!/bin/sh
# Check that the built library exports every function of the standard ABI:
# PMPI_X as a defined text symbol (T) and MPI_X as its weak alias (W), as
# listed in src/mpi/functions.list. Also check that no hashi_impl_* symbol
# leaks into the dynamic symbol table (they are internal, resolved at link
# time of the library).
#
# usage: check_exports.sh path/to/libmpi_abi.so path/to/functions.list
# exit status: 0 all present, 1 something missing or leaked, 2 usage error.

if [ "$#" -ne 2 ]; then
    echo "usage: $0 LIBMPI_ABI_SO FUNCTIONS_LIST" >&2
    exit 2
fi
lib=$1
list=$2
NM=${NM:-nm}

if [ ! -r "$lib" ]; then
    echo "$0: cannot read library $lib" >&2
    exit 2
fi
if [ ! -r "$list" ]; then
    echo "$0: cannot read function list $list" >&2
    exit 2
fi

symbols=${TMPDIR:-/tmp}/check_exports.$$
trap 'rm -f "$symbols"' EXIT HUP INT TERM

if ! "$NM" -D "$lib" >"$symbols"; then
    echo "$0: $NM -D $lib failed" >&2
    exit 2
fi

# The function names of the list: the identifier before '(' on each
# declaration line (comment lines start with '#').
names=$(sed -n 's/^[^#(]*[^A-Za-z0-9_]\(MPI_[A-Za-z0-9_]*\)[[:space:]]*(.*$/\1/p' "$list")
if [ -z "$names" ]; then
    echo "$0: no function declarations found in $list" >&2
    exit 2
fi

# nm -D prints "address type name" for defined symbols and "type name" for
# undefined ones; versioned names carry "@VERSION", which is dropped.
echo "$names" | awk -v symfile="$symbols" '
    BEGIN {
        while ((getline line < symfile) > 0) {
            n = split(line, f, " ")
            if (n < 2) continue
            type = f[n - 1]; name = f[n]
            sub(/@.*/, "", name)
            kind[name] = type
            if (name ~ /^hashi_impl_/) leaked[name] = type
        }
        close(symfile)
    }
    NF == 1 {
        total++
        mpi = $1; pmpi = "P" $1
        # Test membership first: reading kind[x] would create the entry.
        if (!(pmpi in kind) || kind[pmpi] != "T") {
            printf "missing: %s is %s, expected T (defined, exported)\n", pmpi, describe(pmpi)
            bad++
        }
        if (!(mpi in kind) || kind[mpi] != "W") {
            printf "missing: %s is %s, expected W (weak alias of %s)\n", mpi, describe(mpi), pmpi
            bad++
        }
    }
    function describe(name) {
        return (name in kind) ? "of type " kind[name] : "not in the dynamic symbol table"
    }
    END {
        for (name in leaked) {
            printf "leaked: %s is in the dynamic symbol table (%s); implementations must stay hidden\n", \
                   name, leaked[name]
            bad++
        }
        if (bad) {
            printf "check_exports: %d problem(s) among %d functions\n", bad, total
            exit 1
        }
        printf "check_exports: all %d functions exported as T PMPI_* and W MPI_*\n", total
    }'
