#!/usr/bin/env python3
"""The published-log validation of docs/calibration.md, through the commands a user types.

For each nccl-tests log of tests/data/nccl-tests-logs (sources in its SOURCES.md): calibrate on
every other size (colltune calibrate -o cal.json), then predict each size left out with
colltune simulate --algo nccl on cal.json, and check that colltune compare on cal.json prints
the same numbers. Prints a Markdown table: per log, calibrate's own median |error| on the rows
it fitted, the uncalibrated held-out median and max |error|, the held-out ones of compare and of
simulate on the calibrated file (which must agree), and their largest disagreement on one row.

With --regret: for each group of logs of one machine under different NCCL settings, calibrate
on one run and predict, per size, which setting is faster (simulate --algo nccl with each run's
NCCL_ALGO); against the measured faster one: the fraction of sizes picked right (sizes where
both settings run the same pick, priced equal, are counted apart), the measured time lost by
the wrong picks, and how far the other runs' times were predicted.

With --tables: calibrate on each whole log, tune --model resnet50 on the calibrated file, and
print the rows of the NCCL table tune writes (docs/calibration.md, "What tune writes").

Usage: scripts/validate-calibration.py [path/to/colltune] [--regret | --tables] [--verbose]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOGS = os.path.join(HERE, "..", "tests", "data", "nccl-tests-logs")

# log | topology (as SOURCES.md describes the machine) | the run's NCCL settings (simulate reads no log: the
# settings a log states are given to it here, and to calibrate and compare alike)
CASES = [
    ("autodl-2080ti-2gpu-pcie-allreduce.txt", "pcie-box:gpus=2", []),
    ("autodl-2080ti-2gpu-pcie-allgather.txt", "pcie-box:gpus=2", ["--collective", "allgather"]),
    ("oci-a100-2node-roce-allreduce.txt", "dgx-a100:nodes=2,transport=roce", []),
    ("gcp-a3mega-h100-2node-tcpxo-allreduce.txt", "dgx-h100:nodes=2,nic_gbit=200,transport=tcp", []),
    ("nccl-tests-290-h100-1node-nvswitch-allreduce.txt", "dgx-h100", []),
    ("nccl-tests-290-h100-2node-ib-allreduce.txt", "dgx-h100:nodes=2", []),
    ("nccl-tests-290-h100-2node-ib-allreduce-algo-ring.txt", "dgx-h100:nodes=2", ["--nccl-algo", "Ring"]),
    ("nccl-tests-309-hgx-h100-2node-ib-allreduce.txt", "dgx-h100:nodes=2", []),
    ("nccl-tests-309-h100-vm-4node-ib-allreduce.txt", "dgx-h100:nodes=4", []),
    ("nccl-tests-309-h100-2node-ib-allreduce-default.txt", "dgx-h100:nodes=2", []),
    ("nccl-tests-309-h100-2node-ib-allreduce-algo-ring-minctas24-qps2.txt", "dgx-h100:nodes=2",
     ["--nccl-algo", "Ring", "--nccl-env", "NCCL_MIN_CTAS=24"]),
    ("nccl-tests-309-h100-4node-ib-allreduce-default.txt", "dgx-h100:nodes=4", []),
    ("nccl-tests-309-h100-8node-ib-allreduce-default.txt", "dgx-h100:nodes=8", []),
    ("nccl-tests-309-h100-8node-ib-allreduce-minctas24-qps2.txt", "dgx-h100:nodes=8",
     ["--nccl-env", "NCCL_MIN_CTAS=24"]),
    ("nccl-tests-319-hgx-h100-2node-ib-allreduce-default.txt", "dgx-h100:nodes=2", []),
    ("nccl-tests-319-hgx-h100-2node-ib-allreduce-algo-ring.info-lines-removed.txt", "dgx-h100:nodes=2",
     ["--nccl-algo", "Ring"]),
    ("together-h100-1node-allreduce-ring.txt", "dgx-h100", ["--nccl-algo", "Ring"]),
    ("together-h100-1node-allreduce-nvls.txt", "dgx-h100", []),
    ("together-h100-1node-allreduce-collnet-sharp.txt", "dgx-h100", ["--nccl-algo", "^NVLS"]),
    ("together-h100-1node-allreduce-nvls-collnet.txt", "dgx-h100", []),
    ("nccl-2441-h100nvl-2node-slingshot-allreduce-good-commit.txt", "nccl-2441-topo-good-commit.xml:nodes=2", []),
    ("nccl-2441-h100nvl-2node-slingshot-allreduce-bad-commit.txt", "nccl-2441-topo-bad-commit.xml:nodes=2", []),
    ("nccl-2441-h100nvl-2node-slingshot-allreduce-bad-commit-cpubind-ldoms.txt", "nccl-2441-topo-bad-commit.xml:nodes=2",
     []),
]

# Same machine, different NCCL settings: (group, topology, [(log, settings as simulate takes them)]).
GROUPS = [
    ("nccl-tests#290, 2 x 8 H100, NDR IB", "dgx-h100:nodes=2",
     [("nccl-tests-290-h100-2node-ib-allreduce.txt", []),
      ("nccl-tests-290-h100-2node-ib-allreduce-algo-ring.txt", ["--nccl-algo", "Ring"])]),
    ("nccl-tests#309, 2 x 8 H100, IB 400G", "dgx-h100:nodes=2",
     [("nccl-tests-309-h100-2node-ib-allreduce-default.txt", []),
      ("nccl-tests-309-h100-2node-ib-allreduce-algo-ring-minctas24-qps2.txt",
       ["--nccl-algo", "Ring", "--nccl-env", "NCCL_MIN_CTAS=24"])]),
    ("nccl-tests#319, 2 x 8 HGX H100, IB 400G", "dgx-h100:nodes=2",
     [("nccl-tests-319-hgx-h100-2node-ib-allreduce-default.txt", []),
      ("nccl-tests-319-hgx-h100-2node-ib-allreduce-algo-ring.info-lines-removed.txt", ["--nccl-algo", "Ring"])]),
    ("together, 1 x 8 H100 SXM", "dgx-h100",
     [("together-h100-1node-allreduce-nvls.txt", []),
      ("together-h100-1node-allreduce-ring.txt", ["--nccl-algo", "Ring"])]),
    # Two NCCL builds, not two settings: the later one classes the AMD EPYC 9534 as Zen 3/4.
    ("nccl#2441, 2 x 2 H100 NVL, Slingshot", "nccl-2441-topo-good-commit.xml:nodes=2",
     [("nccl-2441-h100nvl-2node-slingshot-allreduce-good-commit.txt", []),
      ("nccl-2441-h100nvl-2node-slingshot-allreduce-bad-commit.txt", ["--cpu", "amd_zen34"])]),
]

# Predictions within this fraction of each other are a tie (both settings run the same pick).
TIE = 0.005

ROW = re.compile(r"^\s*(?:\d+:\s+)?(\d+)\s+\d+\s+\w+\s+\w+\s+(?:-?\d+\s+)?([\d.]+)\s")


def topology_path(topology):
    """A topology file of the logs' folder (an NCCL dump written from a thread's facts) by its full path."""
    name = topology.split(":")[0]
    return os.path.join(LOGS, topology) if name.endswith(".xml") else topology


def rows_of(path):
    """(size, out-of-place time) per data row, in file order."""
    out = []
    for line in open(path):
        m = ROW.match(line)
        if m and int(m.group(1)) > 0:
            out.append((int(m.group(1)), float(m.group(2))))
    return out


def split(path, tmp):
    """Two copies of the log: one with the even-indexed distinct sizes' rows, one with the odd."""
    sizes = sorted({s for s, _ in rows_of(path)})
    held = set(sizes[1::2])
    fit_f, held_f = os.path.join(tmp, "fit.txt"), os.path.join(tmp, "held.txt")
    with open(fit_f, "w") as fit, open(held_f, "w") as hold:
        for line in open(path):
            m = ROW.match(line)
            if m and int(m.group(1)) > 0:
                (hold if int(m.group(1)) in held else fit).write(line)
            else:
                fit.write(line)
                hold.write(line)
    return fit_f, held_f, held


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "exit %d" % r.returncode)
    return r.stdout


