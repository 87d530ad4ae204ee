#!/bin/sh
# selftest.sh PYTHON: the harness reports what it must. Runs test/runtests on
# harness/selftest.list with a stand-in launcher (harness/fake_mpirun) and
# checks each entry's TAP result against its name (pass_* ok, fail_* not ok,
# skip_* ok # SKIP), that the plan matches, and that the runner exits 1.
# The environment carries HASHI_DEVICE, which the runner must keep from the
# runs; harness/selftest.cells has a second cell that sets it.
python=${1:-python3}
here=$(cd "$(dirname "$0")" && pwd)
test_dir=$(dirname "$here")
out=${TMPDIR:-/tmp}/selftest.$$
# A copy, so a checkout that lost the executable bit still has a launcher.
launcher=${TMPDIR:-/tmp}/fake_mpirun.$$
trap 'rm -f "$out" "$launcher"' EXIT
cp "$here/fake_mpirun" "$launcher" && chmod +x "$launcher" || exit 1

HASHI_DEVICE=leaked "$python" "$test_dir/runtests" \
    --top-srcdir "$(dirname "$test_dir")" --top-builddir "$(dirname "$test_dir")" \
    --list "$here/selftest.list" --cells "$here/selftest.cells" --mpirun "$launcher" > "$out"
status=$?

awk -v status="$status" '
    /^1\.\.[0-9]+$/ { plan = substr($0, 4) + 0; next }
    /^(not )?ok [0-9]+ - / {
        seen++
        result = /^not ok/ ? "fail" : / # SKIP/ ? "skip" : "pass"
        line = $0; sub(/^(not )?ok [0-9]+ - /, "", line); sub(/ .*/, "", line)
        want = line; sub(/_.*/, "", want)
        names[line] = 1
        problem = ""
        if (result != want)
            problem = "reported as " result
        # A reason must not carry a "#" a TAP reader could take for a directive.
        reason = $0
        if (sub(/^[^#]* # /, "", reason) && index(reason, "#"))
            problem = "a second # in the result line"
        if (problem != "") { printf "FAIL: %s: %s\n", line, problem; bad++ }
        else printf "ok: %s %s\n", line, result
    }
    END {
        # An entry runs once per cell it names; off the default cell as entry@cell.
        if (!("pass_cell_all" in names) || !("pass_cell_all@second" in names) ||
            !("pass_cell_second@second" in names) || ("pass_cell_second" in names)) {
            printf "FAIL: the cells did not run as pass_cell_all, pass_cell_all@second, pass_cell_second@second\n"
            bad++
        }
        if (plan == 0 || plan != seen) { printf "FAIL: plan 1..%d, %d results\n", plan, seen; bad++ }
        if (status != 1) { printf "FAIL: runtests exited %d, expected 1 (some entries fail)\n", status; bad++ }
        exit bad ? 1 : 0
    }' "$out" || { echo "--- runtests output:"; cat "$out"; exit 1; }
