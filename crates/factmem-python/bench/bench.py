#!/usr/bin/env python3
"""Timing of the Python package factmem (issue 25's figures), with its pure-Python peer.

    python bench/bench.py [--facts 10000] [--threads 8] [--seconds 3]

Run it with the wheel installed (``maturin build --release``, ``pip install``). It builds
one deterministic data set (the same facts and queries every run) and measures, printing
one JSON object per figure:

1. ``add_fact``: facts per second, ``add_fact`` called once per fact on a new SQLite file
   (each call its own transaction, as an agent adds facts).
2. ``search_overhead``: the mean time of ``Memory.search`` against the same searches run
   by the Rust call alone (``Memory._bench_search``, the loop inside Rust with the GIL
   released), on the same store: the difference is what crossing into Python costs
   (argument checks, the GIL, the tuples and dataclasses of the results).
3. ``threads``: searches per second with ``--threads`` Python threads sharing one Memory,
   against one thread, on SQLite, in process memory and (with ``FACTMEM_PG_URL``)
   PostgreSQL: above 1 only if the GIL is released while Rust searches, and only as far
   as the store itself lets searches run at once. ``gil_released``: one long Rust loop per
   thread (one thread per core), so no Python runs between searches: it can exceed 1 only
   if the call releases the GIL.
4. ``fts5_peer``: the same queries through SQLite FTS5 from Python's ``sqlite3`` (porter
   tokenizer, ``bm25()``, as ``../shared/eval/fts5_baseline.py`` does) on the same
   statements: the cost of the pure-Python design the package replaces.
5. ``add_facts``: facts per second, the same facts in one ``Memory.add_facts`` call (one
   transaction) on a new SQLite file, against the ``add_fact`` loop of figure 1 (goal: at
   least 2×).
6. ``search_many``: searches per second, ``--threads`` Python threads each answering
   1,000 queries per ``Memory.search_many`` call (the GIL released once per call), against
   one thread calling ``Memory.search`` once per query, on the same SQLite store (goal:
   at least 1.6×, the thread goal issue 25 could not reach one call at a time).
"""

import argparse
import json
import os
import re
import sqlite3
import statistics
import tempfile
import threading
import time
from typing import Callable, List, Sequence, Tuple

import factmem

WORDS = (
    "parser tokenizer ledger runtime store index cache budget prompt review agent task "
    "schema migration replica vector embedding recall search history scope episode "
    "message summary alias profile context snapshot compaction capacity deadline clock "
    "token counter fixture benchmark thread lock pool connection server client protocol "
    "action request response error timeout retry backoff metric latency throughput "
    "memory fact subject relation object statement confidence category version"
).split()
PRIMES = (7, 11, 13, 17, 19, 23)
LIMIT = 10


def facts(count: int) -> List[Tuple[str, str, str, str]]:
    """``count`` facts: (subject, relation, object, statement), the same every run."""
    out = []
    for i in range(count):
        words = [WORDS[(i * p + k * k) % len(WORDS)] for k, p in enumerate(PRIMES)]
        out.append((f"project{i % 50}", f"uses_{i}", words[0], " ".join(words)))
    return out


def queries(count: int = 200) -> List[str]:
    """``count`` two-word queries over the same vocabulary."""
    n = len(WORDS)
    return [f"{WORDS[j % n]} {WORDS[(j * 5 + 3) % n]}" for j in range(count)]


def questions(count: int = 200) -> List[str]:
    """``count`` questions of ten words over the same vocabulary, the length of what an
    agent asks its memory ("which parser does the runtime use for the prompt cache ...")."""
    n = len(WORDS)
    return [" ".join(WORDS[(j * p + 3 * k) % n] for k, p in enumerate((1, 3, 5, 7, 11, 13, 17, 19, 23, 29)))
            for j in range(count)]  # fmt: skip


def emit(figure: str, **values: object) -> None:
    print(json.dumps({"figure": figure, **values}), flush=True)


