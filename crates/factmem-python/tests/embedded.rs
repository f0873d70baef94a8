//! The extension module in an interpreter embedded by `cargo test` (no wheel, no
//! maturin): the module is registered as `factmem._factmem` and the package's Python half
//! is imported from the source tree, so `cargo xtask check` exercises the binding, its
//! exceptions and its dataclasses on every run. The full suite runs against the built
//! wheel in `.ci/py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `script` with `factmem` importable: the native module from this crate, the Python
/// half from `python/`.
fn run(script: &std::ffi::CStr) {
    Python::attach(|py| {
        let module = pyo3::wrap_pymodule!(factmem::factmem_module)(py);
        let sys = py.import("sys").unwrap();
        // Nothing is written into the source tree.
        sys.setattr("dont_write_bytecode", true).unwrap();
        sys.getattr("modules")
            .unwrap()
            .set_item("factmem._factmem", module)
            .unwrap();
        let python = concat!(env!("CARGO_MANIFEST_DIR"), "/python");
        sys.getattr("path")
            .unwrap()
            .call_method1("insert", (0, python))
            .unwrap();
        let globals = PyDict::new(py);
        if let Err(error) = py.run(script, Some(&globals), None) {
            error.print(py);
            panic!("the script failed: {error}");
        }
    });
}

#[test]
fn memory_answers_with_dataclasses_and_raises_the_package_exceptions() {
    run(cr#"
from datetime import datetime, timezone
import factmem

t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
with factmem.Memory(scope="embedded") as memory:
    first = memory.add_fact("User", "prefers_editor", "vim", "User prefers vim",
                            category="preference", valid_from=t0)
    assert first.status == "added" and first.fact.subject == "user"
    second = memory.add_fact("user", "prefers_editor", "helix")
    assert second.superseded == [first.fact.id]
    assert [h.fact.object for h in memory.search("editor")] == ["helix"]
    assert [f.object for f in memory.get_all(as_of=t0)] == ["vim"]
    assert memory.get(first.fact.id).to_dict()["valid_from"] == "2026-03-01T00:00:00+00:00"
    try:
        memory.get("0123456789abcdef")
    except factmem.NotFound as error:
        assert error.code == "not_found"
    else:
        raise AssertionError("no NotFound")
    try:
        memory.search("x", limit=-1)
    except factmem.InvalidInput as error:
        assert str(error).startswith("limit")
    else:
        raise AssertionError("no InvalidInput")
    try:
        memory.search(3)
    except TypeError as error:
        assert str(error).startswith("query")
    else:
        raise AssertionError("no TypeError")
try:
    memory.format()
except factmem.Error as error:
    assert error.code == "closed"
else:
    raise AssertionError("a closed memory answered")
"#);
}

#[test]
fn an_llm_callable_extracts_and_its_failures_are_extraction_errors() {
    run(cr#"
import json
import factmem

reply = json.dumps({"facts": [{"subject": "user", "predicate": "lives_in",
    "object": "Lisbon", "content": "User lives in Lisbon", "category": "context",
    "turn": 0}]})
with factmem.Memory(llm=lambda prompt: reply) as memory:
    added = memory.add("I moved to Lisbon.")
    assert [f.object for f in added.added] == ["Lisbon"], added

def broken(prompt):
    raise ConnectionError("down")

with factmem.Memory(llm=broken) as memory:
    try:
        memory.add("I moved to Lisbon.")
    except factmem.ExtractionError as error:
        assert isinstance(error.__cause__, ConnectionError)
        assert memory.get_all() == []
    else:
        raise AssertionError("no ExtractionError")
"#);
}

#[test]
fn the_facts_command_runs_in_process_and_asks_the_host_for_named_models() {
    run(cr#"
import os, tempfile
from factmem import _factmem as native

asked = []
def missing(name):
    asked.append(name)
    raise LookupError('no model here: pip install "factmem[embed]"')

db = os.path.join(tempfile.mkdtemp(), "m.db")
recall = ["facts", "mem", "--db", db, "--embedder", "minilm", "recall", "--hybrid", "x"]
# The resolver is called with the GIL taken back; its exception is the usage error.
assert native.cli_main(recall, missing) == 2
assert asked == ["minilm"], asked
# An answer of the wrong shape, and files that are not there: usage errors too.
assert native.cli_main(recall, lambda name: ("x", 1)) == 2
gone = os.path.join(tempfile.mkdtemp(), "model.onnx")
assert native.cli_main(recall, lambda name: ("all-minilm-l6-v2-int8", gone, gone, None)) == 2
# A directory is not a name: the resolver is not asked.
asked.clear()
assert native.cli_main(["facts", "mem", "--db", db, "list"], missing) == 0
assert native.cli_main(["facts", "--no-such-flag"], missing) == 2
assert asked == [], asked
try:
    native.cli_main(["facts", "--version"], 3)
except TypeError as error:
    assert str(error).startswith("resolve_model"), error
else:
    raise AssertionError("a resolver that is not callable was taken")
"#);
}
