//! `requirements`: `dispatch_runtime::prompt::acceptance_criteria` on requirements.md text
//! (raw, after a line of ids, or built from headings, list numbers, bold ids and EARS
//! words) and arbitrary ids.
//!
//! Checks: no panic; every id reported missing is one of the ids asked for, and every
//! criterion is a `- ` line.

#![no_main]

use arbitrary::Arbitrary;
use dispatch_runtime::prompt::acceptance_criteria;
use factmem_fuzz::{Doc, Str, Vocab};
use libfuzzer_sys::fuzz_target;

/// The tokens of requirements.md.
const TOKENS: &[&str] = &[
    "### Requirement ",
    "## ",
    "# ",
    "#### ",
    "#### Acceptance Criteria",
    "\n",
    "1. ",
    "2. ",
    "- ",
    "* ",
    "+ ",
    "**",
    ":",
    ".",
    " ",
    "WHEN ",
    "IF ",
    "THEN ",
    "SHALL ",
    "3",
    "3.3",
    "3.3.1",
    "2.5",
    "1.1",
    "10",
    "**3.2**",
    "**3.3:**",
    "1) ",
    "\t",
    "```",
];

const VOCAB: Vocab = Vocab {
    keys: &[],
    strings: &[
        "1", "1.1", "3", "3.3", "3.3.1", "3.33", "2.5", "10", "", " ", ".", "3.", "0",
    ],
    text: TOKENS,
};

#[derive(Arbitrary, Debug)]
enum Input {
    /// The ids, comma-separated, on the first line; the requirements.md after it.
    Raw(String),
    Built {
        doc: Doc,
        ids: Vec<Str>,
    },
}

fuzz_target!(|input: Input| {
    let (md, ids) = match input {
        Input::Raw(text) => {
            let (ids, md) = text.split_once('\n').unwrap_or((text.as_str(), ""));
            (
                md.to_owned(),
                ids.split(',').map(str::to_owned).collect::<Vec<_>>(),
            )
        }
        Input::Built { doc, ids } => (
            doc.render(TOKENS),
            ids.iter().map(|id| id.text(&VOCAB)).collect(),
        ),
    };
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (lines, missing) = acceptance_criteria(&md, &id_refs);
    for id in &missing {
        assert!(ids.contains(id), "missing id {id:?} was not asked for");
    }
    for line in &lines {
        assert!(line.starts_with("- "), "criterion line {line:?}");
    }
});
