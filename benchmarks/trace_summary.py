"""What a ``jax.profiler`` trace says about a device's idle time: busy against idle, and what the host did meanwhile.

``jax.profiler.trace(log_dir, create_perfetto_trace=True)`` writes ``perfetto_trace.json.gz`` (Chrome trace
events) under ``log_dir``.  For each device process of the newest such file this prints the device's busy time (the
union of its kernels and copies over all its streams) against the span of the trace, its idle gaps, the kernels that
took the most time, and the host events that overlapped its idle gaps the most (nested events each count their own
overlap: read the names, not a sum).  On a CPU the trace has no device process: it says so.

    python benchmarks/trace_summary.py LOG_DIR [--top N]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os


def _union(intervals):
    """The disjoint union of ``(start, end)`` intervals, sorted."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _overlap(start, end, gaps, starts):
    """Time of ``[start, end)`` inside the sorted disjoint ``gaps`` (``starts``: their starts, for bisection)."""
    import bisect

    i = max(0, bisect.bisect_right(starts, start) - 1)
    total = 0.0
    while i < len(gaps) and gaps[i][0] < end:
        total += max(0.0, min(end, gaps[i][1]) - max(start, gaps[i][0]))
        i += 1
    return total


def summarize(log_dir: str, top: int = 15, min_gap_us: float = 20.0) -> str:
    """The report of the newest ``perfetto_trace.json.gz`` under ``log_dir`` (times in microseconds in the file)."""
    files = sorted(glob.glob(os.path.join(log_dir, "**", "perfetto_trace.json.gz"), recursive=True),
                   key=os.path.getmtime)
    if not files:
        return f"no perfetto_trace.json.gz under {log_dir}"
    with gzip.open(files[-1], "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e]
    devices = [pid for pid, name in names.items() if "device" in name.lower() and "cpu" not in name.lower()]
    lines = [f"trace {files[-1]}: {len(spans)} events; processes {sorted(names.values())}"]
    if not devices:
        return "\n".join(lines + ["no device process in the trace (a CPU run): nothing to say about device idle time"])
    host = [e for e in spans if e["pid"] not in devices]
    for pid in devices:
        own = [e for e in spans if e["pid"] == pid]
        busy = _union((e["ts"], e["ts"] + e["dur"]) for e in own)
        first, last = busy[0][0], busy[-1][1]
        busy_us = sum(b - a for a, b in busy)
        gaps = [(a[1], b[0]) for a, b in zip(busy, busy[1:]) if b[0] - a[1] >= min_gap_us]
        idle_us = sum(b - a for a, b in gaps)
        lines.append(f"{names[pid]}: span {1e-3 * (last - first):.2f} ms, busy {1e-3 * busy_us:.2f} ms "
                     f"({100 * busy_us / max(last - first, 1e-9):.0f} %), {len(gaps)} idle gaps of >= {min_gap_us:g} us "
                     f"({1e-3 * idle_us:.2f} ms; the longest {1e-3 * max((b - a for a, b in gaps), default=0):.3f} ms)")
        kernels: collections.Counter[str] = collections.Counter()
        for e in own:
            kernels[e["name"][:90]] += e["dur"]
        lines.append("  kernels and copies with the most time (ms): " + "; ".join(
            f"{name} {1e-3 * t:.2f}" for name, t in kernels.most_common(top)))
        starts = [a for a, _ in gaps]
        during: collections.Counter[str] = collections.Counter()
        for e in host:
            if e["ts"] < last and e["ts"] + e["dur"] > first:
                t = _overlap(e["ts"], e["ts"] + e["dur"], gaps, starts)
                if t > 0:
                    during[e["name"][:90]] += t
        lines.append("  host events during the device's idle gaps (ms, nested events each counted):")
        lines += [f"    {1e-3 * t:8.2f}  {name}" for name, t in during.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log_dir")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    print(summarize(args.log_dir, args.top))


if __name__ == "__main__":
    main()
