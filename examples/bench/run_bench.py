#!/usr/bin/env python3
"""Run Hashi's benchmarks per device cell and, where installed, the same source
under Open MPI and MPICH in the same run; print one table per benchmark with
the ratio of each Hashi cell to the better peer.

  run_bench.py [p2p] --prefix PREFIX [--ranks 2] [--max BYTES] [--modes latency,bw,...]
  run_bench.py coll  --prefix PREFIX [--ranks 2,4,8] [--modes barrier,bcast,...]
  run_bench.py rma   --prefix PREFIX [--ranks 2] [--max BYTES] [--modes put_lat,get_lat,...]
  run_bench.py io     --prefix PREFIX [--ranks 4] [--max BLOCK] [--modes write,read,...]
  run_bench.py launch --prefix PREFIX [--ranks 8] [--runs 15]
  common: [--cells CELL,...] [--no-peers] [--repeat N]

p2p runs p2p_bench.c (ping-pong, bandwidth, message rate); coll runs
coll_bench.c (barrier, bcast, reduce, allreduce, alltoall, allgather; by
--modes also gather, scatter, scan, exscan, reduce_scatter (block), ibarrier,
ibcast, iallreduce, igather, iscatter, iscan: Ixxx + Wait, pbarrier:
Start + Wait of a persistent barrier, alltoallv, gatherv and neighbor: a
periodic ring's MPI_Neighbor_alltoall, ialltoallv and ineighbor: their
Ixxx + Wait, pneighbor: Start + Wait of a MPI_Neighbor_alltoall_init
request) at each rank count; rma runs rma_bench.c
(put, get, accumulate and fetch-and-op latency with a flush each, put
bandwidth: 64 puts per flush); io runs io_bench.c (aggregate MB/s of
write_at_all / read_at_all on contiguous regions of one shared file, and
write_all / read_all through a view interleaving the ranks' blocks,
64 MiB per rank, per block size up to --max); launch times `mpirun -n N hello` with hyperfine.

A cell is either the name of a line of test/cells (default, ofi_tcp,
dimmnet_emu, ...; `all` is every line) or DEVICE[:FI_PROVIDER[:KEY=VALUE...]]
(HASHI_* variables are set from KEY=VALUE, e.g. dimmnet::transport=emu).
Each measurement is repeated and the best value kept, because the two vCPUs
of these machines move between near and far placement every few seconds
(see docs/benchmarks.md). Open MPI runs with --oversubscribe and its own
choice of pml and btl.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS_FILE = os.path.join(HERE, "..", "..", "test", "cells")
HIGHER_IS_BETTER = {"latency": False, "paper": False, "bw": True, "bibw": True, "mrate": True,
                    "barrier": False, "bcast": False, "reduce": False, "allreduce": False,
                    "alltoall": False, "allgather": False, "ibarrier": False, "ibcast": False,
                    "iallreduce": False, "pbarrier": False, "gather": False, "scatter": False,
                    "scan": False, "exscan": False, "reduce_scatter": False, "igather": False, "iscatter": False,
                    "iscan": False, "alltoallv": False, "gatherv": False, "neighbor": False, "ialltoallv": False, "ineighbor": False,
                    "pneighbor": False, "put_lat": False, "get_lat": False, "put_bw": True, "acc_lat": False,
                    "fop_lat": False, "write": True, "read": True, "write_strided": True,
                    "read_strided": True}
UNITS = {"bw": "MB/s", "bibw": "MB/s", "mrate": "msg/s", "put_bw": "MB/s", "write": "MB/s", "read": "MB/s",
         "write_strided": "MB/s", "read_strided": "MB/s"}  # everything else: us
DEFAULTS = {  # what: (source, ranks, modes, cells, repeat)
    "p2p": ("p2p_bench.c", "2", "latency,bw,bibw,mrate", "ofi:shm,ofi:tcp", 3),
    "coll": ("coll_bench.c", "2,4,8", "barrier,bcast,reduce,allreduce,alltoall,allgather", "all", 2),
    "rma": ("rma_bench.c", "2", "put_lat,get_lat,put_bw,acc_lat,fop_lat", "all", 2),
    "io": ("io_bench.c", "4", "write,read,write_strided,read_strided", "default", 2),
    "launch": (os.path.join("..", "hello.c"), "8", "", "all", 1),
}


def parse_output(text):
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            try:
                values[int(parts[0])] = float(parts[1])
            except ValueError:
                pass
    return values


def run(cmd, env, timeout=300):
    """The "size value" lines of one benchmark run. A run that times out keeps
    the sizes it finished (the benchmarks print each size as it completes):
    oversubscribed peers can take seconds per call at the largest sizes."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM first: every launcher then stops its ranks and helpers
        # (some live outside its process group); SIGKILL only if it ignores that.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            stdout, _ = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, _ = proc.communicate()
        return (parse_output(stdout) or None), f"timed out after {timeout} s"
    if proc.returncode != 0:
        return None, (stderr or stdout)[-400:]
    return parse_output(stdout), ""


