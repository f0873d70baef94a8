"""Bad input: wrong types and unknown keywords are TypeErrors naming the parameter, wrong
values InvalidInput naming it, and no call reaches a Rust panic."""

from datetime import datetime, timezone

import pytest

import factmem


@pytest.fixture
def memory():
    with factmem.Memory() as memory:
        yield memory


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda m: m.search(1), "query"),
        (lambda m: m.search("x", limit="3"), "limit"),
        (lambda m: m.search("x", limit=True), "limit"),
        (lambda m: m.search("x", as_of="2026-01-01"), "as_of"),
        (lambda m: m.search("x", hybrid=1), "hybrid"),
        (lambda m: m.add_fact("s", "r", 3), "object"),
        (lambda m: m.add_fact("s", "r", "o", statement=b"x"), "statement"),
        (lambda m: m.add_fact("s", "r", "o", category=None), "category"),
        (lambda m: m.add_fact("s", "r", "o", confidence="high"), "confidence"),
        (lambda m: m.add(42), "messages"),
        (lambda m: m.add([{"role": "user", "content": 1}]), "messages[0].content"),
        (lambda m: m.add("hi", metadata=["title"]), "metadata"),
        (lambda m: m.search("x", filter=["subject"]), "filter"),
        (lambda m: m.recall("x", max_tokens=1.5), "max_tokens"),
        (lambda m: m.get(None), "id"),
        (lambda m: m.history(["user"]), "subject"),
        (lambda m: m.format("200"), "max_tokens"),
    ],
)
def test_wrong_types_name_the_parameter(memory, call, param):
    with pytest.raises(TypeError) as raised:
        call(memory)
    assert str(raised.value).startswith(param), raised.value


@pytest.mark.parametrize(
    "call, keyword",
    [
        (lambda m: m.search("x", top_k=3), "top_k"),
        (lambda m: m.add("hi", user_id="alice"), "user_id"),
        (lambda m: m.add_fact("s", "r", "o", tags=["x"]), "tags"),
        (lambda m: m.get_all(filters={}), "filters"),
    ],
)
def test_unknown_keywords_are_type_errors_naming_them(memory, call, keyword):
    with pytest.raises(TypeError, match=keyword):
        call(memory)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda m: m.search("x", limit=-1), "limit"),
        (lambda m: m.search("x", limit=10**30), "limit"),
        (lambda m: m.search("x", as_of=datetime(2026, 1, 1)), "as_of"),
        (lambda m: m.search("x", hybrid=True), "hybrid"),
        (lambda m: m.add_fact("s", "r", "o", confidence=1.5), "confidence"),
        (lambda m: m.add_fact("s", "r", "o", confidence=float("nan")), "confidence"),
        (lambda m: m.add_fact("s", "r", "o", category="gossip"), "category"),
        (lambda m: m.add("hi", metadata={"user": {"id": 1}}), "metadata"),
        (lambda m: m.add_fact("s", "r", "o", metadata={"a b": 1}), "metadata"),
        (lambda m: m.update("0" * 16, metadata={"k": [1]}), "metadata"),
        (lambda m: m.search("x", filter={"colour": "red"}), "filter"),
        (lambda m: m.get_all(filter="metadata.n >"), "filter"),
        (lambda m: m.history("user", filter={"and": {"subject": "x"}}), "filter"),
        (lambda m: m.add([]), "messages"),
        (lambda m: m.add([{"role": "user"}]), "messages[0]"),
    ],
)
def test_wrong_values_are_invalid_input_naming_the_parameter(memory, call, param):
    with pytest.raises(factmem.InvalidInput) as raised:
        call(memory)
    assert str(raised.value).startswith(param), raised.value
    assert isinstance(raised.value, ValueError)


def test_wrong_values_the_store_refuses_are_invalid_input(memory):
    with pytest.raises(factmem.InvalidInput) as raised:
        memory.add_fact("  ", "r", "o")
    assert raised.value.code == "invalid_fact"
    with pytest.raises(factmem.InvalidInput) as raised:
        memory.get("not-an-id")
    assert raised.value.code == "invalid_id"
    with pytest.raises(factmem.InvalidInput) as raised:
        memory.add([{"role": "user", "content": "hi", "timestamp": "yesterday"}])
    assert raised.value.code == "invalid_timestamp"
    with pytest.raises(factmem.NotFound) as raised:
        memory.delete("0123456789abcdef")
    assert isinstance(raised.value, LookupError) and raised.value.code == "not_found"


def test_constructor_arguments_are_checked():
    with pytest.raises(TypeError, match="^db"):
        factmem.Memory(db=3)
    with pytest.raises(TypeError, match="^scope"):
        factmem.Memory(scope=None)
    with pytest.raises(TypeError, match="^llm"):
        factmem.Memory(llm="gpt-4o")
    with pytest.raises(TypeError, match="^timeout"):
        factmem.Memory(timeout="10")
    with pytest.raises(TypeError, match="user_id"):
        factmem.Memory(user_id="alice")
    with pytest.raises(factmem.InvalidInput, match="^scope"):
        factmem.Memory(scope=" ")
    with pytest.raises(factmem.InvalidInput, match="^timeout"):
        factmem.Memory(timeout=0)
    with pytest.raises(factmem.InvalidInput, match="^embedder"):
        factmem.Memory(embedder="/nonexistent/model")


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(factmem.StoreError) as raised:
        factmem.Memory(bad)
    assert raised.value.code in ("corrupt", "backend", "io")


def test_an_unreachable_postgres_server_is_a_store_error():
    with pytest.raises(factmem.StoreError) as raised:
        factmem.Memory("postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert raised.value.code == "io"


def test_datetimes_in_any_zone_are_the_same_instant(memory):
    from datetime import timedelta

    lisbon = timezone(timedelta(hours=1))
    at = datetime(2026, 3, 1, 10, 0, tzinfo=lisbon)
    fact = memory.add_fact("user", "likes", "tea", valid_from=at).fact
    assert fact.valid_from == at and fact.valid_from.utcoffset() == timedelta(0)