def simulate(colltune, topology, settings, sizes):
    """colltune simulate --algo nccl for each size: {size: time_us}."""
    out = {}
    for s in sorted(sizes):
        j = json.loads(run([colltune, "simulate", "--json", "--topology", topology, "--algo", "nccl", "--bytes",
                            str(s)] + settings))
        out[s] = j["time_us"]
    return out


def measured(compared):
    """Per size, the mean out-of-place time (the together logs hold two runs' rows per size) of the
    rows compare --json printed, less those it flags as spikes (out-of-place and in-place 1.5x
    apart: a disturbed sample, as calibrate judges it, left out of every error as compare leaves
    it out); and the number of spikes."""
    per = {}
    spikes = 0
    for r in compared["rows"]:
        if r.get("flag") == "spike":
            spikes += 1
        else:
            per.setdefault(r["bytes"], []).append(r["measured_us"])
    return {s: statistics.mean(v) for s, v in per.items()}, spikes


def errors(pred, meas):
    return [abs(pred[s] / meas[s] - 1) for s in meas if s in pred]


def pct(x):
    return "%.1f%%" % (100 * x)


def validate(colltune, log, topology, settings, verbose):
    topology = topology_path(topology)
    path = os.path.join(LOGS, log)
    with tempfile.TemporaryDirectory() as tmp:
        fit, held, held_sizes = split(path, tmp)
        cal = os.path.join(tmp, "cal.json")
        run([colltune, "calibrate", "--topology", topology, "-o", cal, fit] + settings)
        cmp = json.loads(run([colltune, "compare", "--json", "--topology", cal, held] + settings))
        meas, spikes = measured(cmp)
        before = errors(simulate(colltune, topology, settings, held_sizes), meas)
        sim = simulate(colltune, cal, settings, held_sizes)
        after = errors(sim, meas)
        cmp_pred = {}
        for r in cmp["rows"]:
            cmp_pred.setdefault(r["bytes"], []).append(r["predicted_us"])
        cmp_pred = {b: statistics.mean(v) for b, v in cmp_pred.items()}
        gap = max(abs(cmp_pred[b] / sim[b] - 1) for b in cmp_pred if b in sim)
        compared = errors(cmp_pred, meas)
        fitted = json.load(open(cal))["calibration"]
        fit_error = fitted["median_abs_error"]
        values = ", ".join("%s %.3g" % (n, fitted["values"][n]) for n in fitted["fitted"])
        if verbose:
            for s in sorted(meas):
                print("  %12d %10.2f %10.2f %+6.1f%%" % (s, meas[s], sim[s], 100 * (sim[s] / meas[s] - 1)),
                      file=sys.stderr)
    return fit_error, before, compared, after, gap, values, len(meas), spikes


