"""The native half of factmem (Rust, PyO3). Import :mod:`factmem` instead: it checks
datetimes and builds the dataclasses from the tuples answered here.

A fact crosses as ``FactRow``: ``(id, subject, relation, object, statement, tags,
confidence, source, valid_from, valid_to, recorded_at, (superseded_by, metadata))``,
instants in Unix microseconds (UTC), metadata as a JSON object's text (``None`` without).
A ``filter`` argument is ``None`` or text: the JSON shape (an object) or the readable form;
a ``metadata`` argument is ``None`` or a JSON object's text.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__version__: str

#: A named model's files (``factmem._models.resolve``): ``(name, model, tokenizer,
#: runtime)``; ``runtime`` ``None`` looks for ONNX Runtime beside the model.
ModelFiles = Tuple[str, str, str, Optional[str]]

def cli_main(argv: List[str], resolve_model: Callable[[str], ModelFiles]) -> int:
    """Runs the ``facts`` command line ``argv`` (the program's name first) in this process,
    with the GIL released, and returns its exit code; ``resolve_model`` answers the files
    of a model name (``--embedder minilm``) or raises (its message is the usage error)."""

FactRow = Tuple[
    str, str, str, str, Optional[str], List[str], float, str, int, Optional[int],
    Optional[int], Tuple[Optional[str], Optional[str]],
]
ScoredRow = Tuple[float, FactRow]
MessageRow = Tuple[int, str, str, Optional[int], float]
EpisodeRow = Tuple[str, str, int, str, List[MessageRow]]

class Memory:
    def __init__(
        self,
        db: Optional[str],
        scope: str,
        embedder: Union[None, str, ModelFiles],
        llm: Optional[Callable[[str], str]],
        timeout: float,
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def add_fact(
        self,
        subject: str,
        relation: str,
        object: str,
        statement: Optional[str],
        category: str,
        confidence: float,
        valid_from: Optional[int],
        metadata: Optional[str],
    ) -> Tuple[str, FactRow, List[str], Optional[str]]: ...
    def add_facts(
        self,
        facts: List[
            Tuple[
                str, str, str, Optional[str], str, float, Optional[int], Optional[str]
            ]
        ],
    ) -> List[Tuple[str, FactRow, List[str], Optional[str]]]: ...
    def add(
        self,
        transcript: str,
        title: Optional[str],
        session_time: Optional[int],
        metadata: Optional[str],
    ) -> Tuple[
        str, str, int, int, bool, List[FactRow],
        Tuple[List[str], List[str], List[str], List[str]], int, List[str],
    ]: ...
    def search(
        self,
        query: str,
        limit: int,
        as_of: Optional[int],
        hybrid: bool,
        filter: Optional[str],
        recency_half_life: Union[None, int, str],
        reference_date: Optional[int],
    ) -> List[ScoredRow]: ...
    def search_many(
        self,
        queries: List[str],
        limit: int,
        as_of: Optional[int],
        hybrid: bool,
        filter: Optional[str],
        recency_half_life: Union[None, int, str],
        reference_date: Optional[int],
    ) -> List[List[ScoredRow]]: ...
    def recall(
        self,
        query: str,
        max_tokens: int,
        limit: int,
        as_of: Optional[int],
        filter: Optional[str],
        recency_half_life: Union[None, int, str],
        reference_date: Optional[int],
        expand: int,
    ) -> Tuple[
        str, int, List[ScoredRow], List[EpisodeRow], List[Tuple[float, str, FactRow]]
    ]: ...
    def get(self, id: str) -> FactRow: ...
    def get_all(self, as_of: Optional[int], filter: Optional[str]) -> List[FactRow]: ...
    def update(
        self,
        id: str,
        statement: Optional[str],
        object: Optional[str],
        category: Optional[str],
        confidence: Optional[float],
        metadata: Optional[str],
    ) -> Tuple[FactRow, Optional[str]]: ...
    def delete(self, id: str) -> int: ...
    def erase(self) -> Dict[str, int]: ...
    def export(self, path: str, as_of: Optional[int]) -> Dict[str, Any]: ...
    def import_(self, path: str, source: str) -> str: ...
    def history(
        self, subject: str, as_of: Optional[int], filter: Optional[str]
    ) -> List[FactRow]: ...
    def neighbours(
        self,
        entity: str,
        depth: int,
        limit: int,
        as_of: Optional[int],
        filter: Optional[str],
    ) -> List[Tuple[int, List[str], Optional[str], FactRow]]: ...
    def format(self, max_tokens: int, as_of: Optional[int], filter: Optional[str]) -> str: ...

class Runtime:
    def __init__(self, project: str, db: Optional[str]) -> None: ...
    def handle(self, request: str) -> str: ...

