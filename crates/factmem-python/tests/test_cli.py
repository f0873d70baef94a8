"""The ``facts`` command the wheel installs: the console script (the venv's ``bin/facts``,
beside ``sys.executable``) and ``python -m factmem``, run as a user runs them, one process
per command, against the native binary's fixtures and expected outputs."""

import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import factmem
from conftest import REPO, under_ci

#: The command's own fixtures (crates/facts/tests/fixtures).
FIXTURES = REPO / "crates" / "facts" / "tests" / "fixtures"
#: The protocol version the HTTP test speaks (crates/facts/tests/tenants.rs).
PROTOCOL_VERSION = "2025-06-18"


def console_script() -> Path:
    """The ``facts`` script of the environment this Python runs in. The installed wheel
    has it; a run from the source tree (no wheel) fails under CI and in ``.ci/py``
    (``FACTMEM_EXPECT_INSTALLED``), and skips elsewhere."""
    bin_dir = Path(sys.executable).parent
    script = bin_dir / ("facts.exe" if os.name == "nt" else "facts")
    if not script.exists():
        message = f"no facts console script beside {sys.executable}: the wheel is not installed"
        if under_ci() or os.environ.get("FACTMEM_EXPECT_INSTALLED"):
            pytest.fail(message)
        pytest.skip(message)
    return script


def clean_env(**extra: str) -> Dict[str, str]:
    """The environment without the variables that change what ``facts`` does."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FACTMEM_EMBEDDER", "FACTMEM_DB", "FACTMEM_DATABASE_URL", "RUST_LOG",
                        "FACTMEM_MODELS")}  # fmt: skip
    env.update(extra)
    return env


def facts(*args: str, cwd: Optional[Path] = None, stdin: Optional[str] = None,
          env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:  # fmt: skip
    """``facts ARGS...`` through the console script, to its end."""
    return subprocess.run(
        [str(console_script()), *args], input=stdin, capture_output=True, text=True,
        cwd=cwd, env=clean_env() if env is None else env, timeout=120,
    )  # fmt: skip


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_version_is_the_package_version():
    expected = f"facts {factmem.__version__}\n"
    out = facts("--version")
    assert (out.returncode, out.stdout) == (0, expected), out
    module = subprocess.run([sys.executable, "-m", "factmem", "--version"],
                            capture_output=True, text=True, env=clean_env(), timeout=60)  # fmt: skip
    assert (module.returncode, module.stdout) == (0, expected), module


def test_help_lists_the_subcommands_and_a_bad_flag_is_a_usage_error():
    out = facts("--help")
    assert out.returncode == 0, out
    for sub in ("mem", "mcp", "replay", "model"):
        assert re.search(rf"^\s+{sub}\s", out.stdout, re.M), out.stdout
    bad = facts("--no-such-flag")
    assert bad.returncode == 2, bad
    assert "--no-such-flag" in bad.stderr and bad.stdout == "", bad
    no_traceback(bad.stderr)
    bad = subprocess.run([sys.executable, "-m", "factmem", "mem", "search"],
                         capture_output=True, text=True, env=clean_env(), timeout=60)  # fmt: skip
    assert bad.returncode == 2, bad
    no_traceback(bad.stderr)


def test_mem_add_then_search_on_a_sqlite_file(tmp_path):
    db = str(tmp_path / "nested" / "memory.db")
    added = facts("mem", "--db", db, "add", "--subject", "project:rlm",
                  "--relation", "uses_database", "--object", "sqlite")  # fmt: skip
    assert added.returncode == 0, added
    match = re.fullmatch(r"added ([0-9a-f]{16})\n", added.stdout)
    assert match, added.stdout
    fact_id = match.group(1)
    found = facts("mem", "--db", db, "search", "which", "database?")
    assert found.returncode == 0, found
    assert found.stdout.startswith(fact_id), found.stdout
    assert "project:rlm uses_database sqlite" in found.stdout, found.stdout
    as_json = json.loads(facts("mem", "--db", db, "search", "sqlite", "--json").stdout)
    assert as_json["results"][0]["fact"]["id"] == fact_id, as_json
    # The library reads what the command wrote.
    with factmem.Memory(db) as memory:
        assert [s.fact.id for s in memory.search("sqlite")] == [fact_id]
    missing = facts("mem", "--db", db, "show", "0123456789abcdef")
    assert missing.returncode == 3, missing


def test_replay_reads_stdin_and_writes_stdout_as_the_binary_does():
    script = (FIXTURES / "replay.jsonl").read_text()
    out = facts("replay", "-", "--project", "tests/fixtures/project", "--deterministic",
                cwd=FIXTURES.parent.parent, stdin=script)  # fmt: skip
    # The script fails on purpose (crates/facts/tests/cli.rs): exit code 1, lines on stderr.
    assert out.returncode == 1, out.stderr
    assert "6 of 14 requests failed (line 5, 6, 7, 14, 15, 16)" in out.stderr, out.stderr
    assert out.stdout == (FIXTURES / "replay.expected.jsonl").read_text()


def start(*args: str) -> subprocess.Popen:
    """``facts ARGS...`` running, its pipes unbuffered (so ``select`` sees every line)."""
    return subprocess.Popen(
        [str(console_script()), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=clean_env(), bufsize=0,
    )  # fmt: skip


def read_line(stream, timeout: float = 30.0) -> bytes:
    """One line of a child's pipe, or a failure after ``timeout`` seconds."""
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no line within {timeout} s"
    return stream.readline()


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sigint_ends_mcp_on_stdio_promptly_without_a_traceback(tmp_path):
    child = start("mcp", "--db", str(tmp_path / "m.db"))
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "factmem-pytest", "version": "0"}}}  # fmt: skip
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write((json.dumps(init) + "\n").encode())
        child.stdin.flush()
        answer = json.loads(read_line(child.stdout))
        assert answer["result"]["serverInfo"]["name"] == "facts", answer
        started = time.monotonic()
        child.send_signal(signal.SIGINT)
        code = child.wait(timeout=10)
        assert time.monotonic() - started < 5
    finally:
        child.kill()
        _, stderr = child.communicate()
    # As the native binary: no SIGINT handler, so the signal ends the process.
    assert code == -signal.SIGINT, (code, stderr)
    no_traceback(stderr.decode(errors="replace"))


