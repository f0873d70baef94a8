"""factmem.Memory on every backend: facts in time, search, recall, history, format, and
the object's life (context manager, close, threads)."""

import threading
from datetime import datetime, timedelta, timezone

import pytest

import factmem

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def test_add_fact_supersedes_and_history_keeps_both(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        first = memory.add_fact("User", "prefers_editor", "vim", "User prefers vim",
                                category="preference", confidence=0.8, valid_from=T0)
        assert first.status == "added"
        assert first.fact.subject == "user" and first.fact.category == "preference"
        assert first.fact.valid_from == T0 and first.fact.valid_from.tzinfo is not None
        second = memory.add_fact("user", "prefers_editor", "helix", "User prefers helix",
                                 category="preference", valid_from=T0 + timedelta(days=1))
        assert second.superseded == [first.fact.id]
        assert [f.object for f in memory.get_all()] == ["helix"]
        assert [f.object for f in memory.get_all(as_of=T0 + timedelta(hours=1))] == ["vim"]
        versions = memory.history("USER")
        assert [v.object for v in versions] == ["vim", "helix"]
        assert versions[0].valid_to == T0 + timedelta(days=1)
        assert versions[0].superseded_by == second.fact.id
        assert memory.get(first.fact.id).is_current is False


def test_search_ranks_and_respects_as_of(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        memory.add_fact("user", "prefers_test_framework", "pytest",
                        "User prefers pytest over unittest", valid_from=T0)
        memory.add_fact("user", "lives_in", "Lisbon", "User lives in Lisbon", valid_from=T0)
        found = memory.search("which test framework")
        assert [hit.fact.object for hit in found] == ["pytest"]
        assert found[0].score > 0
        assert found[0].to_dict()["score"] == found[0].score
        assert memory.search("pytest", as_of=T0 - timedelta(days=1)) == []
        assert memory.search("pytest", limit=0) == []


def test_metadata_is_kept_and_filters_narrow_every_read(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        rlm = memory.add_fact("user", "works_on", "the parser", "User works on the parser",
                              valid_from=T0, metadata={"project": "rlm", "n": 3, "ok": True})
        assert rlm.fact.metadata == {"project": "rlm", "n": 3, "ok": True}
        memory.add_fact("user", "likes", "tea", "User likes tea", valid_from=T0,
                        metadata={"project": "home"})
        memory.add_fact("user", "uses", "vim", "User uses vim", valid_from=T0)
        where = 'metadata.project = "rlm"'
        shape = {"metadata.project": "rlm"}
        for wanted in (where, shape):
            assert [f.object for f in memory.get_all(filter=wanted)] == ["the parser"]
            assert [h.fact.object for h in memory.search("user", filter=wanted)] == ["the parser"]
            assert [f.object for f in memory.history("user", filter=wanted)] == ["the parser"]
            recalled = memory.recall("what does the user work on, like, use", filter=wanted)
            assert [h.fact.object for h in recalled.facts] == ["the parser"]
            assert "tea" not in memory.format(filter=wanted)
        assert {f.object for f in memory.get_all(filter={"metadata.project": {"exists": False}})} == {"vim"}
        later = {"valid_from": {"gt": T0}}
        assert memory.get_all(filter=later) == []
        updated = memory.update(rlm.fact.id, metadata={"project": "factmem"})
        assert updated.metadata == {"project": "factmem"}
        assert memory.get_all(filter=where) == []
        assert memory.update(rlm.fact.id, metadata={}).metadata == {}
        added = memory.add("We ship the parser on Friday.", session_time=T0,
                           metadata={"channel": "slack", "title": "Release"})
        assert added.title == "Release"
        with pytest.raises(factmem.InvalidInput) as raised:
            memory.get_all(filter={"colour": "red"})
        assert raised.value.code == "invalid_filter" and "/colour" in str(raised.value)
        with pytest.raises(factmem.InvalidInput) as raised:
            memory.add_fact("user", "likes", "x", metadata={"k" * 65: 1})
        assert raised.value.code == "invalid_metadata"


def test_recall_and_format_fit_their_budgets(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        memory.add_fact("user", "prefers_test_framework", "pytest",
                        "User prefers pytest over unittest", category="preference")
        memory.add("I adopted a cat named Miso last spring.", session_time=T0)
        recalled = memory.recall("what test framework and which cat?", max_tokens=500)
        assert "User prefers pytest over unittest" in recalled.text
        assert "Miso" in recalled.text
        assert recalled.tokens <= 500 and str(recalled) == recalled.text
        assert recalled.episodes and recalled.episodes[0].messages[0].role == "user"
        assert memory.recall("pytest", max_tokens=0).text == ""
        block = memory.format(max_tokens=200)
        assert "Facts:" in block and "pytest" in block
        assert recalled.to_dict()["facts"][0]["object"] == "pytest"


def test_update_and_delete(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        added = memory.add_fact("user", "lives_in", "Porto", "User lives in Porto")
        edited = memory.update(added.fact.id, confidence=0.5)
        assert edited.id == added.fact.id and edited.confidence == 0.5
        moved = memory.update(added.fact.id, object="Lisbon", statement="User lives in Lisbon")
        assert moved.id != added.fact.id and moved.object == "Lisbon"
        assert memory.get(added.fact.id).superseded_by == moved.id
        assert memory.delete(moved.id) == 1
        with pytest.raises(factmem.NotFound):
            memory.get(moved.id)
        with pytest.raises(factmem.InvalidInput):
            memory.update(added.fact.id)


def test_erase_empties_the_scope_and_only_it(db, scope):
    other = scope + "-other"
    with factmem.Memory(db, scope=other) as kept:
        kept.add_fact("user", "prefers_editor", "helix")
        if db is None:  # process memory: one Memory is one scope already
            kept = None
        with factmem.Memory(db, scope=scope) as memory:
            memory.add_fact("user", "lives_in", "Porto", "User lives in Porto", valid_from=T0)
            memory.add_fact("user", "lives_in", "Lisbon", "User lives in Lisbon",
                            valid_from=T0 + timedelta(days=1))
            memory.add([{"role": "user", "content": "I moved to Lisbon."}], title="Moving")
            erased = memory.erase()
            assert erased["versions"] == 2 and erased["episodes"] == 1, erased
            assert erased["messages"] == 1, erased
            assert memory.get_all() == [] and memory.history("user") == []
            assert memory.search("Lisbon") == [] and memory.recall("Lisbon").text == ""
            assert memory.erase()["versions"] == 0
            memory.add_fact("user", "lives_in", "Faro")  # as usable as a new memory
            assert [f.object for f in memory.get_all()] == ["Faro"]
        if kept is not None:
            assert [f.object for f in kept.get_all()] == ["helix"]


def test_a_duplicate_statement_is_reported_not_stored(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        first = memory.add_fact("user", "likes", "tea", "User likes tea")
        again = memory.add_fact("user", "enjoys", "tea", "user likes  TEA")
        assert again.status == "duplicate" and again.existing_id == first.fact.id
        assert len(memory.get_all()) == 1


def test_a_sqlite_memory_outlives_its_object(tmp_path, scope):
    path = tmp_path / "memory.db"
    with factmem.Memory(path, scope=scope) as memory:
        memory.add_fact("user", "lives_in", "Lisbon")
    with factmem.Memory(str(path), scope=scope) as memory:
        assert [f.object for f in memory.get_all()] == ["Lisbon"]
    with factmem.Memory(str(path), scope="someone-else") as memory:
        assert memory.get_all() == []


def test_a_closed_memory_raises_factmem_error():
    memory = factmem.Memory()
    memory.close()
    memory.close()  # twice is fine
    assert memory.closed and "closed" in repr(memory)
    for call in (memory.get_all, lambda: memory.search("x"), lambda: memory.add("hi"),
                 lambda: memory.add_fact("a", "b", "c"), memory.format):
        with pytest.raises(factmem.Error) as raised:
            call()
        assert raised.value.code == "closed"


def test_threads_share_one_memory(tmp_path, scope):
    with factmem.Memory(tmp_path / "m.db", scope=scope) as memory:
        errors = []

        def work(n: int) -> None:
            try:
                for i in range(25):
                    memory.add_fact(f"thread{n}", f"counter_{i}", str(i))
                    memory.search(f"counter_{i}")
            except Exception as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(memory.get_all()) == 100


def test_closing_while_other_threads_work_never_crashes(tmp_path):
    memory = factmem.Memory(tmp_path / "m.db")
    memory.add_fact("user", "likes", "tea")
    outcomes = []

    def search() -> None:
        for _ in range(200):
            try:
                memory.search("tea")
            except factmem.Error as error:
                outcomes.append(error.code)
                return

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    memory.close()
    for thread in threads:
        thread.join()
    assert set(outcomes) <= {"closed"}


def test_results_are_plain_dataclasses_with_to_dict(scope):
    import dataclasses
    import json

    with factmem.Memory(scope=scope) as memory:
        added = memory.add_fact("user", "likes", "tea", valid_from=T0)
        for value in (added, added.fact, memory.search("tea")[0]):
            assert dataclasses.is_dataclass(value)
            json.dumps(value.to_dict())
        assert added.fact.to_dict()["valid_from"] == "2026-03-01T09:00:00+00:00"
        assert added.fact.memory == "user likes tea"
        with pytest.raises(dataclasses.FrozenInstanceError):
            added.fact.object = "coffee"  # type: ignore[misc]


def test_version_is_the_workspace_version():
    from conftest import REPO

    manifest = (REPO / "Cargo.toml").read_text()
    package = manifest.split("[workspace.package]", 1)[1]
    version = package.split('version = "', 1)[1].split('"', 1)[0]
    assert factmem.__version__ == version


def test_logs_go_to_the_factmem_logger(caplog, tmp_path):
    import logging

    caplog.set_level(logging.INFO, logger="factmem")
    scripted = lambda prompt: "not json at all"  # noqa: E731
    with factmem.Memory(tmp_path / "m.db", llm=scripted) as memory:
        result = memory.add("I moved to Lisbon.")
    assert result.diagnostics
    assert any(r.name == "factmem" for r in caplog.records), caplog.records


def test_the_package_under_test_is_the_installed_wheel():
    """Under `.ci/py` the suite must test the wheel a user installs, not the sources."""
    import os

    if os.environ.get("FACTMEM_EXPECT_INSTALLED") != "1":
        return
    from conftest import REPO

    location = os.path.realpath(factmem.__file__)
    assert "site-packages" in location and not location.startswith(str(REPO)), location


def test_neighbours_walk_from_an_entity(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        works = memory.add_fact("user", "works_on", "project:rlm", valid_from=T0).fact
        lang = memory.add_fact("project:rlm", "written_in", "rust", valid_from=T0,
                               metadata={"lang": True}).fact
        memory.add_fact("berlin", "is_in", "germany", valid_from=T0)
        one = memory.neighbours("user")
        assert [(n.depth, n.fact.id) for n in one] == [(1, works.id)]
        two = memory.neighbours("user", depth=2)
        assert [(n.depth, n.path, n.via, n.fact.id) for n in two] == [
            (1, ("user",), None, works.id),
            (2, ("user", "project:rlm"), works.id, lang.id),
        ]
        assert two[1].to_dict()["path"] == ["user", "project:rlm"]
        assert memory.neighbours("user", depth=2, filter="metadata.lang exists") == []
        with pytest.raises(factmem.InvalidInput):
            memory.neighbours("user", depth=3)


def test_recall_expands_to_the_neighbours_of_its_best_facts(db, scope):
    with factmem.Memory(db, scope=scope) as memory:
        moved = memory.add_fact("caroline", "moved_to", "lisbon", "Caroline moved to Lisbon",
                                valid_from=T0).fact
        climate = memory.add_fact("lisbon", "has_climate", "mild", "Lisbon has mild winters",
                                  valid_from=T0).fact
        memory.add_fact("melanie", "paints", "sunsets", "Melanie paints sunsets", valid_from=T0)
        plain = memory.recall("Where did Caroline move?", limit=1)
        assert [f.fact.id for f in plain.facts] == [moved.id] and plain.expanded == []
        found = memory.recall("Where did Caroline move?", limit=1, expand=1)
        assert [(n.fact.id, n.via) for n in found.expanded] == [(climate.id, moved.id)]
        assert "Lisbon has mild winters" in found.text
        assert found.to_dict()["expanded"][0]["via"] == moved.id
        with pytest.raises(factmem.InvalidInput):
            memory.recall("Where did Caroline move?", expand=2)


def test_recency_is_opt_in(db, scope):
    from datetime import timedelta as td

    with factmem.Memory(db, scope=scope) as memory:
        old = memory.add_fact("user", "plays", "tennis", "User plays tennis on tennis courts",
                              valid_from=T0).fact
        new = memory.add_fact("user", "started", "padel", "User started padel, like tennis",
                              valid_from=T0 + td(days=150)).fact
        assert memory.search("tennis courts")[0].fact.id == old.id
        for half_life in ("30d", td(days=30)):
            found = memory.search("tennis courts", recency_half_life=half_life,
                                  reference_date=T0 + td(days=151))
            assert found[0].fact.id == new.id
        recalled = memory.recall("tennis courts", recency_half_life="2w")
        assert recalled.facts[0].fact.id == new.id
        with pytest.raises(factmem.InvalidInput):
            memory.search("tennis", recency_half_life="soon")
        with pytest.raises(TypeError):
            memory.search("tennis", recency_half_life=30)
