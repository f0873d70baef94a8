"""The documents stay true: docs/python.md's quick start and the LangGraph-style example
run here, against the installed package."""

import runpy

from conftest import REPO


def quick_start() -> str:
    text = (REPO / "docs" / "python.md").read_text()
    section = text.split("## Quick start", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_quick_start_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(quick_start(), "docs/python.md", "exec"), {"__name__": "quick_start"})
    assert "Facts:" in capsys.readouterr().out
    assert (tmp_path / "memory.db").exists()


def test_the_langgraph_example_recalls_before_and_archives_after(capsys):
    example = REPO / "crates" / "factmem-python" / "examples" / "langgraph_memory.py"
    states = runpy.run_path(str(example), run_name="example")["main"]()
    first, second = states
    assert first["memory"] == ""  # nothing known before the first turn
    assert first["remembered"] == ["User lives in Lisbon"]
    assert "User lives in Lisbon" in second["memory"]  # recalled before the second
    assert second["messages"][-1]["content"] == "You live in Lisbon, as you told me."
    assert "agent: You live in Lisbon" in capsys.readouterr().out
