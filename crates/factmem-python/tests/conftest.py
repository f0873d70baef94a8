"""Shared fixtures of the factmem tests: the databases a memory runs on, and a scripted
model. The suite runs against the installed wheel (``.ci/py``), from a directory where
the source tree is not on ``sys.path``."""

import json
import os
import uuid
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import factmem

#: The repository's root, for the documents the tests keep true.
REPO = Path(__file__).resolve().parents[3]


def under_ci() -> bool:
    return os.environ.get("CI") == "true"


def postgres_url() -> str:
    """The test server (``.ci/pg-server``); a test that needs one fails under CI=true
    without it and skips elsewhere."""
    url = os.environ.get("FACTMEM_PG_URL", "")
    if not url:
        if under_ci():
            pytest.fail("FACTMEM_PG_URL is not set under CI=true: the PostgreSQL tests cannot run")
        pytest.skip("FACTMEM_PG_URL is not set: start .ci/pg-server to run the PostgreSQL tests")
    return url


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """Each backend a Memory opens: process memory, a SQLite file, PostgreSQL."""
    if request.param == "memory":
        yield None
    elif request.param == "sqlite":
        yield tmp_path / "nested" / "memory.db"
    else:
        yield postgres_url()


@pytest.fixture
def scope() -> str:
    """A scope of its own per test, so tests sharing a PostgreSQL server never meet."""
    return f"test-{uuid.uuid4().hex[:12]}"


def reply(*facts: dict, **sections: object) -> str:
    """A model reply of the extraction contract (docs/extraction-contract.md)."""
    return json.dumps({"facts": list(facts), **sections})


def fact(subject: str, predicate: str, obj: str, content: str, **more: object) -> dict:
    out = {"subject": subject, "predicate": predicate, "object": obj,
           "content": content, "category": "context", "confidence": 0.9}  # fmt: skip
    out.update(more)
    return out


class Scripted:
    """A model that answers each prompt with the next scripted reply and keeps the
    prompts it was asked."""

    def __init__(self, *replies: str) -> None:
        self.replies: List[str] = list(replies)
        self.prompts: List[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0) if self.replies else reply()


@pytest.fixture
def scripted() -> Callable[..., Scripted]:
    return Scripted
