#!/bin/sh
# hashi_info.sh PREFIX: the installed hashi_info shows the version, devices and
# the parameter table, one parameter with --param, key:value lines with
# --parsable, the unimplemented MPI functions with --unsupported, and reports a
# bad HASHI_* value naming the valid choices while still showing the table.
# Exit 0 pass, 1 fail.

prefix=${1:?usage: hashi_info.sh PREFIX}
info=$prefix/bin/hashi_info
here=$(cd "$(dirname "$0")" && pwd)
params_def=$here/../../src/runtime/params.def
failures=0
checks=0

ok() { checks=$((checks + 1)); echo "ok - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
check() {
    desc=$1
    shift
    if "$@"; then ok "$desc"; else fail "$desc"; fi
}
# has FILE REGEX: grep -E on a file.
has() { grep -Eq -- "$2" "$1"; }

if [ ! -x "$info" ]; then
    echo "FAIL - $info is not installed"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hashi-info-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
# A clean environment for the tool: no inherited Hashi settings, no library path.
for var in $(env | sed -n 's/^\(HASHI_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$var"; done
unset LD_LIBRARY_PATH FI_PROVIDER

# ---- --parsable: the facts, machine-readable ----
if "$info" --parsable >"$work/parsable" 2>"$work/parsable.err"; then
    ok "--parsable exits 0"
else
    fail "--parsable exited with $?: $(cat "$work/parsable.err")"
fi
version=$(sed -n 's/^version:hashi://p' "$work/parsable")
check "--parsable has version:hashi ($version)" test -n "$version"
check "--parsable has version:mpi:5.0" has "$work/parsable" '^version:mpi:5\.0$'
check "--parsable has version:abi:1.0" has "$work/parsable" '^version:abi:1\.0$'
check "--parsable lists a device" has "$work/parsable" '^device:[a-z0-9_]+$'
check "--parsable lists a transport" has "$work/parsable" '^transport:[a-z0-9_]+$'
check "--parsable does not list auto as a device" sh -c "! grep -q '^device:auto$' '$work/parsable'"
check "--parsable has the libfabric version" has "$work/parsable" '^version:libfabric:[0-9]+\.[0-9]+'
check "--parsable lists libfabric providers (or says none)" has "$work/parsable" '^(provider:|providers:none:)'
check "--parsable has the topology" has "$work/parsable" '^topology:cores:[0-9]+$'
check "--parsable has param:HASHI_DEVICE:value:" has "$work/parsable" '^param:HASHI_DEVICE:value:'
check "--parsable has param:HASHI_DEVICE:default:" has "$work/parsable" '^param:HASHI_DEVICE:default:'
check "--parsable has HASHI_DEVICE's choices" has "$work/parsable" '^param:HASHI_DEVICE:choices:'
check "--version matches version:hashi" test "$("$info" --version)" = "hashi_info (Hashi) $version"

device_choices=$(sed -n 's/^param:HASHI_DEVICE:choices://p' "$work/parsable")
device_default=$(sed -n 's/^param:HASHI_DEVICE:default://p' "$work/parsable")
# The devices listed are the DEVICE parameter's choices without "auto".
devices=$(sed -n 's/^device://p' "$work/parsable" | tr '\n' ',' | sed 's/,$//')
expected=$(printf '%s\n' "$device_choices" | tr ',' '\n' | grep -vx auto | tr '\n' ',' | sed 's/,$//')
check "the devices ($devices) are HASHI_DEVICE's choices minus auto ($expected)" test "$devices" = "$expected"

# Every parameter the table declares is shown (names from params.def when the
# source tree is next to this script).
params=$(sed -n 's/^param:\([A-Z0-9_]*\):type:.*/\1/p' "$work/parsable")
if [ -f "$params_def" ]; then
    declared=$(sed -n 's/^[[:space:]]*HASHI_PARAM([[:space:]]*\([A-Z0-9_]*\).*/HASHI_\1/p' "$params_def")
    check "--parsable shows exactly the parameters of params.def" \
        test "$(echo "$params" | sort)" = "$(echo "$declared" | sort)"
fi

# ---- default output: summary and the parameter table ----
if "$info" >"$work/default" 2>"$work/default.err"; then ok "hashi_info exits 0"; else fail "hashi_info exited with $?"; fi
check "the summary shows the version $version" has "$work/default" "Hashi: $version\$"
check "the summary shows MPI 5.0" has "$work/default" 'MPI standard: 5\.0'
check "the summary shows the devices" has "$work/default" "Devices: .*$(echo "$expected" | cut -d, -f1)"
check "the summary shows the transports" has "$work/default" 'Transports: '
check "the summary shows the default device" has "$work/default" "Default device: $device_default"
check "the summary shows the libfabric providers" has "$work/default" 'Providers: '
check "the summary shows the topology" has "$work/default" 'Topology: .*cores?, .*PUs?'
missing=
for p in $params; do has "$work/default" "^  $p += " || missing="$missing $p"; done
check "the parameter table has every parameter${missing:+ (missing:$missing)}" test -z "$missing"
check "the table shows HASHI_DEVICE's default and choices" \
    has "$work/default" "^  HASHI_DEVICE += .*default $device_default; enum: "

if "$info" --all >"$work/all" 2>&1; then ok "--all exits 0"; else fail "--all exited with $?"; fi
check "--all adds the configure arguments" has "$work/all" 'Configure arguments: '
check "--all names the library loaded" has "$work/all" 'MPI library: .*libmpi_abi\.so'
check "--all still has the parameter table" has "$work/all" '^  HASHI_DEVICE += '

# ---- --param ----
for name in HASHI_DEVICE DEVICE device; do
    if "$info" --param "$name" >"$work/param" 2>&1 && has "$work/param" '^HASHI_DEVICE$' &&
       has "$work/param" "default: $device_default\$"; then
        ok "--param $name shows HASHI_DEVICE"
    else
        fail "--param $name: $(cat "$work/param")"
    fi
done
"$info" --param HASHI_DEVICE --parsable >"$work/param"
check "--param HASHI_DEVICE --parsable prints only its lines" \
    sh -c "grep -q '^param:HASHI_DEVICE:value:' '$work/param' && ! grep -qv '^param:HASHI_DEVICE:' '$work/param'"
"$info" --param DEVCE >"$work/param" 2>&1
status=$?
check "--param DEVCE exits 1 (status $status)" test "$status" -eq 1
check "--param DEVCE suggests HASHI_DEVICE: $(cat "$work/param")" has "$work/param" 'HASHI_DEVICE'

# ---- --unsupported ----
"$info" --unsupported >"$work/unsupported" 2>"$work/unsupported.err"
status=$?
check "--unsupported exits 0" test "$status" -eq 0
check "--unsupported lists MPI_Comm_spawn" has "$work/unsupported" '^MPI_Comm_spawn$'
check "--unsupported does not list MPI_Init" sh -c "! grep -qx MPI_Init '$work/unsupported'"
check "--unsupported prints only MPI names" sh -c "! grep -qv '^P\\{0,1\\}MPI_[A-Za-z0-9_]*\$' '$work/unsupported'"
count=$(wc -l <"$work/unsupported" | tr -d ' ')
check "--unsupported counts them on stderr: $(cat "$work/unsupported.err")" \
    has "$work/unsupported.err" "(^|[^0-9])$count of [0-9]+ MPI functions"

# ---- a bad value in the environment ----
HASHI_DEVICE=bogus "$info" >"$work/bad" 2>"$work/bad.err"
status=$?
check "HASHI_DEVICE=bogus: hashi_info still exits 0 (status $status)" test "$status" -eq 0
check "HASHI_DEVICE=bogus is reported: $(cat "$work/bad.err")" has "$work/bad.err" 'bogus'
choices_ok=yes
for c in $(echo "$device_choices" | tr ',' ' '); do grep -q -- "$c" "$work/bad.err" || choices_ok=no; done
check "the report names the valid choices ($device_choices)" test "$choices_ok" = yes
check "the table is still shown, HASHI_DEVICE at its default" \
    has "$work/bad" "^  HASHI_DEVICE += $device_default "
missing=
for p in $params; do has "$work/bad" "^  $p += " || missing="$missing $p"; done
check "the whole table is still shown${missing:+ (missing:$missing)}" test -z "$missing"
HASHI_DEVICE=bogus "$info" --parsable >"$work/bad.parsable" 2>/dev/null
check "--parsable marks it: source invalid, value the default" sh -c \
    "grep -qx 'param:HASHI_DEVICE:source:invalid' '$work/bad.parsable' &&
     grep -qx 'param:HASHI_DEVICE:value:$device_default' '$work/bad.parsable' &&
     grep -q '^error:.*bogus' '$work/bad.parsable'"

# ---- FI_PROVIDER filters the provider list ----
if grep -qx 'provider:tcp' "$work/parsable"; then
    FI_PROVIDER=tcp "$info" --parsable >"$work/tcp" 2>/dev/null
    if has "$work/tcp" '^provider:' && ! grep '^provider:' "$work/tcp" | grep -qv tcp; then
        ok "FI_PROVIDER=tcp lists only tcp providers"
    else
        fail "FI_PROVIDER=tcp: $(grep '^provider' "$work/tcp" | tr '\n' ' ')"
    fi
else
    echo "skip - FI_PROVIDER filter (no tcp provider here)"
fi

# ---- the man page lists the same table ----
page=$prefix/share/man/man1/hashi_info.1
if [ -f "$page" ]; then
    missing=
    for p in $params; do grep -q "^\.B $p\$" "$page" || missing="$missing $p"; done
    check "hashi_info.1 documents every parameter${missing:+ (missing:$missing)}" test -z "$missing"
else
    fail "$page is not installed"
fi

echo "$((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
