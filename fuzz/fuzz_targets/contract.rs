//! `contract`: `dispatch_runtime::parse_output` (markers, JSON, schema, token budget) on
//! an arbitrary role, budget, task id and output: raw text (after a header line
//! naming them), or text built around a marker block whose body is contract-shaped JSON.
//!
//! Checks: no panic, and an accepted block never costs more tokens than the budget.

#![no_main]

use arbitrary::Arbitrary;
use dispatch_runtime::parse_output;
use dispatch_runtime::reexports::{CharsPerToken, SourceRole};
use factmem_fuzz::{Doc, Json, OUTPUT_TEXT, Str, Vocab};
use libfuzzer_sys::fuzz_target;

/// The contract's keys and values.
const VOCAB: Vocab = Vocab {
    keys: &[
        "task_id",
        "status",
        "summary",
        "files_changed",
        "files_modified",
        "tests",
        "passed",
        "failed",
        "failures",
        "command",
        "issues",
        "severity",
        "file",
        "message",
        "fix",
        "assessment",
        "strengths",
        "required_fixes",
        "follow_up_actions",
        "decisions",
        "conventions",
        "errors",
    ],
    strings: &[
        "1",
        "2",
        "completed",
        "blocked",
        "failed",
        "approved",
        "needs_changes",
        "critical",
        "important",
        "minor",
        "src/parse.rs",
        "",
        " ",
        "cargo test",
    ],
    text: OUTPUT_TEXT,
};

#[derive(Arbitrary, Debug)]
enum Body {
    /// Contract-shaped: an object of the contract's keys.
    Json(Json),
    /// Any text between the markers.
    Text(Doc),
}

#[derive(Arbitrary, Debug)]
enum Input {
    /// `ROLE BUDGET CHARS_PER_TOKEN TASK_ID` on the first line (else `implementer 1200 4
    /// 1`), then the output: easy to write seeds for.
    Raw(String),
    /// Text, a marker block, text.
    Built {
        reviewer: bool,
        budget: u32,
        chars_per_token: u8,
        task_id: Str,
        before: Doc,
        begin: bool,
        body: Body,
        end: bool,
        after: Doc,
    },
}

/// The role: one of the two dispatch agents.
fn role(reviewer: bool) -> SourceRole {
    if reviewer {
        SourceRole::Reviewer
    } else {
        SourceRole::Implementer
    }
}

fn check(reviewer: bool, budget: u32, chars_per_token: u8, task_id: &str, output: &str) {
    let budget = budget as usize;
    let counter = CharsPerToken::new(usize::from(chars_per_token));
    if let Ok((_, tokens)) = parse_output(role(reviewer), output, task_id, budget, &counter) {
        assert!(
            tokens <= budget,
            "{tokens} tokens accepted under a budget of {budget}"
        );
    }
}

fuzz_target!(|input: Input| match input {
    Input::Raw(text) => {
        let (head, output) = text.split_once('\n').unwrap_or(("", text.as_str()));
        let words: Vec<&str> = head.split(' ').collect();
        match words[..] {
            [role, budget, chars_per_token, task_id] => check(
                role == "reviewer",
                budget.parse().unwrap_or(1200),
                chars_per_token.parse().unwrap_or(4),
                task_id,
                output,
            ),
            _ => check(false, 1200, 4, "1", &text),
        }
    }
    Input::Built {
        reviewer,
        budget,
        chars_per_token,
        task_id,
        before,
        begin,
        body,
        end,
        after,
    } => {
        let mut output = before.render(OUTPUT_TEXT);
        if begin {
            output.push_str("\nBEGIN_DISPATCH_RESULT\n");
        }
        match body {
            Body::Json(json) => json.render_into(&VOCAB, &mut output),
            Body::Text(doc) => doc.render_into(OUTPUT_TEXT, &mut output),
        }
        if end {
            output.push_str("\nEND_DISPATCH_RESULT\n");
        }
        after.render_into(OUTPUT_TEXT, &mut output);
        check(
            reviewer,
            budget,
            chars_per_token,
            &task_id.text(&VOCAB),
            &output,
        );
    }
});
