#!/usr/bin/env python3
"""The "nothing written on error" replay (docs/hardening.md).

cli_no_files.py COLLTUNE SOURCE_DIR [RUNS [SEED]]

Runs the colltune binary RUNS times (default 300) on hostile arguments and files, made with a
fixed seed from the sample files under tests/ and examples/ and from extreme option values, for
every command that writes files: calibrate -o, tune --out, sweep --out, compare --html,
simulate --trace, and --json FILE on each. Every run gets a fresh output directory (also its
working directory), which holds one planted plain file, "afile", so that "afile/x.json" is an
unwritable target. A run fails the replay when
  - it exits with anything but 0 or 2 (3 is an internal error, a signal a crash, 124 a hang), or
  - it exits 2 and the output directory holds anything but the planted file afterwards, or
    without the one line "colltune: error: ..." on its output, or
  - it exits 0 and a JSON file it wrote holds NaN or Infinity (the finite-answer oracle).
The failing command line and its output are printed; its inputs are kept under the printed
directory for reproduction.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

SEED = 23
# A run that does not answer is a failure: 60 s, longer in sanitizer builds (COLLTUNE_EXPECT_TIMEOUT).
TIMEOUT_S = int(os.environ.get("COLLTUNE_EXPECT_TIMEOUT", "60"))

# Sample inputs (relative to the source folder), by the kind of file a command takes.
SAMPLES = {
    # Measurements, each with a machine it fits: (topology spec, file).
    "oci": ["tests/data/nccl-tests-logs/oci-a100-2node-roce-allreduce.txt"],
    "pcie": ["tests/data/nccl-tests-logs/autodl-2080ti-2gpu-pcie-allreduce.txt"],
    "bench": ["tests/fuzz/corpus/calibrate_bench_json/bench-4ranks.json"],
    "timeline": ["examples/workloads/horovod_timeline_small.json"],
    "workload": ["examples/workloads/example_workload.json"],
    "topology": ["examples/topologies/workstation-2gpu.json",
                 "examples/topologies/hypothetical-2node-800g.json"],
}

EXTREMES = ["0", "-1", "1e308", "5e-324", "nan", "inf", "", "18446744073709551616", "1:1", "0B", "3B",
            "1e-320", "2^65", "99999999999", "1,1", "=", "x", "1KiB:1B"]

# Output targets: good ones, and ones that cannot be written ("afile" is a plain file).
GOOD_OUT = {"file": ["out.json", "sub.json"], "dir": ["outdir", "outdir2"]}
BAD_OUT = ["afile/x.json", "afile", "missing/dir/x.json", ".", ""]


def mutate(data, rng):
    """A few random edits: bit flips, extreme numbers, truncation, deletion, duplication."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if not data:
            break
        at = rng.randrange(len(data))
        if op == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            digits = [i for i in range(at, min(len(data), at + 400)) if chr(data[i]).isdigit()]
            if digits:
                i = digits[0]
                j = i
                while j < len(data) and (chr(data[j]).isdigit() or data[j] == ord(".")):
                    j += 1
                data[i:j] = rng.choice(["0", "-1", "1e308", "1e400", "5e-324", "nan", "4294967296"]).encode()
        elif op == 2:
            del data[at:]
        elif op == 3:
            del data[at:at + rng.randrange(1, 64)]
        else:
            data[at:at] = data[at:at + rng.randrange(1, 64)] * rng.randrange(1, 8)
    return bytes(data)


def hostile_value(rng, good):
    return rng.choice(EXTREMES) if rng.random() < 0.35 else good


def out_target(rng, kind):
    return rng.choice(BAD_OUT) if rng.random() < 0.35 else rng.choice(GOOD_OUT[kind])


def maybe_json(rng, args):
    """--json FILE on a fraction of runs, itself sometimes unwritable."""
    if rng.random() < 0.5:
        args += ["--json", out_target(rng, "file")]
    return args


def input_file(rng, src, indir, kind, n):
    """A sample of `kind`, mutated on 60 % of runs, written to the input folder."""
    with open(os.path.join(src, rng.choice(SAMPLES[kind])), "rb") as f:
        data = f.read()
    if rng.random() < 0.6:
        data = mutate(data, rng)
    path = os.path.join(indir, "%s-%d%s" % (kind, n, ".txt" if kind in ("oci", "pcie") else ".json"))
    with open(path, "wb") as f:
        f.write(data)
    return path


# Measurement files and the machines they fit. A fit on the 2-node DGX takes seconds, so
# calibrate runs on the small ones; compare (milliseconds) on all.
SMALL_MEASURED = [("pcie-box:gpus=2", "pcie"), ("flat:ranks=4", "bench")]
MEASURED = SMALL_MEASURED + [("dgx-a100:nodes=2,transport=roce", "oci")]


def calibrate(rng, f):
    topo, kind = rng.choice(SMALL_MEASURED)
    if rng.random() < 0.2:
        topo = hostile_value(rng, rng.choice(["dgx-h100:nodes=2", "flat:ranks=2", f("topology")]))
    return maybe_json(rng, ["calibrate", "--topology", topo, f(kind), "-o", out_target(rng, "file")])


def compare(rng, f):
    topo, kind = rng.choice(MEASURED)
    if rng.random() < 0.2:
        topo, kind = "dgx-h100:nodes=4", "timeline"
    args = ["compare", "--topology", topo, f(kind), "--html", out_target(rng, "file")]
    if rng.random() < 0.3:
        args += ["--cycle-time", hostile_value(rng, "5ms")]
    return maybe_json(rng, args)


