//! The dispatch contract: markers, JSON, schema paths and the output budget, in that order.

use dispatch_runtime::{ContractError, extract_block, parse_output};
use fact_model::CharsPerToken;
use fact_model::{DispatchResult, SourceRole};
use proptest::prelude::*;
use serde_json::json;

fn wrap(json: &serde_json::Value) -> String {
    format!("BEGIN_DISPATCH_RESULT\n{json}\nEND_DISPATCH_RESULT")
}

fn implementer() -> serde_json::Value {
    json!({"task_id": "2", "status": "completed", "summary": "Added the parser",
           "files_changed": ["src/parser.rs"], "tests": [{"command": "cargo test", "passed": true}],
           "follow_up_actions": []})
}

fn reviewer() -> serde_json::Value {
    json!({"task_id": "2", "assessment": "needs_changes", "strengths": ["clear"],
           "issues": [{"severity": "critical", "file": "src/api.rs", "message": "No validation", "fix": "Validate"}],
           "required_fixes": ["Validate the body"]})
}

fn parse(role: SourceRole, output: &str) -> Result<DispatchResult, ContractError> {
    parse_output(role, output, "2", 1200, &CharsPerToken::default()).map(|(result, _)| result)
}

/// The error code and the path or detail it names.
fn check_err(role: SourceRole, output: &str, code: &str, mentions: &str) {
    let err = parse(role, output).unwrap_err();
    assert_eq!(err.code(), code, "{err}");
    assert!(
        err.to_string().contains(mentions),
        "{err} should mention {mentions:?}"
    );
}

#[test]
fn prose_around_the_block_is_ignored() {
    let output = format!("Here is my work.\n\n{}\n\nThanks!", wrap(&implementer()));
    assert!(matches!(
        parse(SourceRole::Implementer, &output).unwrap(),
        DispatchResult::Implementer(_)
    ));
    assert!(matches!(
        parse(SourceRole::Reviewer, &wrap(&reviewer())).unwrap(),
        DispatchResult::Reviewer(_)
    ));
}

#[test]
fn markers_inside_json_strings_are_not_markers() {
    let mut value = implementer();
    value["summary"] =
        json!("Documented END_DISPATCH_RESULT and \"BEGIN_DISPATCH_RESULT\" handling");
    let DispatchResult::Implementer(result) =
        parse(SourceRole::Implementer, &wrap(&value)).unwrap()
    else {
        panic!("implementer expected")
    };
    assert!(result.summary.contains("END_DISPATCH_RESULT"));
}

#[test]
fn missing_unterminated_and_repeated_blocks_are_marker_missing() {
    check_err(
        SourceRole::Implementer,
        "I forgot the markers",
        "marker_missing",
        "no BEGIN_DISPATCH_RESULT",
    );
    check_err(
        SourceRole::Implementer,
        "BEGIN_DISPATCH_RESULT\n{}",
        "marker_missing",
        "without a matching",
    );
    let two = format!("{}\n{}", wrap(&implementer()), wrap(&implementer()));
    check_err(
        SourceRole::Implementer,
        &two,
        "marker_missing",
        "more than one block",
    );
    assert_eq!(
        extract_block("BEGIN_DISPATCH_RESULTEND_DISPATCH_RESULT").unwrap(),
        ""
    );
}

#[test]
fn prose_that_mentions_the_markers_is_still_prose() {
    let block = wrap(&implementer());
    let cases = [
        format!(
            "I will wrap the result in BEGIN_DISPATCH_RESULT ... END_DISPATCH_RESULT.\n{block}"
        ),
        format!("{block}\nThat was the BEGIN_DISPATCH_RESULT block."),
        format!("Notes: END_DISPATCH_RESULT closes it.\n{block}\nDone."),
        // Indented markers and the end marker after the JSON on its line count.
        format!(
            "  BEGIN_DISPATCH_RESULT\n  {} END_DISPATCH_RESULT",
            implementer()
        ),
        // A code fence inside the markers, or around them.
        format!(
            "BEGIN_DISPATCH_RESULT\n```json\n{}\n```\nEND_DISPATCH_RESULT",
            implementer()
        ),
        format!("```\n{block}\n```"),
    ];
    for output in cases {
        assert!(
            matches!(
                parse(SourceRole::Implementer, &output),
                Ok(DispatchResult::Implementer(_))
            ),
            "{output}"
        );
    }
}

