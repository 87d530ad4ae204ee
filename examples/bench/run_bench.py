#!/usr/bin/env python3
"""Run Hashi's benchmarks per device cell and, where installed, the same source
under Open MPI and MPICH in the same run; print one table per benchmark with
the ratio of each Hashi cell to the better peer.

  run_bench.py --prefix PREFIX [--ranks 2] [--max BYTES] [--modes latency,bw,...]
               [--cells ofi:shm,ofi:tcp] [--no-peers] [--repeat 3]

A cell is DEVICE[:FI_PROVIDER[:KEY=VALUE...]] (HASHI_* variables are set from
KEY=VALUE). Each measurement is repeated and the best value kept, because the
two vCPUs of these machines move between near and far placement every few
seconds (see docs/benchmarks.md).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HIGHER_IS_BETTER = {"latency": False, "paper": False, "bw": True, "bibw": True, "mrate": True,
                    "barrier": False, "bcast": False, "reduce": False, "allreduce": False,
                    "alltoall": False}


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


def run(cmd, env, timeout=600):
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if out.returncode != 0:
        return None, (out.stderr or out.stdout)[-400:]
    return parse_output(out.stdout), ""


def best(a, b, higher):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b) if higher else min(a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True, help="Hashi install prefix")
    ap.add_argument("--source", default=os.path.join(HERE, "p2p_bench.c"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--max", default=str(1 << 22))
    ap.add_argument("--modes", default="latency,bw,bibw,mrate")
    ap.add_argument("--cells", default="ofi:shm,ofi:tcp")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="hashi-bench-")
    impls = []  # (label, run-prefix list, binary, env)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("HASHI_", "FI_", "OMPI_", "PMIX_"))}
    hashi_bin = os.path.join(work, "bench_hashi")
    subprocess.run([os.path.join(args.prefix, "bin", "mpicc"), "-O2", args.source, "-o", hashi_bin], check=True)
    for cell in args.cells.split(","):
        parts = cell.split(":")
        env = dict(base_env, HASHI_DEVICE=parts[0])
        if len(parts) > 1 and parts[1]:
            env["FI_PROVIDER"] = parts[1]
        for kv in parts[2:]:
            k, _, v = kv.partition("=")
            env["HASHI_" + k.upper()] = v
        impls.append(("hashi " + cell, [os.path.join(args.prefix, "bin", "mpirun"), "-n", str(args.ranks)],
                      hashi_bin, env, True))
    if not args.no_peers:
        if shutil.which("mpicc.openmpi") and shutil.which("mpirun.openmpi"):
            b = os.path.join(work, "bench_ompi")
            if subprocess.run(["mpicc.openmpi", "-O2", args.source, "-o", b]).returncode == 0:
                env = dict(base_env, OMPI_MCA_btl_vader_single_copy_mechanism="cma")
                impls.append(("openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe",
                                          "-n", str(args.ranks)], b, env, False))
        if shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich"):
            b = os.path.join(work, "bench_mpich")
            if subprocess.run(["mpicc.mpich", "-O2", args.source, "-o", b]).returncode == 0:
                impls.append(("mpich", ["mpiexec.mpich", "-n", str(args.ranks)], b, dict(base_env), False))

    for mode in args.modes.split(","):
        higher = HIGHER_IS_BETTER.get(mode, False)
        results = {}
        for _ in range(args.repeat):
            # Alternate the order of implementations between repeats (placement drifts).
            for label, pre, binary, env, _h in (impls if _ % 2 == 0 else list(reversed(impls))):
                vals, err = run(pre + [binary, mode, args.max], env)
                if vals is None:
                    print(f"# {label} {mode}: failed: {err.strip()}", file=sys.stderr)
                    continue
                slot = results.setdefault(label, {})
                for size, v in vals.items():
                    slot[size] = best(slot.get(size), v, higher)
        labels = [i[0] for i in impls if i[0] in results]
        peers = [i[0] for i in impls if not i[4] and i[0] in results]
        sizes = sorted({s for r in results.values() for s in r})
        unit = {"latency": "us", "paper": "us", "bw": "MB/s", "bibw": "MB/s", "mrate": "msg/s"}.get(mode, "us")
        print(f"\n## {mode} ({unit}, {args.ranks} ranks, best of {args.repeat}; "
              f"ratio = hashi / best peer, {'>' if higher else '<'} 1 is better for hashi)")
        head = f"{'size':>9} " + " ".join(f"{l:>16}" for l in labels)
        hashi_labels = [l for l in labels if l.startswith("hashi")]
        if peers:
            head += " " + " ".join(f"{'ratio ' + l.split(' ', 1)[1]:>16}" for l in hashi_labels)
        print(head)
        for s in sizes:
            row = f"{s:>9} " + " ".join(f"{results[l].get(s, float('nan')):>16.2f}" for l in labels)
            if peers:
                peer_best = None
                for p in peers:
                    peer_best = best(peer_best, results[p].get(s), higher)
                for l in hashi_labels:
                    v = results[l].get(s)
                    row += f" {(v / peer_best) if v and peer_best else float('nan'):>16.2f}"
            print(row)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