def best(a, b, higher):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b) if higher else min(a, b)


def read_cells_file():
    """name -> environment settings, from test/cells (see docs/testing.md)."""
    cells = {}
    try:
        with open(CELLS_FILE) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                fields = [x.strip() for x in line.split("|")]
                env = {}
                for var, value in (("HASHI_DEVICE", fields[1]), ("HASHI_TRANSPORT", fields[2])):
                    if value != "auto":
                        env[var] = value
                if fields[3] != "-":
                    env["FI_PROVIDER"] = fields[3]
                for kv in fields[4:]:
                    for word in kv.split():
                        k, _, v = word.partition("=")
                        env[k] = v
                cells[fields[0]] = env
    except OSError:
        pass
    return cells


def cell_settings(spec, known):
    """(label, environment settings) of the cells named by --cells."""
    out = []
    for cell in spec.split(","):
        if cell == "all":
            out += list(known.items())
        elif cell in known:
            out.append((cell, known[cell]))
        else:
            parts = cell.split(":")
            env = {"HASHI_DEVICE": parts[0]}
            if len(parts) > 1 and parts[1]:
                env["FI_PROVIDER"] = parts[1]
            for kv in parts[2:]:
                k, _, v = kv.partition("=")
                env["HASHI_" + k.upper()] = v
            out.append((cell, env))
    return out


def build(compiler, source, binary):
    return subprocess.run([compiler, "-O2", source, "-o", binary]).returncode == 0


def implementations(args, source, work):
    """(label, launcher argv before '-n N', binary, env, is_hashi) of every
    implementation to measure: one per Hashi cell, then the peers."""
    impls = []
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("HASHI_", "FI_", "OMPI_", "PMIX_"))}
    hashi_bin = os.path.join(work, "bench_hashi")
    if not build(os.path.join(args.prefix, "bin", "mpicc"), source, hashi_bin):
        sys.exit("run_bench: cannot build %s with Hashi's mpicc" % source)
    for label, settings in cell_settings(args.cells, read_cells_file()):
        impls.append(("hashi " + label, [os.path.join(args.prefix, "bin", "mpirun")], hashi_bin,
                      dict(base_env, **settings), True))
    peers = set(args.peers.split(",")) if args.peers else {"openmpi", "mpich"}
    if not args.no_peers:
        if "openmpi" in peers and shutil.which("mpicc.openmpi") and shutil.which("mpirun.openmpi"):
            b = os.path.join(work, "bench_ompi")
            if build("mpicc.openmpi", source, b):
                env = dict(base_env, OMPI_MCA_btl_vader_single_copy_mechanism="cma")
                impls.append(("openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"], b, env, False))
        if "mpich" in peers and shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich"):
            b = os.path.join(work, "bench_mpich")
            if build("mpicc.mpich", source, b):
                impls.append(("mpich", ["mpiexec.mpich"], b, dict(base_env), False))
    return impls


def print_table(title, results, impls, higher, fmt="{:>16.2f}"):
    labels = [i[0] for i in impls if i[0] in results]
    peers = [i[0] for i in impls if not i[4] and i[0] in results]
    hashi_labels = [l for l in labels if l.startswith("hashi")]
    sizes = sorted({s for r in results.values() for s in r})
    print("\n## " + title)
    head = f"{'size':>9} " + " ".join(f"{l:>16}" for l in labels)
    if peers:
        head += " " + " ".join(f"{'ratio ' + l.split(' ', 1)[1]:>16}" for l in hashi_labels)
    print(head)
    for s in sizes:
        row = f"{s:>9} " + " ".join(fmt.format(results[l].get(s, float('nan'))) for l in labels)
        if peers:
            peer_best = None
            for p in peers:
                peer_best = best(peer_best, results[p].get(s), higher)
            for l in hashi_labels:
                v = results[l].get(s)
                row += f" {(v / peer_best) if v and peer_best else float('nan'):>16.2f}"
        print(row)
    sys.stdout.flush()