/// The block of `output`, and the error code `parse` gives for it (`ok` when it parses).
fn block_and_code(output: &str) -> (String, &'static str) {
    let block = extract_block(output).map_or_else(|e| format!("<{}>", e.code()), str::to_owned);
    let code = parse(SourceRole::Implementer, output).map_or_else(|e| e.code(), |_| "ok");
    (block, code)
}

#[test]
fn a_stray_quote_before_the_json_does_not_hide_the_end_marker() {
    let json = implementer().to_string();
    let cases = [
        // An unbalanced quote in prose between the begin marker and the JSON.
        (
            format!("BEGIN_DISPATCH_RESULT\nHere it is: \"\n{json}\nEND_DISPATCH_RESULT"),
            format!("Here it is: \"\n{json}"),
        ),
        // An odd quote on the begin marker's own line.
        (
            format!("BEGIN_DISPATCH_RESULT \"\n{json}\nEND_DISPATCH_RESULT"),
            format!("\"\n{json}"),
        ),
        // Three quotes, and the JSON on the same line as the prose.
        (
            format!("BEGIN_DISPATCH_RESULT\nsay \"hi\" \" {json} END_DISPATCH_RESULT"),
            format!("say \"hi\" \" {json}"),
        ),
        // No JSON at all: the end marker at the start of a line still ends the block.
        (
            "BEGIN_DISPATCH_RESULT\nnothing \"here\nEND_DISPATCH_RESULT".to_owned(),
            "nothing \"here".to_owned(),
        ),
        // A stray quote after the JSON, before the end marker.
        (
            format!("BEGIN_DISPATCH_RESULT\n{json} \"\nEND_DISPATCH_RESULT"),
            format!("{json} \""),
        ),
    ];
    for (output, block) in cases {
        // The block ends at the end marker; prose inside it is not JSON, which is the
        // error reported, not a missing marker.
        assert_eq!(
            block_and_code(&output),
            (block, "json_parse_failed"),
            "{output}"
        );
    }
}

#[test]
fn an_end_marker_inside_a_json_string_still_does_not_count_after_a_stray_quote() {
    for summary in [
        "Wrote END_DISPATCH_RESULT docs",
        "Wrote \"END_DISPATCH_RESULT\" END_DISPATCH_RESULT docs",
    ] {
        let mut value = implementer();
        value["summary"] = json!(summary);
        let json = value.to_string();
        for output in [
            format!("BEGIN_DISPATCH_RESULT \"\n{json}\nEND_DISPATCH_RESULT"),
            format!("BEGIN_DISPATCH_RESULT\nHere: \" {json}\nEND_DISPATCH_RESULT"),
            format!("BEGIN_DISPATCH_RESULT\n\"\"\"\n{json} END_DISPATCH_RESULT"),
        ] {
            let block = extract_block(&output).unwrap();
            assert!(block.ends_with(&json), "{output} gave {block}");
        }
        // Without the prose the block parses, the quoted markers kept.
        let output = format!("BEGIN_DISPATCH_RESULT\n{json}\nEND_DISPATCH_RESULT");
        let DispatchResult::Implementer(result) = parse(SourceRole::Implementer, &output).unwrap()
        else {
            panic!("implementer expected")
        };
        assert_eq!(result.summary, summary);
    }
}

#[test]
fn a_string_never_spans_a_line_break() {
    // A JSON string holds no raw newline, so a quote left open at the end of a line was a
    // stray one: a marker at the start of the next line counts.
    assert_eq!(
        extract_block("BEGIN_DISPATCH_RESULT\n{\"a\": \"open\nEND_DISPATCH_RESULT").unwrap(),
        "{\"a\": \"open"
    );
    check_err(
        SourceRole::Implementer,
        &format!(
            "BEGIN_DISPATCH_RESULT\n{{\"a\": \"open\n{}",
            wrap(&implementer())
        ),
        "marker_missing",
        "more than one block",
    );
}

