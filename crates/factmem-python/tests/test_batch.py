"""Batch calls (``Memory.add_facts``, ``Memory.search_many``) and ``factmem.AsyncMemory``
on every backend: a batch is the loop of single calls in one transaction, all or nothing,
and the asynchronous memory never blocks the event loop."""

import asyncio
import inspect
from datetime import datetime, timedelta, timezone

import pytest

import factmem

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)

FACTS = [
    ("User", "prefers_editor", "vim", "User prefers vim"),
    {"subject": "user", "relation": "lives_in", "object": "Porto", "category": "context",
     "confidence": 0.8, "valid_from": T0, "metadata": {"source": "chat", "turn": 3}},
    ("user", "prefers_editor", "helix", "User prefers helix"),
    ("Melanie", "adopted", "Oscar", "user prefers  HELIX"),
    ("user", "lives_in", "Porto"),
]  # fmt: skip


def one_by_one(memory: factmem.Memory) -> list:
    out = []
    for fact in FACTS:
        if isinstance(fact, dict):
            args = dict(fact)
            out.append(memory.add_fact(args.pop("subject"), args.pop("relation"),
                                       args.pop("object"), **args))  # fmt: skip
        else:
            out.append(memory.add_fact(*fact))
    return out


def test_add_facts_is_the_loop_in_one_transaction(db, scope):
    with factmem.Memory(db, scope=scope) as batch, \
            factmem.Memory(db, scope=scope + "-loop") as looped:  # fmt: skip
        results = batch.add_facts(FACTS)
        expected = one_by_one(looped)
        assert [r.status for r in results] == [r.status for r in expected]
        assert [r.status for r in results] == [
            "added", "added", "added", "duplicate", "already_current"]
        assert results[2].superseded == [results[0].fact.id]
        assert results[3].existing_id == results[2].fact.id
        porto = results[1].fact
        assert porto.category == "context" and porto.valid_from == T0
        assert porto.metadata == {"source": "chat", "turn": 3}
        assert sorted(f.object for f in batch.get_all()) == ["Porto", "helix"]
        assert len(batch.history("user")) == 3
        assert batch.add_facts([]) == []


def test_add_facts_stores_nothing_when_one_fact_is_invalid(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        memory.add_fact("user", "lives_in", "Porto")
        with pytest.raises(factmem.InvalidInput, match="index 2"):
            memory.add_facts([("user", "speaks", "Portuguese"), ("user", "drinks", "tea"),
                              (" ", "drinks", "coffee")])  # fmt: skip
        with pytest.raises(factmem.InvalidInput, match="facts\\[1\\]: unknown field 'objct'"):
            memory.add_facts([("user", "speaks", "Portuguese"),
                              {"subject": "user", "relation": "drinks", "objct": "tea"}])  # fmt: skip
        with pytest.raises(factmem.InvalidInput, match="confidence"):
            memory.add_facts([{"subject": "u", "relation": "r", "object": "o",
                               "confidence": 2.0}])  # fmt: skip
        with pytest.raises(TypeError, match="facts\\[0\\]"):
            memory.add_facts(["user speaks Portuguese"])
        assert [f.object for f in memory.get_all()] == ["Porto"], "nothing of a batch stored"


def test_search_many_answers_each_query_as_search_does(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        memory.add_facts(FACTS)
        queries = ["editor", "lives Porto", "nothing at all", "editor"]
        answers = memory.search_many(queries, limit=5)
        assert len(answers) == len(queries)
        for query, found in zip(queries, answers):
            assert found == memory.search(query, limit=5), query
        assert [h.fact.object for h in answers[0]] == ["helix"]
        assert answers[2] == []
        then = memory.search_many(["lives"], as_of=T0 + timedelta(hours=1))
        assert [h.fact.object for h in then[0]] == ["Porto"]
        with pytest.raises(TypeError):
            memory.search_many([1, 2])


def test_async_memory_has_every_method_of_memory_as_a_coroutine():
    public = {name for name in dir(factmem.Memory)
              if not name.startswith("_") and callable(getattr(factmem.Memory, name))}  # fmt: skip
    for name in public - {"close"}:
        assert inspect.iscoroutinefunction(getattr(factmem.AsyncMemory, name)), name
    assert inspect.iscoroutinefunction(factmem.AsyncMemory.close)


def test_async_memory_answers_as_memory_does(db, scope):
    async def run() -> None:
        async with factmem.AsyncMemory(db, scope=scope) as memory:
            added = await memory.add_facts(FACTS)
            assert [r.status for r in added][:3] == ["added", "added", "added"]
            found = await memory.search("editor")
            assert [h.fact.object for h in found] == ["helix"]
            assert (await memory.search_many(["editor"]))[0] == found
            assert (await memory.get(added[0].fact.id)).is_current is False
            recalled = await memory.recall("which editor")
            assert "helix" in recalled.text
            with pytest.raises(factmem.NotFound):
                await memory.get("0123456789abcdef")
            assert (await memory.erase())["versions"] == 3
        assert memory.closed
        with pytest.raises(factmem.Error):
            await memory.search("editor")

    asyncio.run(run())


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_200_concurrent_searches_never_hold_up_the_event_loop(backend, tmp_path):
    """A heartbeat ticks every 5 ms while 200 searches run at once; none of its ticks is
    more than 20 ms late. The searches are slow enough (each scores 20,000 facts) that
    running them on the loop would hold it up for far longer."""
    db = None if backend == "memory" else tmp_path / "memory.db"
    words = "parser tokenizer ledger runtime store index cache budget prompt agent".split()
    facts = [(f"project{i % 97}", f"uses_{i}", words[i % len(words)],
              f"{words[i % 10]} {words[(i * 3) % 10]} {words[(i * 7) % 10]} memory {i}")
             for i in range(20_000)]  # fmt: skip

    async def run() -> list:
        async with factmem.AsyncMemory(db, scope="heartbeat") as memory:
            await memory.add_facts(facts)
            await memory.search("memory parser")  # the search index is loaded
            late: list = []
            stop = asyncio.Event()

            async def heartbeat() -> None:
                loop = asyncio.get_running_loop()
                due = loop.time() + 0.005
                while not stop.is_set():
                    await asyncio.sleep(max(0.0, due - loop.time()))
                    late.append(loop.time() - due)
                    due += 0.005

            beating = asyncio.create_task(heartbeat())
            queries = [f"memory {words[i % 10]} {words[(i + 3) % 10]}" for i in range(200)]
            answers = await asyncio.gather(*(memory.search(q, limit=10) for q in queries))
            stop.set()
            await beating
            assert all(len(found) == 10 for found in answers)
            return late

    late = asyncio.run(run())
    assert late, "the heartbeat ticked"
    assert max(late) <= 0.020, f"a tick {max(late) * 1000:.1f} ms late ({len(late)} ticks)"
