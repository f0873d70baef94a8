"""The exceptions of factmem: one base, :class:`Error`, and a class per kind of failure.

The native module raises these classes itself, so ``except factmem.NotFound`` catches
what the Rust code raised. Every exception has a short stable ``code`` (``not_found``,
``busy``, ``invalid_input``, ``closed``, ...), the same codes the ``facts`` command and
the MCP tools report.
"""

from typing import Optional

__all__ = [
    "Error",
    "StoreError",
    "NotFound",
    "InvalidInput",
    "EmbedderNotInstalled",
    "ExtractionError",
]


class Error(Exception):
    """Any failure of factmem. ``code`` names it; ``str(error)`` explains it."""

    code: str

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.code = code


class StoreError(Error):
    """The store could not read or write (``code``: ``io``, ``busy``, ``corrupt``,
    ``newer_schema``, ...), or the embedding model failed."""


class NotFound(Error, LookupError):
    """No fact, episode or subject has this id or name."""

    def __init__(self, message: str, code: str = "not_found") -> None:
        super().__init__(message, code)


class InvalidInput(Error, ValueError):
    """An argument of the right type with a value factmem refuses (a blank subject, a
    confidence above 1, a naive datetime, an id that is not 16 hex digits)."""

    def __init__(self, message: str, code: str = "invalid_input") -> None:
        super().__init__(message, code)


class EmbedderNotInstalled(InvalidInput):
    """A named model (``embedder="minilm"``) whose packages are missing (``code``
    ``embedder_not_installed``) or installed but broken (``embedder_broken``). The
    message names the pip command that fixes it; ``package`` names the package."""

    package: Optional[str]

    def __init__(
        self,
        message: str,
        code: str = "embedder_not_installed",
        package: Optional[str] = None,
    ) -> None:
        super().__init__(message, code)
        self.package = package


class ExtractionError(Error):
    """The ``llm`` failed while facts were extracted from a conversation: it raised
    (the exception is ``__cause__``), returned something that is not ``str``, or did not
    answer within ``timeout``. No fact of that conversation was stored; the conversation
    itself is archived as episode ``episode_id`` and found by ``recall``."""

    episode_id: Optional[str]

    def __init__(
        self, message: str, code: str = "extraction_failed", episode_id: Optional[str] = None
    ) -> None:
        super().__init__(message, code)
        self.episode_id = episode_id
