"""``facts mcp`` of the wheel (the console script) driven over stdio by the official MCP
Python SDK (PyPI ``mcp``, pinned by ``.ci/py``): the repository's client,
``crates/facts/tests/interop/mcp_client.py``, which ``.ci/run`` points at the native
binary, here pointed at the console script. Without the ``mcp`` package it fails under
CI=true and in ``.ci/py`` (``FACTMEM_EXPECT_INSTALLED``) and skips elsewhere."""

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import REPO, under_ci
from test_cli import clean_env, console_script

CLIENT = REPO / "crates" / "facts" / "tests" / "interop" / "mcp_client.py"
PROJECT = REPO / "crates" / "facts" / "tests" / "fixtures" / "project"


def test_the_official_python_sdk_drives_facts_mcp_over_stdio(tmp_path):
    if importlib.util.find_spec("mcp") is None:
        message = "the mcp package (the official MCP Python SDK) is not installed"
        if under_ci() or os.environ.get("FACTMEM_EXPECT_INSTALLED"):
            pytest.fail(message + " under CI: .ci/py installs it")
        pytest.skip(message)
    out = subprocess.run(
        [sys.executable, str(CLIENT), str(console_script()), str(PROJECT),
         str(tmp_path / "facts.db")],
        capture_output=True, text=True, env=clean_env(), timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "passed every check" in out.stdout, out.stdout
