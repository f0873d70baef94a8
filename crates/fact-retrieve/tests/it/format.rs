//! The `[Session Context]` formatter.

use fact_retrieve::{MAX_LINE_CHARS, format_fact_line, format_session_facts};

use super::fact;

fn check(subject: &str, relation: &str, object: &str, task: &str, expect: &str) {
    let line = format_fact_line(&fact(subject, relation, object, task, 0));
    assert_eq!(line, expect);
    assert!(line.chars().count() <= MAX_LINE_CHARS);
}

#[test]
fn short_facts_are_one_plain_line() {
    check(
        "src/a.rs",
        "modified_by",
        "task:1",
        "1",
        "- src/a.rs modified_by task:1 [task:1]",
    );
    assert_eq!(format_session_facts(&[]), "");
}

#[test]
fn the_object_is_clipped_first_and_the_suffix_stays_whole() {
    let object = "o".repeat(150);
    let line = format_fact_line(&fact("task:1", "summary", &object, "1", 0));
    assert_eq!(line.chars().count(), MAX_LINE_CHARS);
    assert!(line.starts_with("- task:1 summary ooo"));
    assert!(line.ends_with("o... [task:1]"), "{line}");
}

#[test]
fn a_300_char_subject_still_yields_at_most_120_chars() {
    let subject = "s".repeat(200); // the model's limit; wider subjects cannot exist
    let line = format_fact_line(&fact(&subject, "modified_by", "task:12", "12", 0));
    assert_eq!(line.chars().count(), MAX_LINE_CHARS);
    assert!(line.ends_with(" modified_by ... [task:12]"), "{line}");
    assert!(line.starts_with("- sss"));
}

#[test]
fn multibyte_text_is_clipped_on_char_boundaries() {
    let line = format_fact_line(&fact(
        "日本語のファイル",
        "summary",
        &"é".repeat(200),
        "1",
        0,
    ));
    assert_eq!(line.chars().count(), MAX_LINE_CHARS);
    assert!(line.ends_with("é... [task:1]"));
}

#[test]
fn newlines_never_split_a_fact() {
    let line = format_fact_line(&fact(
        "task:1",
        "summary",
        "first line\nsecond\tline",
        "1",
        0,
    ));
    assert_eq!(line, "- task:1 summary first line second line [task:1]");
}

#[test]
fn an_extreme_task_id_still_gives_a_bounded_line() {
    let task = "t".repeat(200);
    let line = format_fact_line(&fact("a", "b", "c", &task, 0));
    assert_eq!(line.chars().count(), MAX_LINE_CHARS);
}

#[test]
fn the_section_has_a_header_and_one_line_per_fact() {
    let facts = [
        fact("a.rs", "modified_by", "task:1", "1", 0),
        fact("b.rs", "modified_by", "task:2", "2", 0),
    ];
    assert_eq!(
        format_session_facts(&facts),
        "[Session Context]\n- a.rs modified_by task:1 [task:1]\n- b.rs modified_by task:2 [task:2]"
    );
}