def add_facts(memory: factmem.Memory, rows: Sequence[Tuple[str, str, str, str]]) -> float:
    started = time.perf_counter()
    for subject, relation, obj, statement in rows:
        memory.add_fact(subject, relation, obj, statement)
    return time.perf_counter() - started


def many_per_second(memory: factmem.Memory, qs: List[str], threads: int,
                    seconds: float, batch: int = 1000) -> float:  # fmt: skip
    """Searches per second with ``threads`` threads, each answering ``batch`` queries per
    ``search_many`` call until ``seconds`` pass."""
    counts = [0] * threads
    stop = time.perf_counter() + seconds
    queries = [qs[i % len(qs)] for i in range(batch)]

    def work(slot: int) -> None:
        done = 0
        while time.perf_counter() < stop:
            memory.search_many(queries, limit=LIMIT)
            done += len(queries)
        counts[slot] = done

    pool = [threading.Thread(target=work, args=(slot,)) for slot in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


def per_call_us(runs: Sequence[Callable[[], None]], calls: int,
                repeats: int = 15) -> List[float]:  # fmt: skip
    """For each of ``runs``, the best of ``repeats`` means of ``calls`` calls, in µs (the
    least disturbed). The runs take turns, so a load that comes and goes weighs on each
    alike."""
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for index, run in enumerate(runs):
            started = time.perf_counter()
            run()
            best[index] = min(best[index], (time.perf_counter() - started) * 1e6 / calls)
    return best


def searches_per_second(memory: factmem.Memory, qs: List[str], threads: int,
                        seconds: float) -> float:  # fmt: skip
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def work(slot: int) -> None:
        done, j = 0, slot
        while time.perf_counter() < stop:
            memory.search(qs[j % len(qs)], limit=LIMIT)
            done += 1
            j += 1
        counts[slot] = done

    pool = [threading.Thread(target=work, args=(slot,)) for slot in range(threads)]
    started = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


def rust_loops_per_second(memory: factmem.Memory, qs: List[str],
                          threads: int) -> Tuple[float, float]:  # fmt: skip
    """Searches per second when each Python thread runs a long loop of searches inside
    one Rust call (``_bench_search``), one thread against ``threads``: above 1 only if the
    call releases the GIL, since no Python runs while it loops."""

    def rate(count: int) -> float:
        pool = [threading.Thread(target=memory._native._bench_search, args=(qs, LIMIT, 20))
                for _ in range(count)]  # fmt: skip
        started = time.perf_counter()
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        return count * 20 * len(qs) / (time.perf_counter() - started)

    return max(rate(1) for _ in range(3)), max(rate(threads) for _ in range(3))


def fts5_peer(rows: Sequence[Tuple[str, str, str, str]], qs: List[str]) -> dict:
    db = sqlite3.connect(":memory:")
    db.execute("create virtual table f using fts5(subject, text, tokenize='porter unicode61')")
    db.executemany("insert into f(rowid, subject, text) values (?,?,?)",
                   [(i, s, st) for i, (s, _, _, st) in enumerate(rows)])  # fmt: skip

    def search(question: str) -> list:
        terms = re.findall(r"[A-Za-z0-9]+", question.lower())
        match = " OR ".join('"%s"' % t for t in terms)
        return db.execute("select rowid, subject, text from f where f match ? "
                          "order by bm25(f) limit ?", (match, LIMIT)).fetchall()  # fmt: skip

    latencies = []
    for question in qs * 5:
        started = time.perf_counter()
        search(question)
        latencies.append(time.perf_counter() - started)
    latencies.sort()
    return {
        "p50_us": round(1e6 * latencies[len(latencies) // 2], 1),
        "mean_us": round(1e6 * statistics.fmean(latencies), 1),
    }


def threads_figures(memory: factmem.Memory, store: str, qs: List[str], asked: List[str],
                    args: argparse.Namespace) -> None:  # fmt: skip
    """``threads`` figures: two-word queries (a Rust search of a few µs, so the Python part
    of each call and the GIL's hand-overs weigh most), then ten-word questions."""
    for words, texts in ((2, qs), (10, asked)):
        one = searches_per_second(memory, texts, 1, args.seconds)
        many = searches_per_second(memory, texts, args.threads, args.seconds)
        emit("threads", store=store, query_words=words, threads=args.threads,
             one_thread_per_s=round(one), many_threads_per_s=round(many),
             speedup=round(many / one, 2), goal_at_least=1.6)  # fmt: skip


def gil_released(memory: factmem.Memory, store: str, qs: List[str]) -> None:
    """``gil_released``: one long Rust search loop per thread, one thread per core, against
    one thread: above 1 only if the call releases the GIL and the store searches in
    parallel."""
    cores = os.cpu_count() or 1
    one, many = rust_loops_per_second(memory, qs, cores)
    emit("gil_released", store=store, threads=cores,
         one_thread_per_s=round(one), many_threads_per_s=round(many),
         speedup=round(many / one, 2))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows, qs, asked = facts(args.facts), queries(), questions()
    emit("setup", factmem=factmem.__version__, facts=len(rows), queries=len(qs),
         cpus=os.cpu_count(), load_average=round(os.getloadavg()[0], 2))  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp:
        with factmem.Memory(os.path.join(tmp, "bench.db")) as memory:
            elapsed = add_facts(memory, rows)
            emit("add_fact", store="sqlite", facts=len(rows), seconds=round(elapsed, 3),
                 facts_per_second=round(len(rows) / elapsed), goal_at_least=20_000)  # fmt: skip

            memory.search(qs[0])  # loads the search cache once
            rounds = 5
            calls = rounds * len(qs)

            def through_python() -> None:
                for _ in range(rounds):
                    for question in qs:
                        memory.search(question, limit=LIMIT)

            def rust_alone() -> None:
                memory._native._bench_search(qs, LIMIT, rounds)

            python_us, rust_us = per_call_us([through_python, rust_alone], calls)
            hits = statistics.fmean(len(memory.search(q, limit=LIMIT)) for q in qs)
            emit("search_overhead", store="sqlite", limit=LIMIT, mean_hits=round(hits, 1),
                 python_us=round(python_us, 2), rust_us=round(rust_us, 2),
                 overhead_us=round(python_us - rust_us, 2), goal_at_most_us=15)  # fmt: skip

            threads_figures(memory, "sqlite", qs, asked, args)
            gil_released(memory, "sqlite", qs)

            one = searches_per_second(memory, qs, 1, args.seconds)
            many = many_per_second(memory, qs, args.threads, args.seconds)
            emit("search_many", store="sqlite", threads=args.threads, batch=1000,
                 one_thread_search_per_s=round(one), many_threads_search_many_per_s=round(many),
                 ratio=round(many / one, 2), goal_at_least=1.6)  # fmt: skip

        with factmem.Memory(os.path.join(tmp, "batch.db")) as memory:
            started = time.perf_counter()
            memory.add_facts(rows)
            batched = time.perf_counter() - started
            emit("add_facts", store="sqlite", facts=len(rows), seconds=round(batched, 3),
                 facts_per_second=round(len(rows) / batched),
                 loop_facts_per_second=round(len(rows) / elapsed),
                 ratio=round(elapsed / batched, 2), goal_at_least=2.0)  # fmt: skip

        stores = [("in-memory", None)]
        if os.environ.get("FACTMEM_PG_URL"):
            stores.append(("postgres", os.environ["FACTMEM_PG_URL"]))
        for store, db in stores:
            scope = f"bench-{os.getpid()}-{time.time_ns()}"
            with factmem.Memory(db, scope=scope) as memory:
                add_facts(memory, rows)
                memory.search(qs[0])
                threads_figures(memory, store, qs, asked, args)
                if store == "in-memory":
                    gil_released(memory, store, qs)

    emit("fts5_peer", system="python sqlite3 fts5 porter bm25", limit=LIMIT,
         **fts5_peer(rows, qs))  # fmt: skip


if __name__ == "__main__":
    main()
