"""factmem.Runtime: the JSON protocol of docs/protocol.md in-process, and its thin
methods."""

import pytest

import factmem

OUTPUT = (
    "Done.\nBEGIN_DISPATCH_RESULT\n"
    '{"task_id": "1", "status": "completed", "summary": "Parser added", '
    '"files_changed": ["src/parser.rs"]}\nEND_DISPATCH_RESULT'
)


@pytest.fixture
def project(tmp_path):
    spec = tmp_path / ".spec-context" / "specs" / "demo"
    spec.mkdir(parents=True)
    (spec / "tasks.md").write_text(
        "- [ ] 1. Parse tasks.md\n- [ ] 2. Teach the parser task metadata\n"
    )
    return tmp_path


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_one_task_through_the_protocol(project, store, tmp_path):
    db = tmp_path / "runtime.db" if store == "sqlite" else None
    runtime = factmem.Runtime(project=project, db=db)
    run = runtime.init_run("demo", "1")
    ingested = runtime.ingest_output(run["run_id"], "implementer", "1", OUTPUT)
    assert ingested["next_action"] == "dispatch_reviewer"
    nxt = runtime.init_run("demo", "2")
    prompt = runtime.compile_prompt(nxt["run_id"], "implementer", "2")
    assert "src/parser.rs modified_by task:1" in prompt["session_context"]


def test_handle_answers_errors_as_the_protocol_does(project):
    runtime = factmem.Runtime(project=project)
    answer = runtime.handle({"action": "fly"})
    assert answer["ok"] is False and answer["error"]["code"] == "unknown_action"
    answer = runtime.handle({"action": "init_run", "spec_name": "demo", "task_id": "1",
                             "surprise": 1})  # fmt: skip
    assert answer["error"]["code"] == "invalid_request" and "surprise" in answer["error"]["message"]
    with pytest.raises(factmem.NotFound):
        runtime.init_run("demo", "99")
    with pytest.raises(TypeError, match="^request"):
        runtime.handle('{"action": "init_run"}')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^request"):
        runtime.handle({"action": object()})


def test_a_contract_failure_is_an_answer_not_an_exception(project):
    runtime = factmem.Runtime(project=project)
    run = runtime.init_run("demo", "1")
    answer = runtime.ingest_output(run["run_id"], "implementer", "1", "no block here")
    assert answer["status"] == "failed" and answer["next_action"]
