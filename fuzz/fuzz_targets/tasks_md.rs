//! `tasks_md`: `ledger::parse_tasks` on raw text and on documents built from the format's
//! own tokens (bullets, boxes, ids, metadata keys, prompt sections).
//!
//! Checks: no panic; every task id is digits and dots; line numbers are within the text,
//! increasing from task to task.

#![no_main]

use arbitrary::Arbitrary;
use factmem_fuzz::Doc;
use libfuzzer_sys::fuzz_target;

/// The tokens of tasks.md.
const TOKENS: &[&str] = &[
    "- [ ] ",
    "- [x] ",
    "* [-] ",
    "- [X] ",
    "[ ] ",
    "+ [ ] ",
    "1. [ ] ",
    "-[ ] ",
    "- [~] ",
    "- [] ",
    "- [ x] ",
    "- [ ]",
    "> ",
    "- ",
    "* ",
    "1.",
    "2.3",
    "3.4.1.",
    "4\\.",
    "10.",
    ".",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "_Requirements: ",
    "_Leverage: ",
    "_Prompt: ",
    "_",
    "File: ",
    "Purpose: ",
    "Role: ",
    "Task: ",
    "Restrictions: ",
    "Success: ",
    "Instructions: ",
    " | ",
    "# ",
    "## ",
    "```",
    ", ",
    "Title",
    "src/lib.rs",
];

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(String),
    Lines(Vec<Doc>),
}

fuzz_target!(|input: Input| {
    let text = match input {
        Input::Raw(text) => text,
        Input::Lines(lines) => {
            let lines: Vec<String> = lines.iter().map(|line| line.render(TOKENS)).collect();
            lines.join("\n")
        }
    };
    let (tasks, _diagnostics) = ledger::parse_tasks(&text);
    // `str::lines` and the parser may count a lone `\r` differently; bound by both.
    let line_count = text.split('\n').count();
    let mut previous = 0;
    for task in &tasks {
        let id = task.id();
        assert!(!id.is_empty(), "empty task id in {text:?}");
        assert!(
            id.chars().all(|c| c.is_ascii_digit() || c == '.'),
            "task id {id:?}"
        );
        assert!(
            task.line() >= 1 && task.line() <= line_count,
            "line {} of {line_count}",
            task.line()
        );
        assert!(task.line() > previous, "task lines not increasing");
        previous = task.line();
    }
});
