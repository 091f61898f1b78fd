#!/usr/bin/env python3
"""Compares two bench JSON reports (before, after) row by row.

Prints a Markdown table of every engine row: median µs before and after,
the ratio after/before, and cuBLAS's median in each run (its drift is the
run-to-run noise floor). Exit status 0; rows slower than --limit are flagged.

    scripts/bench-compare.py before.json after.json [--limit 1.02]
"""
import json
import sys


def rows(path):
    d = json.load(open(path))
    out = {}
    for r in d["rows"]:
        s = r["shape"]
        key = (f'{s["m"]}x{s["k"]}x{s["n"]}', r["dtype"], r["backend"], r["mode"])
        out[key] = r["median_us"]
    return d, out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    limit = 1.02
    for a in sys.argv[1:]:
        if a.startswith("--limit="):
            limit = float(a.split("=", 1)[1])
    bd, b = rows(args[0])
    ad, a = rows(args[1])
    print(f'before: {bd.get("commit")} {bd.get("gpu", {}).get("name", "")} {bd.get("date")}')
    print(f'after:  {ad.get("commit")} {ad.get("gpu", {}).get("name", "")} {ad.get("date")}')
    print()
    print("| M×K×N | dtype | mode | cuBLAS before | cuBLAS after | before µs | after µs | after/before |")
    print("|---|---|---|---|---|---|---|---|")
    slower = []
    ratios = []
    for key in sorted(a, key=lambda k: (k[1], [int(x) for x in k[0].split("x")], k[3])):
        shape, dtype, backend, mode = key
        if backend == "cuBLAS" or key not in b or mode in ("copy", "read"):
            continue
        cb = b.get((shape, dtype, "cuBLAS", "default"))
        ca = a.get((shape, dtype, "cuBLAS", "default"))
        r = a[key] / b[key]
        ratios.append(r)
        flag = " **slower**" if r > limit else ""
        if r > limit:
            slower.append((key, r))
        fmt = lambda v: f"{v:.1f}" if v is not None else "–"
        print(f"| {shape} | {dtype} | {mode} | {fmt(cb)} | {fmt(ca)} | {b[key]:.1f} | {a[key]:.1f} | {r:.3f}{flag} |")
    ratios.sort()
    if ratios:
        print()
        print(f"{len(ratios)} engine rows: median after/before {ratios[len(ratios)//2]:.3f}, "
              f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}; {len(slower)} above {limit}")


if __name__ == "__main__":
    main()
