//! `docs/extraction-contract.md` stays true: every reply section, diagnostic rule (as the
//! code writes them), error code and limit of the code appears in it.

use std::path::Path;

use fact_extract::{
    LlmExtractorConfig, MAX_PROFILE_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS,
    MAX_TRANSCRIPT_BYTES, MIN_CHUNK_CHARS, MIN_SHORT_ID_CHARS, REPLY_SECTIONS, TranscriptError,
};
use fact_model::Timestamp;

/// The page, or `None` outside the repository (a packaged crate has no `docs/`).
fn page() -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/extraction-contract.md");
    std::fs::read_to_string(path).ok()
}

/// `n` with thousands separators, as the page writes numbers.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_contract_page_names_every_section_rule_code_and_limit() {
    let Some(page) = page() else {
        return;
    };
    for section in REPLY_SECTIONS {
        assert!(page.contains(&format!("`{section}`")), "section {section}");
    }
    // Every rule the code writes: the string literals `"llm.…"` of the sources.
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/llm");
    let mut rules = vec!["transcript".to_owned()];
    for entry in std::fs::read_dir(sources).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for piece in text.split("\"llm.").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase())
                .collect();
            if piece
                .get(name.len()..)
                .is_some_and(|rest| rest.starts_with('"'))
            {
                rules.push(format!("llm.{name}"));
            }
        }
    }
    rules.sort();
    rules.dedup();
    assert!(rules.len() >= 6, "{rules:?}");
    for rule in &rules {
        assert!(page.contains(&format!("| `{rule}` |")), "rule {rule}");
    }
    let now = Timestamp::UNIX_EPOCH;
    for error in [
        TranscriptError::InvalidTimestamp {
            line: 1,
            value: String::new(),
            reason: String::new(),
        },
        TranscriptError::FutureTimestamp {
            line: 1,
            at: now,
            now,
        },
        TranscriptError::TooLarge { bytes: 2, limit: 1 },
        TranscriptError::Empty {
            detail: String::new(),
        },
    ] {
        assert!(page.contains(&format!("`{}`", error.code())), "{error:?}");
    }
    for (name, value) in [
        ("MAX_TRANSCRIPT_BYTES", MAX_TRANSCRIPT_BYTES),
        ("MAX_PROFILE_CHARS", MAX_PROFILE_CHARS),
        ("MIN_CHUNK_CHARS", MIN_CHUNK_CHARS),
        ("MIN_SHORT_ID_CHARS", MIN_SHORT_ID_CHARS),
        ("MAX_TITLE_CHARS", MAX_TITLE_CHARS),
        ("MAX_SUMMARY_CHARS", MAX_SUMMARY_CHARS),
        (
            "max_prompt_chars",
            LlmExtractorConfig::default().max_prompt_chars,
        ),
    ] {
        assert!(page.contains(name), "{name}");
        assert!(page.contains(&thousands(value)), "{name} = {value}");
    }
}