def bench_tables(args, impls, ranks_list, modes):
    """p2p and coll: one table per (rank count, mode), best of --repeat runs."""
    for ranks in ranks_list:
        for mode in modes:
            higher = HIGHER_IS_BETTER.get(mode, False)
            results = {}
            for rep in range(args.repeat):
                # Alternate the order of implementations between repeats (placement drifts).
                for label, pre, binary, env, _h in (impls if rep % 2 == 0 else list(reversed(impls))):
                    vals, err = run(pre + ["-n", str(ranks), binary, mode, args.max], env)
                    if err:
                        print(f"# {label} {mode} n={ranks}: failed: {err.strip()}", file=sys.stderr)
                    if vals is None:
                        continue
                    slot = results.setdefault(label, {})
                    for size, v in vals.items():
                        slot[size] = best(slot.get(size), v, higher)
            print_table(f"{mode} ({UNITS.get(mode, 'us')}, {ranks} ranks, best of {args.repeat}; ratio = hashi / "
                        f"best peer, {'>' if higher else '<'} 1 is better for hashi)", results, impls, higher)


def launch_times(args, impls, ranks_list, work):
    """hyperfine over mpirun -n N hello: mean, median and min in ms."""
    if not shutil.which("hyperfine"):
        sys.exit("run_bench: launch needs hyperfine")
    for ranks in ranks_list:
        print(f"\n## launch: mpirun -n {ranks} hello (ms, hyperfine, {args.runs} runs after 2 warm-up runs)")
        print(f"{'implementation':>24} {'mean':>9} {'median':>9} {'min':>9} {'max':>9}")
        for label, pre, binary, env, _h in impls:
            out = os.path.join(work, "hyperfine.json")
            cmd = " ".join(pre + ["-n", str(ranks), binary])
            res = subprocess.run(["hyperfine", "--style", "none", "--warmup", "2", "--runs", str(args.runs),
                                  "--export-json", out, cmd], env=env, capture_output=True, text=True)
            if res.returncode != 0:
                print(f"# {label}: failed: {(res.stderr or res.stdout)[-300:].strip()}", file=sys.stderr)
                continue
            with open(out) as f:
                r = json.load(f)["results"][0]
            print(f"{label:>24} " + " ".join(f"{r[k] * 1000:>9.1f}" for k in ("mean", "median", "min", "max")))
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", choices=sorted(DEFAULTS), default="p2p")
    ap.add_argument("--prefix", required=True, help="Hashi install prefix")
    ap.add_argument("--source", help="benchmark source (default: the one for WHAT)")
    ap.add_argument("--ranks", help="rank counts, comma-separated")
    ap.add_argument("--max", default=str(1 << 22), help="largest message size in bytes")
    ap.add_argument("--modes", help="benchmarks to run, comma-separated")
    ap.add_argument("--cells", help="Hashi cells, comma-separated (see above)")
    ap.add_argument("--no-peers", action="store_true", help="Hashi only")
    ap.add_argument("--peers", help="peers to run, comma-separated (openmpi,mpich; default both). Under "
                    "chrt -f, leave out mpich when ranks oversubscribe the cores: its ranks never yield, "
                    "so with a real-time policy the ones left without a core never run")
    ap.add_argument("--repeat", type=int, help="runs per measurement; the best is kept")
    ap.add_argument("--runs", type=int, default=15, help="launch: hyperfine runs")
    args = ap.parse_args()
    source, ranks, modes, cells, repeat = DEFAULTS[args.what]
    args.source = args.source or os.path.join(HERE, source)
    args.ranks = args.ranks or ranks
    args.modes = args.modes or modes
    args.cells = args.cells or cells
    args.repeat = args.repeat or repeat

    work = tempfile.mkdtemp(prefix="hashi-bench-")
    try:
        impls = implementations(args, args.source, work)
        ranks_list = [int(r) for r in args.ranks.split(",")]
        if args.what == "launch":
            launch_times(args, impls, ranks_list, work)
        else:
            bench_tables(args, impls, ranks_list, args.modes.split(","))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