def regret(colltune, group, topology, runs):
    """Calibrate on the first run; per size, the setting predicted faster against the measured faster one."""
    topology = topology_path(topology)
    base_log = os.path.join(LOGS, runs[0][0])
    with tempfile.TemporaryDirectory() as tmp:
        cal = os.path.join(tmp, "cal.json")
        run([colltune, "calibrate", "--topology", topology, "-o", cal, base_log] + runs[0][1])
        meas = [dict((s, t) for s, t in rows_of(os.path.join(LOGS, log))) for log, _ in runs]
        sizes = sorted(set.intersection(*[set(m) for m in meas]))
        pred = [simulate(colltune, cal, settings, sizes) for _, settings in runs]
    right, tied, lost, best_total = 0, 0, 0.0, 0.0
    for s in sizes:
        times = [pred[i][s] for i in range(len(runs))]
        m = min(range(len(runs)), key=lambda i: meas[i][s])
        best_total += meas[m][s]
        if max(times) <= min(times) * (1 + TIE):  # the same pick, priced the same: no preference
            tied += 1
            continue
        p = min(range(len(runs)), key=lambda i: times[i])
        right += p == m
        lost += meas[p][s] - meas[m][s]
    others = [abs(pred[i][s] / meas[i][s] - 1) for i in range(1, len(runs)) for s in sizes]
    return right, len(sizes) - tied, tied, lost, best_total, statistics.median(others)


def tuned_rows(colltune, log, topology, settings):
    """calibrate on the whole log, then tune --model resnet50 on the calibrated file: the NCCL
    table's rows (lines that are not comments) and the comment above each."""
    with tempfile.TemporaryDirectory() as tmp:
        cal, out = os.path.join(tmp, "cal.json"), os.path.join(tmp, "out")
        run([colltune, "calibrate", "--topology", topology_path(topology), "-o", cal, os.path.join(LOGS, log)] + settings)
        run([colltune, "tune", "--topology", cal, "--model", "resnet50", "--out", out])
        lines = open(os.path.join(out, "nccl_tuner.conf")).read().splitlines()
    return [(lines[i - 1].lstrip("# "), l) for i, l in enumerate(lines) if l and not l.startswith("#")]


def main(argv):
    colltune = next((a for a in argv if not a.startswith("--")), "build/cli/colltune")
    verbose = "--verbose" in argv
    if "--regret" in argv:
        print("| machine (first run calibrated) | sizes picked right | predicted equal | measured time lost "
              "(sum over sizes) | other run predicted, median abs error |")
        print("|---|---|---|---|---|")
        for group, topology, runs in GROUPS:
            right, n, tied, lost, best, other = regret(colltune, group, topology, runs)
            print("| %s | %d / %d | %d | %.0f us (%s of the best sum) | %s |" % (
                group, right, n, tied, lost, pct(lost / best), pct(other)))
        return 0
    if "--tables" in argv:
        with_rows = 0
        for log, topology, settings in CASES:
            rows = tuned_rows(colltune, log, topology, settings)
            with_rows += bool(rows)
            print("%s: %d row(s)" % (log, len(rows)))
            for comment, row in rows:
                print("    %s\n    %s" % (comment, row))
        print("%d of %d logs with rows" % (with_rows, len(CASES)))
        return 0
    print("| log | topology | held-out sizes | calibrate fit median | uncalibrated median (max) "
          "| compare median (max) | simulate median (max) | simulate vs compare | fitted |")
    print("|---|---|---|---|---|---|---|---|---|")
    for log, topology, settings in CASES:
        name = log + (" (" + " ".join(settings) + ")" if settings else "")
        try:
            fit, before, compared, after, gap, values, n, spikes = validate(colltune, log, topology, settings,
                                                                            verbose)
        except (RuntimeError, KeyError, ValueError) as e:
            print("| %s | %s | | | | | %s | | |" % (name, topology, str(e).replace("|", "/")))
            continue
        held = "%d" % n + (" (+%d spike%s)" % (spikes, "s" if spikes > 1 else "") if spikes else "")
        print("| %s | %s | %s | %s | %s (%s) | %s (%s) | %s (%s) | %s | %s |" % (
            name, topology, held, pct(fit), pct(statistics.median(before)), pct(max(before)),
            pct(statistics.median(compared)), pct(max(compared)), pct(statistics.median(after)), pct(max(after)),
            pct(gap), values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
