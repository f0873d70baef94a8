"""Hypothesis fuzzes the public API's arguments: whatever a caller passes, factmem answers
or raises an ordinary exception (TypeError, ValueError and its InvalidInput, LookupError
and its NotFound, factmem.Error), never a Rust panic (PyO3's PanicException, a
BaseException)."""

import json
import string
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import factmem
from conftest import fact

#: What a call may raise on bad input. A PanicException is none of these.
EXPECTED = (TypeError, ValueError, LookupError, factmem.Error)

zones = st.sampled_from([None, timezone.utc, timezone(timedelta(hours=-11)),
                         timezone(timedelta(hours=14))])  # fmt: skip
datetimes = st.builds(
    lambda dt, tz: dt.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    zones,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.text(alphabet=string.hexdigits, min_size=16, max_size=16),
    st.binary(max_size=10),
    datetimes,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)  # fmt: skip

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip

#: Each method with its positional parameters and its keywords.
METHODS = {
    "add": (["messages"], ["session_time", "metadata", "title"]),
    "add_fact": (["subject", "relation", "object", "statement"],
                 ["category", "confidence", "valid_from", "metadata"]),
    "search": (["query"], ["limit", "as_of", "hybrid", "filter", "recency_half_life",
                           "reference_date"]),
    "recall": (["query"], ["max_tokens", "limit", "as_of", "filter", "recency_half_life",
                           "reference_date", "expand"]),
    "get": (["id"], []),
    "get_all": ([], ["as_of", "filter"]),
    "update": (["id"], ["statement", "object", "category", "confidence", "metadata"]),
    "delete": (["id"], []),
    "history": (["subject"], ["as_of", "filter"]),
    "neighbours": (["entity"], ["depth", "limit", "as_of", "filter"]),
    "format": (["max_tokens"], ["as_of", "filter"]),
}  # fmt: skip


def call(target, name, positional, keywords):
    try:
        getattr(target, name)(*positional, **keywords)
    except EXPECTED:
        pass


@st.composite
def calls(draw):
    name = draw(st.sampled_from(sorted(METHODS)))
    params, keywords = METHODS[name]
    count = draw(st.integers(min_value=0, max_value=len(params)))
    positional = [draw(values) for _ in range(count)]
    chosen = draw(st.lists(st.sampled_from(keywords + ["bogus"]), unique=True)) if keywords else []
    return name, positional, {key: draw(values) for key in chosen}


_memory = factmem.Memory()
_memory.add_fact("user", "likes", "tea", "User likes tea")


@FUZZ
@given(calls())
def test_no_argument_reaches_a_panic(case):
    name, positional, keywords = case
    call(_memory, name, positional, keywords)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["add_fact", "search", "history", "update"]),
                          st.text(max_size=30), st.text(max_size=30)), max_size=8))  # fmt: skip
def test_sequences_of_text_never_panic(steps):
    with factmem.Memory() as memory:
        for name, a, b in steps:
            if name == "add_fact":
                call(memory, name, [a, b, a + b], {})
            elif name == "update":
                ids = [f.id for f in memory.get_all()] or [a]
                call(memory, name, [ids[0]], {"object": b})
            else:
                call(memory, name, [a], {})
        for current in memory.get_all():
            assert current.is_current


@FUZZ
@given(values, st.one_of(st.text(max_size=200), st.just("{}"),
                         st.builds(lambda v: json.dumps(v, default=str), values)))  # fmt: skip
def test_any_messages_and_any_model_reply_never_panic(messages, answer):
    with factmem.Memory(llm=lambda prompt: answer, timeout=5) as memory:
        call(memory, "add", [messages], {})
        call(memory, "add", ["I live in Lisbon"], {})


@FUZZ
@given(st.lists(st.dictionaries(st.sampled_from(["subject", "predicate", "object", "content",
                                                 "category", "confidence", "turn",
                                                 "supersedes"]), values, max_size=8),
                max_size=4))  # fmt: skip
def test_any_reply_facts_never_panic(facts):
    answer = json.dumps({"facts": facts + [fact("user", "lives_in", "Lisbon", "x")]},
                        default=str)  # fmt: skip
    with factmem.Memory(llm=lambda prompt: answer, timeout=5) as memory:
        call(memory, "add", ["I live in Lisbon"], {})


@FUZZ
@given(st.dictionaries(st.sampled_from(["action", "spec_name", "task_id", "run_id", "role",
                                        "output", "project_path", "x"]), values, max_size=6))
def test_any_protocol_request_never_panics(tmp_path_factory, request):
    runtime = factmem.Runtime(project=str(tmp_path_factory.getbasetemp()))
    try:
        answer = runtime.handle(request)
    except EXPECTED:
        return
    assert isinstance(answer.get("ok"), bool)


@FUZZ
@given(values, values, values, values)
def test_any_constructor_argument_never_panics(db, scope, embedder, timeout):
    if isinstance(db, str):
        db = None  # a path would create files wherever the fuzzer points
    try:
        factmem.Memory(db, scope, embedder, None, timeout=timeout).close()
    except EXPECTED:
        pass