def tune(rng, f):
    model = rng.choice(["resnet50", f("workload"), f("timeline")])
    args = ["tune", "--topology", rng.choice(["flat:ranks=4", "dgx-h100:nodes=2"]), "--model", model,
            "--out", out_target(rng, "dir"), "--strategy", "random", "--budget", hostile_value(rng, "4")]
    if rng.random() < 0.3:
        args += ["--cost", "fusion_copy_gbps=" + hostile_value(rng, "50")]
    return maybe_json(rng, args)


def sweep(rng, f):
    if rng.random() < 0.7:  # bus bandwidth against size: cheap, so most runs
        vary = rng.choice(["nodes=1,2", "nic_gbit=100,400", "nodes=" + rng.choice(EXTREMES)])
        what = ["--bytes", hostile_value(rng, "1KiB:4KiB"), "--algo", rng.choice(["ring", "nccl", "nccl_nvls"])]
    else:
        vary = rng.choice(["nodes=1,2", "batch=8,16", "batch=" + rng.choice(EXTREMES)])
        what = ["--model", "resnet50"]
        if rng.random() < 0.5:
            what += ["--cost", "fusion_copy_gbps=" + hostile_value(rng, "50")]
    args = ["sweep", "--topology", "dgx-h100", *what, "--vary", vary, "--out", out_target(rng, "dir")]
    return maybe_json(rng, args)


def simulate(rng, f):
    topo = rng.choice(["flat:ranks=8", "dgx-h100", f("topology")])
    args = ["simulate", "--topology", topo, "--algo", rng.choice(["ring", "tree", "nccl", "rhd"]),
            "--bytes", hostile_value(rng, "1MiB"), "--trace", out_target(rng, "file")]
    return maybe_json(rng, args)


def step(rng, f):
    args = ["step", "--topology", rng.choice(["flat:ranks=4", "dgx-h100:nodes=2", f("topology")]),
            "--model", rng.choice(["resnet50", f("workload"), f("timeline")])]
    extra = rng.choice([["--cost", "fusion_copy_gbps=" + hostile_value(rng, "50")],
                        ["--cycle-time", hostile_value(rng, "5ms")],
                        ["--slow", "0:" + hostile_value(rng, "1.5") + "x"],
                        ["--jitter", "lognormal:" + hostile_value(rng, "0.1"), "--steps", hostile_value(rng, "20")],
                        ["--fail", "1:" + hostile_value(rng, "5"), "--run-steps", "10",
                         "--storage-gbps", hostile_value(rng, "2")],
                        ["--batches", hostile_value(rng, "10"), "--uneven", "0:" + hostile_value(rng, "5")]])
    return ["step", *args[1:], *extra, "--json", out_target(rng, "file")]


COMMANDS = [calibrate, compare, tune, sweep, simulate, step]


def listing(outdir):
    found = []
    for root, dirs, files in os.walk(outdir):
        for name in dirs + files:
            found.append(os.path.relpath(os.path.join(root, name), outdir))
    return sorted(p for p in found if p != "afile")


def json_outputs(args, outdir):
    """The JSON files a run wrote: --json FILE, and *.json in an --out folder."""
    files = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--json"]
    dirs = [args[i + 1].rstrip("/") + "/" for i, a in enumerate(args[:-1]) if a == "--out"]
    for path in listing(outdir):
        if path in files or (path.endswith(".json") and any(path.startswith(d) for d in dirs)):
            if os.path.isfile(os.path.join(outdir, path)):
                yield path


def non_finite_json(args, outdir):
    """The JSON files the run wrote that hold NaN or Infinity (or do not parse)."""
    def refuse(token):
        raise ValueError(token)
    bad = []
    for path in json_outputs(args, outdir):
        try:
            with open(os.path.join(outdir, path)) as f:
                json.load(f, parse_constant=refuse)
        except (ValueError, UnicodeDecodeError) as e:
            bad.append("%s (%s)" % (path, e))
    return bad


def problem(rc, out, args, outdir):
    """Why a run fails the replay, or None."""
    if rc not in (0, 2):
        return "exit %d" % rc
    if rc == 0:
        bad = non_finite_json(args, outdir)
        return "exit 0 with %s" % bad if bad else None
    if listing(outdir):
        return "exit 2 left %s" % listing(outdir)
    if "colltune: error: " not in out:
        return "exit 2 without 'colltune: error: ...'"
    return None


def run_one(binary, args, outdir):
    try:
        p = subprocess.run([binary] + args, cwd=outdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=TIMEOUT_S)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return 124, "(no answer within %d s)" % TIMEOUT_S


def main():
    binary, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    rng_seed = int(sys.argv[4]) if len(sys.argv) > 4 else SEED
    rng = random.Random(rng_seed)
    work = tempfile.mkdtemp(prefix="colltune-nofiles-")
    failures, counts = [], {}
    for n in range(runs):
        indir, outdir = os.path.join(work, "in%d" % n), os.path.join(work, "out%d" % n)
        os.makedirs(indir)
        os.makedirs(outdir)
        with open(os.path.join(outdir, "afile"), "w") as f:
            f.write("planted\n")
        command = COMMANDS[n % len(COMMANDS)]
        args = command(rng, lambda kind: input_file(rng, src, indir, kind, n))
        rc, out = run_one(binary, args, outdir)
        key = (command.__name__, rc)
        counts[key] = counts.get(key, 0) + 1
        why = problem(rc, out, args, outdir)
        if why:
            failures.append("run %d (%s, in %s): colltune %s\n%s" % (n, why, outdir, " ".join(args), out.strip()))
            continue
        shutil.rmtree(indir)
        shutil.rmtree(outdir)
    print("cli_no_files: %d runs (seed %d); runs per command and exit status:" % (runs, rng_seed))
    for (name, rc), k in sorted(counts.items()):
        print("  %-9s exit %d: %d" % (name, rc, k))
    for f in failures:
        print("FAIL " + f)
    if not failures:
        shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
