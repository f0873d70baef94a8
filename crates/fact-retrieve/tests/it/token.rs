//! Token counters: the estimate, and real BPE counts with the `tiktoken` feature.

use fact_model::{CharsPerToken, TokenCounter};

#[test]
fn chars_per_token_rounds_up_and_counts_chars() {
    let four = CharsPerToken::default();
    for (text, tokens) in [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("日本語の", 1),
        ("日本語のテ", 2),
    ] {
        assert_eq!(four.count(text), tokens, "{text:?}");
    }
    assert_eq!(
        CharsPerToken::new(0).count("abc"),
        3,
        "zero is treated as one"
    );
}

#[cfg(feature = "tiktoken")]
#[test]
fn bpe_counts_match_the_published_encodings() {
    use fact_retrieve::BpeTokenCounter;

    let o200k = BpeTokenCounter::o200k_base().unwrap();
    let cl100k = BpeTokenCounter::cl100k_base().unwrap();
    assert_eq!(o200k.count("hello world"), 2);
    assert_eq!(cl100k.count("hello world"), 2);
    assert_eq!(o200k.count(""), 0);
    // Special-token text is counted as ordinary text, never as one control token.
    assert!(cl100k.count("<|endoftext|>") > 1);
    assert!(format!("{o200k:?}").contains("o200k_base"));
}
