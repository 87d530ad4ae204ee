#!/bin/sh
# kill_mpirun.sh MPIRUN SLEEPER [SIGNAL [SLEEPER_ARG]]: mpirun killed with
# SIGNAL (default KILL) leaves nothing behind.
#
# Starts `MPIRUN -n 4 SLEEPER SLEEPER_ARG` (default 60: the ranks sleep; recv:
# they block in MPI_Recv) with TMPDIR set to a fresh private directory, waits
# until all four ranks have printed their pid (they do so after MPI_Init),
# sends mpirun SIGNAL, then checks that within 2 seconds:
#   - none of the four rank pids is alive (zombies do not count),
#   - no process of ours still has that TMPDIR in its environment (ranks, the
#     launcher's reaper, anything else the job started),
#   - the private TMPDIR is empty,
#   - /dev/shm has nothing of the job's (names starting with its job
#     directory's name) that was not there before.
# A signal mpirun can catch (anything but KILL) must also make it exit by
# itself within 5 seconds, with the status of a job whose ranks that signal
# killed: 128 + the signal number (mpirun forwards it to the ranks).
# SIGNAL KILLCMD: SIGKILL to every process whose command line is mpirun's,
# as `pkill -9 -f '<the mpirun command>'` does: the reaper (a fork of
# mpirun) must not be among them, or nobody cleans up.
# Exit 0 pass, 1 fail, 77 skip (no /proc).

mpirun=$1
sleeper=$2
signal=${3:-KILL}
sleeper_arg=${4:-60}
if [ -z "$mpirun" ] || [ -z "$sleeper" ]; then
    echo "usage: $0 MPIRUN SLEEPER [SIGNAL [SLEEPER_ARG]]" >&2
    exit 2
fi
by_command_line=
if [ "$signal" = KILLCMD ]; then
    by_command_line=1
    signal=KILL
fi
# The signal's number (dash's `kill -l` only maps numbers to names).
signum=
i=1
while [ $i -lt 65 ]; do
    [ "$(kill -l $i 2>/dev/null)" = "$signal" ] && signum=$i && break
    i=$((i + 1))
done
[ -n "$signum" ] || { echo "$0: unknown signal $signal (give its name without SIG)" >&2; exit 2; }
if [ ! -r /proc/self/environ ]; then
    echo "no /proc: cannot look for leftover processes"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kill_mpirun.XXXXXX") || exit 1
jobtmp=$work/jobtmp
mkdir "$jobtmp" || exit 1
out=$work/stdout
mpirun_pid=

fail() {
    echo "--- job stdout:"
    cat "$out" 2>/dev/null
    echo "--- job stderr:"
    cat "$work/stderr" 2>/dev/null
    [ -n "$mpirun_pid" ] && kill -9 "$mpirun_pid" 2>/dev/null
    for p in $(job_pids); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$work"
    echo "FAIL: $*" >&2
    exit 1
}

# Pids of live (non-zombie) processes whose initial environment has our TMPDIR.
job_pids() {
    grep -lszxF "TMPDIR=$jobtmp" /proc/[0-9]*/environ | while read -r f; do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" != "$$" ] && alive "$pid" && echo "$pid"
    done
}

alive() {
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ]
}

shm_before=$(ls -A /dev/shm 2>/dev/null | sort)

TMPDIR=$jobtmp "$mpirun" -n 4 "$sleeper" "$sleeper_arg" > "$out" 2> "$work/stderr" < /dev/null &
mpirun_pid=$!
# The job's shared-memory names start with its job directory's name,
# hashi-UID.PID.RANDOM (emu segments, libfabric shm endpoints): only those
# are this job's (other jobs of the user may run at the same time).
job_prefix="hashi-$(id -u).$mpirun_pid."

# Wait (up to 20 s) for the four ranks to report.
tries=0
# (the background job may not have created $out yet: read it through cat)
while [ "$(cat "$out" 2>/dev/null | grep -c '^sleeper rank')" -lt 4 ]; do
    kill -0 "$mpirun_pid" 2>/dev/null || fail "mpirun exited before all ranks started"
    tries=$((tries + 1))
    [ $tries -gt 200 ] && fail "the four ranks did not start within 20 s"
    sleep 0.1
done
rank_pids=$(sed -n 's/^sleeper rank [0-9]* of [0-9]* pid \([0-9]*\)$/\1/p' "$out")
[ "$(echo "$rank_pids" | wc -w)" -eq 4 ] || fail "could not read four rank pids"
echo "ranks running: $(echo $rank_pids); sending mpirun (pid $mpirun_pid) SIG$signal"

if [ -n "$by_command_line" ]; then
    # every process of ours whose command line is mpirun's (NULs as newlines)
    mpirun_cmd=$(tr '\0' '\n' < "/proc/$mpirun_pid/cmdline")
    victims=
    for f in /proc/[0-9]*/cmdline; do
        pid=${f#/proc/}
        pid=${pid%/cmdline}
        [ "$pid" = "$$" ] && continue
        [ "$(tr '\0' '\n' < "$f" 2>/dev/null)" = "$mpirun_cmd" ] && victims="$victims $pid"
    done
    echo "same command line as mpirun:$victims"
    kill -s KILL $victims
else
    kill -s "$signal" "$mpirun_pid"
fi
killed_at=$(date +%s%N)
if [ "$signal" != KILL ]; then
    # mpirun must end by itself: wait for it in the background with a bound.
    tries=0
    while kill -0 "$mpirun_pid" 2>/dev/null; do
        state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$mpirun_pid/status" 2>/dev/null)
        [ "$state" = Z ] && break
        tries=$((tries + 1))
        [ $tries -gt 100 ] && fail "mpirun still running 5 s after SIG$signal"
        sleep 0.05
    done
    wait "$mpirun_pid"
    status=$?
    mpirun_pid=
    exit_ms=$((($(date +%s%N) - killed_at) / 1000000))
    [ "$status" -eq $((128 + signum)) ] ||
        fail "mpirun exited with status $status after SIG$signal, expected $((128 + signum))"
    echo "mpirun exited with status $status ${exit_ms} ms after SIG$signal"
else
    wait "$mpirun_pid" 2>/dev/null
    mpirun_pid=
fi

# Everything must be gone within 2 s.
while :; do
    left=
    for p in $rank_pids; do alive "$p" && left="$left $p"; done
    others=$(job_pids)
    files=$(ls -A "$jobtmp")
    elapsed_ms=$((($(date +%s%N) - killed_at) / 1000000))
    [ -z "$left" ] && [ -z "$others" ] && [ -z "$files" ] && break
    if [ $elapsed_ms -gt 2000 ]; then
        [ -n "$left" ] && fail "ranks still running 2 s after mpirun was killed:$left"
        [ -n "$others" ] && fail "processes of the job still running 2 s after mpirun was killed:" $others
        fail "files left in the job's TMPDIR 2 s after mpirun was killed: $(echo $files)"
    fi
    sleep 0.05
done
echo "ranks and helpers gone, TMPDIR empty ${elapsed_ms} ms after the kill"

shm_after=$(ls -A /dev/shm 2>/dev/null | sort)
new_shm=$(printf '%s\n' "$shm_after" | grep -vxF "$shm_before" | while read -r f; do
    case "$f" in "$job_prefix"*) [ -O "/dev/shm/$f" ] && echo "$f" ;; esac
done)
[ -n "$new_shm" ] && fail "new files in /dev/shm: $(echo $new_shm)"
echo "nothing new in /dev/shm"

rm -rf "$work"
exit 0
