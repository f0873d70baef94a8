"""Memory.add with an ``llm`` callable: extraction through the update step (what memory
holds is in the prompt; the reply supersedes by id), and a model that fails: it raises,
returns no text, hangs, or answers what cannot be read."""

import time
from datetime import datetime, timezone

import pytest

import factmem
from conftest import fact, reply

SESSION = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
MOVE = [
    {"role": "user", "content": "I moved from Porto to Lisbon last month."},
    {"role": "assistant", "content": "Nice! How is Lisbon?"},
]


def test_add_extracts_facts_and_reports_what_changed(db, scope, scripted):
    llm = scripted(reply(fact("user", "lives_in", "Porto", "User lives in Porto", turn=0)),
                   reply(fact("user", "lives_in", "Lisbon", "User lives in Lisbon", turn=0)))
    with factmem.Memory(db, scope=scope, llm=llm) as memory:
        first = memory.add("I live in Porto.", session_time=SESSION)
        assert first.extracted and [f.object for f in first.added] == ["Porto"]
        assert first.added[0].valid_from == SESSION
        second = memory.add(MOVE, metadata={"title": "Moving"})
        assert second.title == "Moving" and second.messages == 2
        assert [f.object for f in second.added] == ["Lisbon"]
        assert second.superseded == [first.added[0].id]
        # The update step: the second prompt listed what memory held.
        assert "Porto" in llm.prompts[1]
        assert [f.object for f in memory.get_all()] == ["Lisbon"]
        assert "Lisbon" in memory.recall("where does the user live").text


def test_without_an_llm_add_archives_only(scope):
    with factmem.Memory(scope=scope) as memory:
        result = memory.add(MOVE)
        assert not result.extracted and result.added == []
        assert result.episode_id.startswith("ep_")
        assert "Lisbon" in memory.recall("Lisbon").text


def test_an_unreadable_reply_is_a_diagnostic_not_an_exception(scope):
    with factmem.Memory(scope=scope, llm=lambda prompt: "Sure! Here are the facts: none") as memory:
        result = memory.add(MOVE)
        assert result.extracted and result.added == []
        assert any("llm.reply" in line for line in result.diagnostics), result.diagnostics


def test_an_llm_that_raises_is_an_extraction_error_and_stores_no_fact(db, scope):
    def broken(prompt: str) -> str:
        raise ConnectionError("the API is down")

    with factmem.Memory(db, scope=scope, llm=broken) as memory:
        memory.add_fact("user", "lives_in", "Porto")
        with pytest.raises(factmem.ExtractionError) as raised:
            memory.add(MOVE)
        error = raised.value
        assert error.code == "extraction_failed" and "ConnectionError" in str(error)
        assert isinstance(error.__cause__, ConnectionError)
        assert error.episode_id and error.episode_id.startswith("ep_")
        # Nothing of the extraction was stored; the conversation is archived.
        assert [f.object for f in memory.get_all()] == ["Porto"]
        assert any(e.id == error.episode_id for e in memory.recall("Lisbon").episodes)


@pytest.mark.parametrize("answer", [None, 42, b"{}", {"facts": []}])
def test_an_llm_that_returns_no_text_is_an_extraction_error(scope, answer):
    with factmem.Memory(scope=scope, llm=lambda prompt: answer) as memory:
        with pytest.raises(factmem.ExtractionError, match="not str"):
            memory.add(MOVE)
        assert memory.get_all() == []


def test_an_llm_that_hangs_times_out_and_stores_no_fact(scope):
    def hangs(prompt: str) -> str:
        time.sleep(5)
        return reply(fact("user", "lives_in", "Lisbon", "User lives in Lisbon"))

    with factmem.Memory(scope=scope, llm=hangs, timeout=0.2) as memory:
        started = time.monotonic()
        with pytest.raises(factmem.ExtractionError, match="no reply within"):
            memory.add(MOVE)
        assert time.monotonic() - started < 3
        assert memory.get_all() == []


def test_an_llm_that_raises_a_base_exception_does_not_cross_as_a_panic(scope):
    def interrupted(prompt: str) -> str:
        raise KeyboardInterrupt

    with factmem.Memory(scope=scope, llm=interrupted) as memory:
        with pytest.raises(factmem.ExtractionError) as raised:
            memory.add(MOVE)
        assert isinstance(raised.value.__cause__, KeyboardInterrupt)