#[test]
fn a_second_begin_marker_inside_the_block_is_a_second_block() {
    let nested = format!("BEGIN_DISPATCH_RESULT\n{}", wrap(&implementer()));
    check_err(
        SourceRole::Implementer,
        &nested,
        "marker_missing",
        "more than one block",
    );
}

#[test]
fn invalid_json_is_json_parse_failed() {
    check_err(
        SourceRole::Implementer,
        "BEGIN_DISPATCH_RESULT\n{\"task_id\": \"2\",}\nEND_DISPATCH_RESULT",
        "json_parse_failed",
        "line 1",
    );
}

#[test]
fn schema_violations_name_the_field_path() {
    let cases: Vec<(SourceRole, serde_json::Value, &str)> = vec![
        (
            SourceRole::Implementer,
            json!([1, 2]),
            "at $: expected an object",
        ),
        (
            SourceRole::Implementer,
            json!({"status": "completed", "summary": ""}),
            "$.task_id: required",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": 2, "status": "completed", "summary": ""}),
            "$.task_id: expected a string",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "3", "status": "completed", "summary": ""}),
            "$.task_id: expected the run's task \"2\"",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "2", "status": "done", "summary": ""}),
            "$.status: \"done\" is not one of completed, blocked, failed",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "2", "status": "failed"}),
            "$.summary: required",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "2", "status": "failed", "summary": "", "files_modified": "a.rs"}),
            "$.files_modified: expected an array",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "2", "status": "failed", "summary": "", "tests": [{"command": "x", "passed": "yes"}]}),
            "$.tests[0].passed: expected true or false",
        ),
        (
            SourceRole::Implementer,
            json!({"task_id": "2", "status": "failed", "summary": "", "follow_up_actions": ["a", 3]}),
            "$.follow_up_actions[1]: expected a string",
        ),
        (
            SourceRole::Reviewer,
            json!({"task_id": "2"}),
            "$.assessment: required",
        ),
        (
            SourceRole::Reviewer,
            json!({"task_id": "2", "assessment": "approved", "issues": [{"severity": "major", "message": "x"}]}),
            "$.issues[0].severity: \"major\" is not one of critical, important, minor",
        ),
        (
            SourceRole::Reviewer,
            json!({"task_id": "2", "assessment": "approved", "issues": [{"severity": "minor"}]}),
            "$.issues[0].message: required",
        ),
    ];
    for (role, value, mentions) in cases {
        check_err(role, &wrap(&value), "schema_invalid", mentions);
    }
}

#[test]
fn nulls_and_absent_optional_fields_are_accepted() {
    let value = json!({"task_id": "2", "status": "blocked", "summary": "stuck", "files_changed": null, "tests": null});
    assert!(parse(SourceRole::Implementer, &wrap(&value)).is_ok());
    let value = json!({"task_id": "2", "assessment": "approved", "issues": [{"severity": "minor", "message": "nit", "file": null}]});
    assert!(parse(SourceRole::Reviewer, &wrap(&value)).is_ok());
}

#[test]
fn the_budget_is_measured_on_the_block_not_the_preamble() {
    let output = format!(
        "{}\n{}",
        "long preamble ".repeat(2_000),
        wrap(&implementer())
    );
    let (_, tokens) = parse_output(
        SourceRole::Implementer,
        &output,
        "2",
        100,
        &CharsPerToken::default(),
    )
    .unwrap();
    assert!(tokens < 100);
    let err = parse_output(
        SourceRole::Implementer,
        &output,
        "2",
        10,
        &CharsPerToken::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "output_token_budget_exceeded");
    assert_eq!(
        err,
        ContractError::OutputTokenBudgetExceeded { tokens, budget: 10 }
    );
}

