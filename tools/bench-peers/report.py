"""bench-peers' table: reads peers.csv, adds the ratio column (train: Poseidon's images/s over this
DDP run's, the Poseidon run of the same rate and step count; all-reduce: Gloo's time over ours, i.e.
our bandwidth over Gloo's, on our rows, against Gloo's run of the same round), rewrites the file,
prints the tables (all-reduce: per rate and size, the median over the rounds and the range of the
ratio) and, when matplotlib imports, plots peers.png.

  /usr/bin/python3 report.py peers.csv [--png peers.png]
"""
import argparse
import csv
import statistics
import sys


def fmt_bytes(b):
    b = int(b)
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size} {unit}"
    return f"{b} B"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--png")
    a = p.parse_args()
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    fields = [k for k in (rows[0].keys() if rows else []) if k != "ratio"] + ["ratio"]
    poseidon = {(r["rate"], r["steps"]): r for r in rows if r["part"] == "train" and r["system"] == "poseidon"}
    # "options" is the round (files from before rounds have it empty: one round).
    gloo = {(r["rate"], r["bytes"], r["options"]): r for r in rows
            if r["part"] == "allreduce" and r["system"] == "gloo"}
    for r in rows:
        r["ratio"] = ""
        if r["part"] == "train" and r["system"] == "ddp" and (r["rate"], r["steps"]) in poseidon:
            r["ratio"] = f"{float(poseidon[(r['rate'], r['steps'])]['images_per_s']) / float(r['images_per_s']):.3f}"
        peer = gloo.get((r["rate"], r["bytes"], r["options"]))
        if r["part"] == "allreduce" and r["system"] == "poseidon-ring" and peer:
            r["ratio"] = f"{float(peer['median_us']) / float(r['median_us']):.3f}"
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)

    train = [r for r in rows if r["part"] == "train"]
    if train:
        print("\ntraining: 4 workers x batch 16, Fashion-MNIST CNN (ratio = Poseidon images/s / DDP's, same rate and steps)")
        print(f"{'link':>10} {'system':>9} {'options':<36} {'steps':>6} {'images/s':>9} {'accuracy':>9} {'ratio':>6} {'load':>5}")
        for r in train:
            print(f"{r['rate']:>10} {r['system']:>9} {r['options']:<36} {r['steps']:>6} {float(r['images_per_s']):>9.1f} "
                  f"{float(r['test_accuracy']):>9.4f} {r['ratio']:>6} {r['load1']:>5}")
    ours = [r for r in rows if r["part"] == "allreduce" and r["system"] == "poseidon-ring" and r["ratio"]]
    if ours:
        print("\nall-reduce, 4 ranks, median time per call (ratio = Gloo's time / ours = our bandwidth / Gloo's);"
              " over rounds: medians, and the ratio's range")
        print(f"{'link':>10} {'size':>8} {'ours us':>10} {'Gloo us':>10} {'ours Gb/s':>10} {'Gloo Gb/s':>10} "
              f"{'ratio':>6} {'range':>13} {'rounds':>6} {'load':>9} {'CPU ms ours':>11} {'Gloo':>8}")
        for key in dict.fromkeys((r["rate"], r["bytes"]) for r in ours):
            mine = [r for r in ours if (r["rate"], r["bytes"]) == key]
            theirs = [gloo[(r["rate"], r["bytes"], r["options"])] for r in mine]
            med = lambda rs, f: statistics.median(float(x[f]) for x in rs)
            ratios = [float(r["ratio"]) for r in mine]
            loads = f"{med(mine, 'load1'):.1f}/{med(theirs, 'load1'):.1f}"
            # CPU per call, all ranks together (files from before the column have none).
            cpu = lambda rs: f"{med(rs, 'cpu_us') / 1e3:.2f}" if all(x.get("cpu_us") for x in rs) else "-"
            print(f"{key[0]:>10} {fmt_bytes(key[1]):>8} {med(mine, 'median_us'):>10.1f} {med(theirs, 'median_us'):>10.1f} "
                  f"{med(mine, 'algbw_gbps'):>10.4f} {med(theirs, 'algbw_gbps'):>10.4f} {statistics.median(ratios):>6.3f} "
                  f"{min(ratios):>6.3f}-{max(ratios):<6.3f} {len(mine):>6} {loads:>9} {cpu(mine):>11} {cpu(theirs):>8}")
    if not a.png:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"report.py: no plot ({e})", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    rates = list(dict.fromkeys(r["rate"] for r in rows))
    ax = axes[0]
    for i, rate in enumerate(rates):
        for system, style in (("poseidon-ring", "-o"), ("gloo", "--s")):
            per_size = {}  # bytes -> each round's bandwidth; the median is plotted
            for r in rows:
                if r["part"] == "allreduce" and r["rate"] == rate and r["system"] == system:
                    per_size.setdefault(int(r["bytes"]), []).append(float(r["algbw_gbps"]))
            pts = [(b, statistics.median(v)) for b, v in per_size.items()]
            if pts:
                ax.plot(*zip(*pts), style, color=f"C{i}", label=f"{system}, {rate}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message bytes")
    ax.set_ylabel("algorithm bandwidth, Gb/s")
    ax.set_title("all-reduce, 4 ranks")
    ax.legend(fontsize=7)
    ax = axes[1]
    labels = [f"{r['rate']}\n{r['system']}\n{r['options'].replace(';', chr(10))}\n{r['steps']} st" for r in train]
    ax.bar(range(len(train)), [float(r["images_per_s"]) for r in train],
           color=["C0" if r["system"] == "poseidon" else "C1" for r in train])
    ax.set_xticks(range(len(train)))
    ax.set_xticklabels(labels, fontsize=5)
    ax.set_ylabel("images/s")
    ax.set_title("training, 4 x 16 (blue Poseidon, orange DDP)")
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)


if __name__ == "__main__":
    main()
