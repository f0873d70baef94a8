//! `llm_reply`: `fact_extract::parse_reply`, the reader of a model's extraction reply, on
//! raw text and on text around a reply-shaped JSON object (facts with the keys and
//! aliases the reader knows, hostile values, braces and fences around it).
//!
//! Checks: no panic; facts keep their order, each with a position from 1 up to the number
//! of entries read.

#![no_main]

use arbitrary::Arbitrary;
use fact_extract::parse_reply;
use factmem_fuzz::{Doc, Json, Key, Vocab, render_object};
use libfuzzer_sys::fuzz_target;

const VOCAB: Vocab = Vocab {
    keys: &[
        "subject",
        "predicate",
        "relation",
        "object",
        "statement",
        "content",
        "fact_text",
        "category",
        "fact_type",
        "confidence",
        "title",
        "summary",
        "facts",
    ],
    strings: &[
        "user",
        "prefers",
        "dark mode",
        "preference",
        "knowledge",
        "0.9",
        "1",
        "NaN",
        "-0",
        "",
        " ",
        "{",
        "}",
        "```json",
    ],
    text: &[
        "{",
        "}",
        "[",
        "]",
        "\"",
        "```json\n",
        "```",
        "facts",
        ":",
        ",",
        "\\",
        "\n",
    ],
};

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(String),
    Built {
        before: Doc,
        title: Option<Json>,
        summary: Option<Json>,
        facts: Vec<Vec<(Key, Json)>>,
        extra: Vec<(Key, Json)>,
        after: Doc,
    },
}

fn render(
    before: &Doc,
    title: Option<&Json>,
    summary: Option<&Json>,
    facts: &[Vec<(Key, Json)>],
    extra: &[(Key, Json)],
    after: &Doc,
) -> String {
    let mut out = before.render(VOCAB.text);
    out.push('{');
    for (name, value) in [("title", title), ("summary", summary)] {
        if let Some(value) = value {
            out.push_str(&format!("\"{name}\":"));
            value.render_into(&VOCAB, &mut out);
            out.push(',');
        }
    }
    out.push_str("\"facts\":[");
    for (i, fact) in facts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        render_object(fact, &VOCAB, &mut out);
    }
    out.push(']');
    for (key, value) in extra {
        out.push(',');
        let mut field = String::new();
        render_object(&[(key.clone(), value.clone())], &VOCAB, &mut field);
        out.push_str(field.trim_start_matches('{').trim_end_matches('}'));
    }
    out.push('}');
    after.render_into(VOCAB.text, &mut out);
    out
}

fn check(text: &str) {
    let Ok(reply) = parse_reply(text) else { return };
    let entries = reply.facts.len() + reply.rejected.len();
    let mut previous = 0;
    for fact in &reply.facts {
        assert!(fact.position > previous, "positions out of order");
        assert!(
            fact.position <= entries,
            "position {} of {entries} entries",
            fact.position
        );
        previous = fact.position;
    }
}

fuzz_target!(|input: Input| match input {
    Input::Raw(text) => check(&text),
    Input::Built {
        before,
        title,
        summary,
        facts,
        extra,
        after,
    } => {
        check(&render(
            &before,
            title.as_ref(),
            summary.as_ref(),
            &facts,
            &extra,
            &after,
        ));
    }
});
