//! The analyzed part of a query is bounded: a multi-megabyte task prompt is analyzed up to
//! `MAX_QUERY_BYTES` and `MAX_QUERY_TERMS`.

use fact_retrieve::{
    FactQuery, FactRetriever, IndexRetriever, MAX_QUERY_BYTES, MAX_QUERY_TERMS, RecallQuery,
    query_terms, query_text, recall,
};
use fact_store::{Analyzer, InMemoryEpisodeStore};
use proptest::prelude::*;

use super::{fact, store};

/// `words` distinct words (`w0 w1 …`), then more of them until the text has `bytes` bytes.
fn varied(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut n = 0usize;
    while text.len() < bytes {
        text.push_str(&format!("w{n} "));
        n += 1;
    }
    text
}

fn distinct(terms: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in terms {
        if !out.contains(&term) {
            out.push(term);
        }
    }
    out
}

#[test]
fn a_six_megabyte_prompt_analyzes_a_bounded_number_of_terms() {
    let store = store();
    // Early words of the prompt find their facts; a word past the cap does not count.
    store
        .add(vec![
            fact("src/parser.rs", "modified_by", "task:1", "1", 0),
            fact("src/zebra.rs", "modified_by", "task:1", "1", 0),
        ])
        .unwrap();
    let prompt = format!("Extend the parser {} zebra", varied(6 << 20));
    assert!(prompt.len() > 6_000_000);
    let retriever = IndexRetriever::new(store.clone());
    let query = FactQuery::new("2", prompt.as_str());
    let terms = retriever.query_terms(&query);
    assert_eq!(terms.len(), MAX_QUERY_TERMS);
    assert_eq!(terms[..3], ["extend", "parser", "w0"]);
    assert!(!terms.contains(&"zebra".to_owned()));
    assert!(query_text(store.analyzer(), &prompt).len() <= MAX_QUERY_BYTES);
    let retrieval = retriever.retrieve(&query).unwrap();
    let subjects: Vec<&str> = retrieval.facts.iter().map(|f| f.fact.subject()).collect();
    assert_eq!(subjects, ["src/parser.rs"]);
}

#[test]
fn few_distinct_terms_stop_at_the_byte_cap() {
    let analyzer = Analyzer::default();
    let prompt = "parser lexer ".repeat(500_000);
    let text = query_text(&analyzer, &prompt);
    assert!(text.len() <= MAX_QUERY_BYTES && text.len() > MAX_QUERY_BYTES - 16);
    // Cut between words: no clipped word becomes a term of its own.
    assert!(
        text.ends_with("parser") || text.ends_with("lexer"),
        "{}",
        text.len()
    );
    assert_eq!(query_terms(&analyzer, &prompt), ["parser", "lexer"]);
}

#[test]
fn one_huge_word_is_cut_on_a_char_boundary() {
    let analyzer = Analyzer::default();
    let prompt = "é".repeat(3_000_000);
    let text = query_text(&analyzer, &prompt);
    assert_eq!(text.len(), MAX_QUERY_BYTES);
    assert_eq!(query_terms(&analyzer, &prompt).len(), 1);
    // An odd cap falls inside a two-byte char: the cut moves back.
    let prompt = format!("a{}", "é".repeat(3_000_000));
    assert_eq!(query_text(&analyzer, &prompt).len(), MAX_QUERY_BYTES - 1);
}

#[test]
fn an_id_at_the_byte_cap_is_not_cut_into_a_shorter_one() {
    let analyzer = Analyzer::default();
    // `task:12345` straddles the cap: it is left out whole, not kept as `task` or `task:12`.
    let filler = "x ".repeat((MAX_QUERY_BYTES - 6) / 2);
    let prompt = format!("{filler}task:12345 more");
    assert!(prompt.len() > MAX_QUERY_BYTES);
    let terms = query_terms(&analyzer, &prompt);
    assert_eq!(terms, ["x"]);
}

#[test]
fn short_queries_are_analyzed_whole() {
    let analyzer = Analyzer::default();
    for text in ["", "Extend the parser", "src/core/parser_v2.ts task:12"] {
        assert_eq!(query_text(&analyzer, text), text);
        assert_eq!(
            query_terms(&analyzer, text),
            distinct(analyzer.analyze(text))
        );
    }
}

#[test]
fn recall_cuts_a_long_question_too() {
    let store = store();
    store
        .add(vec![fact("src/zebra.rs", "modified_by", "task:1", "1", 0)])
        .unwrap();
    let counter = fact_model::CharsPerToken::default();
    let question = format!("{} zebra", varied(1 << 20));
    let found = recall(
        &*store,
        &InMemoryEpisodeStore::default(),
        &RecallQuery::new(&question),
        &counter,
    )
    .unwrap();
    assert!(found.facts.is_empty());
    let found = recall(
        &*store,
        &InMemoryEpisodeStore::default(),
        &RecallQuery::new("zebra"),
        &counter,
    )
    .unwrap();
    assert_eq!(found.facts.len(), 1);
}

/// Words without `:`, so each word is at most one term, joined by varied separators.
fn long_text() -> impl Strategy<Value = String> {
    let word = "[a-z]{1,3}[0-9]{0,2}|[A-Z][a-z]{0,4}|é[a-z]{0,2}";
    let sep = prop::sample::select(vec![" ", "\n", ", ", "/", "_", "-", " the "]);
    prop::collection::vec((word, sep), 0..3_000)
        .prop_map(|pieces| pieces.into_iter().map(|(w, s)| format!("{w}{s}")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn the_analyzed_terms_are_the_first_distinct_terms_at_most_the_cap(text in long_text()) {
        let analyzer = Analyzer::default();
        let all = distinct(analyzer.analyze(&text));
        let got = query_terms(&analyzer, &text);
        prop_assert_eq!(got.len(), all.len().min(MAX_QUERY_TERMS));
        prop_assert_eq!(&got[..], &all[..got.len()]);
        // The store analyzes exactly the prefix: its terms are the reported ones.
        prop_assert_eq!(distinct(analyzer.analyze(query_text(&analyzer, &text))), got);
        prop_assert!(text.starts_with(query_text(&analyzer, &text)));
    }
}