def tenant_file(path: Path, *names: str) -> None:
    tenants = [{"tenant": name, "scope": name, "rights": ["read"],
                "sha256": hashlib.sha256(f"TOKEN-{name}".encode()).hexdigest()}
               for name in names]  # fmt: skip
    path.write_text(json.dumps({"tenants": tenants}))


def initialize(url: str, token: str) -> int:
    """The HTTP status of an MCP ``initialize`` with ``token``."""
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "factmem-pytest", "version": "0"}}}).encode()  # fmt: skip
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sighup_rereads_the_token_file(tmp_path):
    tokens = tmp_path / "tokens.json"
    tenant_file(tokens, "old")
    child = start("mcp", "--http", "127.0.0.1:0", "--tokens", str(tokens))
    stderr: List[bytes] = []
    try:
        assert child.stderr is not None
        url = ""
        while not url:
            line = read_line(child.stderr)
            assert line, f"no URL on stderr: {b''.join(stderr)!r}"
            stderr.append(line)
            found = re.search(rb"(https?://\S+)", line)
            url = found.group(1).decode() if found else ""
        assert initialize(url, "TOKEN-old") == 200
        assert initialize(url, "TOKEN-new") == 401

        tenant_file(tokens, "new")
        child.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while b"SIGHUP: re-read" not in b"".join(stderr):
            assert time.monotonic() < deadline, b"".join(stderr)
            stderr.append(read_line(child.stderr))
        assert child.poll() is None, "SIGHUP ended the server"
        assert initialize(url, "TOKEN-new") == 200
        assert initialize(url, "TOKEN-old") == 401
    finally:
        child.kill()
        child.communicate()
    no_traceback(b"".join(stderr).decode(errors="replace"))