#[test]
fn errors_come_in_the_documented_order() {
    // Invalid schema and over budget: the schema error wins.
    let value = json!({"task_id": "2", "status": "done", "summary": "x".repeat(10_000)});
    let err = parse_output(
        SourceRole::Implementer,
        &wrap(&value),
        "2",
        10,
        &CharsPerToken::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "schema_invalid");
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_output(output in ".{0,300}", role in prop_oneof![Just(SourceRole::Implementer), Just(SourceRole::Reviewer)]) {
        let _ = parse(role, &output);
    }

    #[test]
    fn a_valid_block_parses_whatever_prose_surrounds_it(before in prose(), after in prose()) {
        let output = format!("{before}\n{}\n{after}", wrap(&implementer()));
        prop_assert!(parse(SourceRole::Implementer, &output).is_ok(), "{}", output);
    }

    #[test]
    fn prose_with_stray_quotes_before_the_json_never_hides_the_end_marker(
        same_line in prose_without_end_marker().prop_map(|p| p.replace('\n', " ")),
        between in prose_without_end_marker(),
        summary in summary(),
    ) {
        let mut value = implementer();
        value["summary"] = json!(summary);
        let json = value.to_string();
        let output = format!("BEGIN_DISPATCH_RESULT {same_line}\n{between}\n{json}\nEND_DISPATCH_RESULT");
        let block = extract_block(&output);
        let expected = format!("{same_line}\n{between}\n{json}");
        prop_assert_eq!(block, Ok(expected.trim()), "{}", output);
    }

    #[test]
    fn any_summary_survives_the_block_markers_and_quotes_included(summary in summary()) {
        let mut value = implementer();
        value["summary"] = json!(summary);
        let parsed = parse(SourceRole::Implementer, &wrap(&value));
        let Ok(DispatchResult::Implementer(result)) = parsed else {
            return Err(TestCaseError::fail(format!("{parsed:?}")));
        };
        prop_assert_eq!(result.summary, summary);
    }
}

/// A line of prose that may hold stray quotes, braces, backslashes and a mid-line begin
/// marker, but never an end marker and never a marker at its start.
fn prose_without_end_marker() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "",
        "BEGIN_DISPATCH_RESULT",
        "\"",
        "\\",
        "{",
        "}",
        "\" {",
    ]);
    let line = (
        "[a-zA-Z.]",
        "[^\n]{0,20}",
        word.clone(),
        "[^\n]{0,10}",
        word,
    )
        .prop_map(|(first, text, word, tail, last)| format!("{first}{text} {word}{tail}{last}"))
        .prop_filter("no end marker", |line| {
            !line.contains("END_DISPATCH_RESULT")
        });
    prop::collection::vec(line, 1..4).prop_map(|lines| lines.join("\n"))
}

/// Lines of prose that may mention the markers and hold stray quotes, but never start a
/// line with a marker.
fn prose() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "",
        "BEGIN_DISPATCH_RESULT",
        "END_DISPATCH_RESULT",
        "\"",
        "{",
        "}",
    ]);
    let line = ("[a-zA-Z.]", "[^\n]{0,30}", word, "[^\n]{0,10}")
        .prop_map(|(first, text, word, tail)| format!("{first}{text} {word}{tail}"));
    prop::collection::vec(line, 0..4).prop_map(|lines| lines.join("\n"))
}

/// A non-blank summary that may hold markers, quotes, backslashes and newlines.
fn summary() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "BEGIN_DISPATCH_RESULT",
        "END_DISPATCH_RESULT",
        "\"",
        "\\",
        "\n",
        "é",
        "x",
    ]);
    prop::collection::vec(piece, 1..12).prop_map(|pieces| format!("s{}", pieces.concat()))
}

#[test]
fn files_changed_under_both_names_is_one_clear_schema_error() {
    let mut result = implementer();
    result["files_changed"] = json!(["src/a.rs"]);
    result["files_modified"] = json!(["src/b.rs"]);
    check_err(
        SourceRole::Implementer,
        &wrap(&result),
        "schema_invalid",
        "files_modified is the older name of files_changed",
    );
    // Either name alone is fine.
    result.as_object_mut().unwrap().remove("files_changed");
    assert!(parse(SourceRole::Implementer, &wrap(&result)).is_ok());
}
