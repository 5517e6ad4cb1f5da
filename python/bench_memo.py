"""Per-call overhead of cairn.memo, beside a plain call and cairn memo.

    make build && CAIRN_BIN=$PWD/bin/cairn python3 python/bench_memo.py [N]

Each figure is the median of 5 rounds of N calls (default 300), in a fresh
cache: a plain Python call; a memo hit and a memo miss through the
long-lived helper (what the module does); a hit with a helper started per
call (the alternative design); and `cairn memo -- CMD` from Python, hit
and miss, as a script memoises a call today. Misses record the call
durably (cairn's cache writes are synced), which dominates them.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cairn  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
ROUNDS = 5
EXE = os.environ.get("CAIRN_BIN") or "cairn"


def per_call(run: Callable[[int, int], None], n: int = N) -> float:
    """Median over rounds of the time per call, in microseconds."""
    times: List[float] = []
    for r in range(ROUNDS):
        t = time.perf_counter()
        run(r, n)
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)


def model(i: int) -> dict:
    return {"answer": i * 2, "text": "x" * 100}


def main() -> None:
    cache = tempfile.mkdtemp(prefix="cairn-bench-")
    os.environ["CAIRN_CACHE_DIR"] = cache
    memo_model = cairn.memo(version="1", name="bench.model")(model)
    for i in range(N):
        memo_model(i)  # warm: every call below 0..N is a hit

    def plain(r: int, n: int) -> None:
        for i in range(n):
            model(i)

    def hit(r: int, n: int) -> None:
        for i in range(n):
            memo_model(i)

    def miss(r: int, n: int) -> None:
        base = (r + 1) * 1_000_000
        for i in range(n):
            memo_model(base + i)

    req = (
        '{"protocol":1,"op":"get","function":"bench.model","version":"1","args":"{\\"i\\":%d}"}\n'
    )

    def hit_spawned(r: int, n: int) -> None:
        for i in range(n):
            out = subprocess.run([EXE, "memo-serve"], input=(req % i).encode(), capture_output=True, check=True)
            assert b'"hit":true' in out.stdout, out

    def cli_hit(r: int, n: int) -> None:
        for i in range(n):
            subprocess.run([EXE, "memo", "--", "echo", str(i)], stdin=subprocess.DEVNULL, capture_output=True, check=True)

    def cli_miss(r: int, n: int) -> None:
        base = (r + 1) * 1_000_000
        for i in range(n):
            subprocess.run([EXE, "memo", "--", "echo", str(base + i)], stdin=subprocess.DEVNULL, capture_output=True, check=True)

    small = max(20, N // 10)
    cli_hit(0, small)  # warm the cairn memo entries 0..small
    rows = [
        ("plain Python call", per_call(plain)),
        ("cairn.memo hit (helper over a pipe)", per_call(hit)),
        ("cairn.memo miss (helper over a pipe)", per_call(miss, small)),
        ("memo hit, a helper started per call", per_call(hit_spawned, small)),
        ("cairn memo -- echo N, hit", per_call(cli_hit, small)),
        ("cairn memo -- echo N, miss", per_call(cli_miss, small)),
    ]
    print(f"| call ({ROUNDS} rounds, median) | per call |")
    print("|---|---|")
    for name, us in rows:
        print(f"| {name} | {us / 1000:.3f} ms |" if us >= 100 else f"| {name} | {us:.2f} µs |")
    subprocess.run(["rm", "-rf", cache], check=True)


if __name__ == "__main__":
    main()
