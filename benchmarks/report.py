"""Turning results into table rows and the issue's targets."""

from __future__ import annotations

from typing import Any


def _f(v: float | None, unit: str = "", digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}{unit}"


def _pct(r: dict[str, Any]) -> str:
    if "p50" not in r:
        return r.get("error", "no samples")
    return (f"p50 {r['p50']:.1f} / p95 {r['p95']:.1f} / p99 {r['p99']:.1f} / "
            f"max {r['max']:.1f} ms (n={r['n']})")


def describe(name: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"[red]error: {r['error']}"
    if name.startswith("drain"):
        ok = "verified" if r.get("verified") else "[red]NOT VERIFIED[/red]"
        runs = f"median of {', '.join(_f(x) for x in r['runs'])}; " if "runs" in r else ""
        return (f"{_f(r['jobs_per_s'])} jobs/s ({runs}{r['n']:,} jobs, {r['seconds']:.2f}s, "
                f"{r['workers']} proc x {r['concurrency']}, {ok})")
    if name == "enqueue":
        keyed = "".join(
            f"; {what}: new key {_f(r[f'{k}_one_per_s'])}/s, held {_f(r[f'{k}_dup_per_s'])}/s,"
            f" bulk {_f(r[f'{k}_bulk_jobs_per_s'])} jobs/s"
            for k, what in (("key", "key="), ("unique_for", "unique_for"))
            if f"{k}_one_per_s" in r)
        return (f"one-by-one {_f(r['one_by_one_per_s'])} calls/s; bulk "
                f"{_f(r['bulk_jobs_per_s'])} jobs/s{keyed}")
    if name in ("latency", "mixed", "mixed-split"):
        extra = f"; flood of {r['flood']:,} drained in {r['flood_seconds']:.1f}s; " \
            f"{r['topology']}" if name.startswith("mixed") and "flood" in r else ""
        for key, what in (("enqueue_call", "of which the enqueue call"),
                          ("bare_insert", "a bare durable INSERT in the same moments"),
                          ("worker_part", "the worker's part (less the enqueue call)"),
                          ("after_enqueue", "sent after the flood's enqueue (the drain alone)")):
            got = r.get(key, {})
            if got.get("n"):
                extra += f"; {what} p50 {got['p50']:.1f} / p99 {got['p99']:.1f} ms"
        floor = r.get("floor")
        if floor:
            extra += (f"; machine floor now: round trip p50 {floor['round_trip_p50']:.2f} ms, "
                      f"durable insert p50 {floor['durable_insert_p50']:.2f} ms")
        return _pct(r) + extra
    if name == "history":
        e, h = r["empty"], r["with_history"]
        return (f"claim of {r['claim_batch']}: {e['claim_ms_mean']:.2f} ms empty vs "
                f"{h['claim_ms_mean']:.2f} ms with {r['retained_rows']:,} finished jobs "
                f"retained: x{r['ratio']:.2f} (completion {e['complete_ms_mean']:.2f} vs "
                f"{h['complete_ms_mean']:.2f} ms)")
    if name == "memory":
        return (f"peak {r['peak_rss_mb']:.0f} MB draining {r['n']:,} (RSS at 10/50/90%: "
                f"{r['rss_mb_at_10pct']:.0f}/{r['rss_mb_at_50pct']:.0f}/"
                f"{r['rss_mb_at_90pct']:.0f} MB)")
    return str(r)


def rows_for(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for eng, by_name in results["ours"].items():
        for name, r in by_name.items():
            load = r.get("load", "") if isinstance(r, dict) else ""
            rows.append((name, f"shiftwork/{eng}", describe(name, r), load))
    for peer, by_name in results["peers"].items():
        if "error" in by_name:
            rows.append(("peers", peer, f"[red]error: {by_name['error']}", ""))
            continue
        for name, r in by_name.items():
            if isinstance(r, dict):
                rows.append((name, peer, describe(name, r), r.get("load", "")))
    return rows


def _get(d: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    ours = results["ours"]
    out: list[tuple[str, str, bool | None]] = []

    def at_least(label: str, value: float | None, goal: float, unit: str) -> None:
        out.append((label, _f(value, unit), None if value is None else value >= goal))

    at_least("drain, Postgres, 1 worker ≥ 10,000 jobs/s",
             _get(ours, "postgres", "drain-1w", "jobs_per_s"), 10_000, " jobs/s")
    at_least("drain, Postgres, 2 workers ≥ 15,000 jobs/s",
             _get(ours, "postgres", "drain-2w", "jobs_per_s"), 15_000, " jobs/s")
    at_least("drain, SQLite, 1 worker ≥ 5,000 jobs/s",
             _get(ours, "sqlite", "drain-1w", "jobs_per_s"), 5_000, " jobs/s")
    for eng in ("postgres", "sqlite"):
        at_least(f"enqueue bulk, {eng} ≥ 100,000 jobs/s",
                 _get(ours, eng, "enqueue", "bulk_jobs_per_s"), 100_000, " jobs/s")
    peers = results.get("peers", {})
    pg_peer_one = [v for name in ("procrastinate", "pgqueuer")
                   if (v := _get(peers, name, "enqueue", "one_by_one_per_s")) is not None]
    mine = _get(ours, "postgres", "enqueue", "one_by_one_per_s")
    if pg_peer_one and mine is not None:
        out.append(("enqueue one-by-one, Postgres ≥ fastest Postgres peer",
                    f"{mine:,.0f} vs {max(pg_peer_one):,.0f} calls/s", mine >= max(pg_peer_one)))
    p50, p99 = _get(ours, "postgres", "latency", "p50"), _get(ours, "postgres", "latency", "p99")
    if p50 is not None and p99 is not None:
        out.append(("latency, Postgres idle: p50 ≤ 2 ms, p99 ≤ 10 ms",
                    f"p50 {p50:.1f} ms, p99 {p99:.1f} ms", p50 <= 2 and p99 <= 10))
    p50 = _get(ours, "sqlite", "latency", "p50")
    if p50 is not None:
        out.append(("latency, SQLite idle: p50 ≤ 25 ms", f"p50 {p50:.1f} ms", p50 <= 25))
    for eng in ("postgres", "sqlite"):
        for key, how in (("mixed", "one process"), ("mixed-split", "urgent own process")):
            idle, busy = _get(ours, eng, "latency", "p99"), _get(ours, eng, key, "p99")
            if idle and busy is not None:
                out.append((f"mixed, {eng} ({how}): urgent p99 during flood ≤ 2x idle p99",
                            f"{busy:.1f} vs {idle:.1f} ms (x{busy / idle:.2f})",
                            busy <= 2 * idle))
            idle_w = _get(ours, eng, "latency", "worker_part", "p99")
            busy_w = _get(ours, eng, key, "worker_part", "p99")
            if idle_w and busy_w is not None:
                out.append((f"mixed, {eng} ({how}): the worker's part of it ≤ 2x idle",
                            f"{busy_w:.1f} vs {idle_w:.1f} ms (x{busy_w / idle_w:.2f})",
                            busy_w <= 2 * idle_w))
        ratio = _get(ours, eng, "history", "ratio")
        if ratio is not None:
            rows = _get(ours, eng, "history", "retained_rows")
            out.append((f"history, {eng}: claim at 5M retained ≤ 1.5x empty",
                        f"x{ratio:.2f}" + (f" ({rows:,} rows)" if rows else ""), ratio <= 1.5))
        peak = _get(ours, eng, "memory", "peak_rss_mb")
        if peak is not None:
            n = _get(ours, eng, "memory", "n")
            out.append((f"memory, {eng}: worker peak RSS draining 1M ≤ 150 MB",
                        f"{peak:.0f} MB ({n:,} jobs)", peak <= 150))
    # every peer workload: ours ahead of each peer
    for peer, by_name in peers.items():
        if not isinstance(by_name, dict) or "error" in by_name:
            continue
        eng = "postgres"  # our production engine, against each peer (Celery on Redis too)
        for key, field, higher in (("drain-1w", "jobs_per_s", True),
                                   ("drain-2w", "jobs_per_s", True),
                                   ("enqueue", "one_by_one_per_s", True),
                                   ("enqueue", "bulk_jobs_per_s", True),
                                   ("latency", "p50", False), ("latency", "p99", False)):
            theirs, mine = _get(by_name, key, field), _get(ours, eng, key, field)
            if theirs is None or mine is None or not theirs:
                continue
            ratio = mine / theirs if higher else theirs / mine
            out.append((f"vs {peer}: {key} {field}",
                        f"{mine:,.1f} vs {theirs:,.1f} (x{ratio:.2f} ours)", ratio > 1))
    return out
