"""``Memory.export`` and ``Memory.import_`` on every backend: a memory moves between
databases byte for byte, a second import changes nothing, a bad file imports nothing,
and Mem0's ``get_all`` answer comes in as facts."""

import asyncio
import json
from datetime import datetime, timezone

import pytest

import factmem

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def fill(memory: factmem.Memory) -> None:
    memory.add_fact("user", "prefers_editor", "vim", "User prefers vim", valid_from=T0)
    memory.add_fact("user", "prefers_editor", "helix", metadata={"source": "chat", "n": 3})
    memory.add_fact("Melanie", "adopted", "Oscar <the cat>")


def test_an_export_imported_elsewhere_exports_the_same_bytes(db, scope, tmp_path):
    out, back = tmp_path / "out.jsonl", tmp_path / "back.jsonl"
    with factmem.Memory(db, scope=scope) as memory:
        fill(memory)
        written = memory.export(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert written["records"] == len(lines) - 2 == 3
    assert json.loads(lines[0])["format"] == "factmem-export"
    assert not (tmp_path / "out.jsonl.partial").exists()
    with factmem.Memory(None, scope="copy") as copy:
        report = copy.import_(out)
        assert report["report"]["facts"]["imported"] == 3
        copy.export(str(back))
        copied = back.read_text(encoding="utf-8").splitlines()
        # The same records; the header names the scope, and the digest covers it.
        assert copied[1:-1] == lines[1:-1]
        assert json.loads(copied[0])["scope"] == "copy"
        again = copy.import_(out)
        assert again["report"]["unchanged"] == 3
        assert again["report"]["facts"]["imported"] == 0
        assert [hit.fact.object for hit in copy.search("helix")] == ["helix"]


def test_as_of_exports_the_memory_as_it_was(db, scope, tmp_path):
    out = tmp_path / "then.jsonl"
    with factmem.Memory(db, scope=scope) as memory:
        memory.add_fact("user", "lives_in", "Porto", valid_from=T0)
        memory.export(out, as_of=datetime(2000, 1, 1, tzinfo=timezone.utc))
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2


def test_a_bad_file_raises_invalid_input_naming_its_line_and_imports_nothing(tmp_path):
    good = tmp_path / "good.jsonl"
    with factmem.Memory(None, scope="s") as memory:
        fill(memory)
        memory.export(good)
    text = good.read_text(encoding="utf-8")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 30], encoding="utf-8")
    newer = tmp_path / "newer.jsonl"
    newer.write_text(text.replace('"version":1', '"version":9', 1), encoding="utf-8")
    with factmem.Memory(None, scope="t") as target:
        target.add_fact("user", "lives_in", "Porto")
        with pytest.raises(factmem.InvalidInput) as cut_error:
            target.import_(cut)
        assert cut_error.value.code == "invalid_export"
        assert "line 5" in str(cut_error.value)
        with pytest.raises(factmem.InvalidInput) as newer_error:
            target.import_(newer)
        assert newer_error.value.code == "export_version"
        with pytest.raises(factmem.InvalidInput):
            target.import_(good, source="csv")
        with pytest.raises(factmem.StoreError):
            target.import_(tmp_path / "missing.jsonl")
        assert [f.object for f in target.get_all()] == ["Porto"]


def test_a_mem0_dump_comes_in_as_facts(tmp_path):
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": [
        {"id": "m1", "memory": "Prefers dark mode", "user_id": "alice",
         "created_at": "2025-01-02T03:04:05Z", "metadata": {"app": "ide"}},
    ]}), encoding="utf-8")  # fmt: skip
    with factmem.Memory(None, scope="alice") as memory:
        answer = memory.import_(dump, source="mem0")
        assert answer["mem0"]["facts"] == 1
        (fact,) = memory.get_all()
        assert (fact.subject, fact.statement) == ("alice", "Prefers dark mode")
        assert fact.valid_from == datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        assert fact.metadata["mem0_id"] == "m1"


def test_the_async_memory_exports_and_imports_too(tmp_path):
    out = tmp_path / "a.jsonl"

    async def main() -> None:
        async with factmem.AsyncMemory(None, scope="a") as memory:
            await memory.add_fact("user", "prefers_editor", "vim")
            assert (await memory.export(out))["records"] == 1
            assert (await memory.import_(out))["report"]["unchanged"] == 1

    asyncio.run(main())
