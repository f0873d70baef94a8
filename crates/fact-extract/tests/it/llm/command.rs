//! `CommandLlm` against real commands: echo through `cat`, failures, a timeout, bad
//! output, and whole extractions through a command that prints a canned reply (the grown
//! reply contract carried unchanged).

use std::sync::Arc;
use std::time::Duration;

use fact_extract::{
    CommandLlm, ConversationExtractor, ERROR_TAIL_CHARS, KnownMemory, LlmClient, LlmError,
    LlmExtractorConfig, LlmFactExtractor,
};
use fact_model::{ManualClock, ProfileField};

use super::{conversation, dated_conversation, fact_lines, known, t};

fn run(command: &str, prompt: &str) -> Result<String, LlmError> {
    CommandLlm::new(command, Duration::from_secs(10)).complete(prompt)
}

#[test]
fn the_prompt_goes_to_stdin_and_stdout_is_the_reply() {
    assert_eq!(run("cat", "héllo\nwörld").unwrap(), "héllo\nwörld");
    assert_eq!(run("cat", "").unwrap(), "");
    // A prompt far larger than a pipe's buffer, echoed back: no deadlock.
    let big = "0123456789abcdef".repeat(64 * 1024);
    assert_eq!(run("cat", &big).unwrap(), big);
    // A command line, with a pipe and quotes.
    assert_eq!(
        run("tr 'a-z' 'A-Z' | sed 's/O/0/g'", "hello world").unwrap(),
        "HELL0 W0RLD"
    );
    // A command that ignores its input.
    assert_eq!(run("echo ignored", &big).unwrap(), "ignored\n");
}

#[test]
fn a_failing_command_reports_its_code_and_stderr_tail() {
    let err = run("echo oops >&2; exit 3", "prompt").unwrap_err();
    assert!(
        matches!(&err, LlmError::Exit { code: Some(3), stderr_tail } if stderr_tail == "oops\n"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "command exited with code 3: oops\n");
    // Only the tail of a long stderr is kept, cut on char boundaries.
    let err = run(
        "i=0; while [ $i -lt 3000 ]; do printf 'é'; i=$((i+1)); done >&2; printf END >&2; exit 1",
        "",
    )
    .unwrap_err();
    let LlmError::Exit { stderr_tail, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(stderr_tail.chars().count(), ERROR_TAIL_CHARS);
    assert!(stderr_tail.starts_with("...é") && stderr_tail.ends_with("ééEND"));
    // A command that is not found is the shell's exit 127.
    let err = run("no-such-command-factmem", "").unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Exit {
                code: Some(127),
                ..
            }
        ),
        "{err:?}"
    );
    // Killed by a signal: no code.
    let err = run("kill -9 $$", "").unwrap_err();
    assert!(matches!(err, LlmError::Exit { code: None, .. }), "{err:?}");
    assert!(err.to_string().starts_with("command exited with a signal"));
}

#[test]
fn a_slow_command_is_killed_at_the_timeout() {
    let client = CommandLlm::new("sleep 5", Duration::from_millis(200));
    let err = client.complete("prompt").unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout { after } if after == Duration::from_millis(200)),
        "{err:?}"
    );
    // A command that closes its output but does not exit times out too.
    let client = CommandLlm::new("exec >&- 2>&-; sleep 5", Duration::from_millis(200));
    assert!(matches!(
        client.complete("").unwrap_err(),
        LlmError::Timeout { .. }
    ));
}

#[test]
fn output_that_is_not_utf8_or_too_long_is_an_invalid_reply() {
    let err = run(r"printf 'ok \377\376'", "").unwrap_err();
    assert!(
        matches!(&err, LlmError::InvalidReply(m) if m.starts_with("the command's output is not UTF-8")),
        "{err:?}"
    );
    let client = CommandLlm::new("cat", Duration::from_secs(10)).with_max_reply_bytes(10);
    assert_eq!(client.complete("0123456789").unwrap(), "0123456789");
    let err = client.complete("0123456789!").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid reply: the command's output exceeds 10 bytes"
    );
}

#[test]
fn spawn_errors_name_the_command_and_keep_the_source() {
    // `sh` itself cannot be made to vanish from inside the test, so check the error's shape.
    let err = LlmError::Spawn {
        command: "llm".into(),
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
    };
    assert_eq!(err.to_string(), "could not start `llm`: entity not found");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn a_command_that_prints_a_reply_drives_an_extraction() {
    let reply = r#"Here you go:
```json
{"title": "Tests", "summary": "Chose pytest.", "facts": [
  {"subject": "user", "predicate": "prefers_test_framework", "object": "pytest",
   "statement": "User prefers pytest over unittest", "category": "preference", "confidence": 0.9}
]}
```"#;
    // Read the prompt (as a real model would), then answer.
    let command = format!("cat >/dev/null; cat <<'REPLY'\n{reply}\nREPLY");
    let client = Arc::new(CommandLlm::new(command, Duration::from_secs(10)));
    let extractor = LlmFactExtractor::new(
        client,
        Arc::new(ManualClock::new(crate::at())),
        LlmExtractorConfig::default(),
    );
    let extraction = extractor
        .extract_conversation(&conversation(), "chat-3", &KnownMemory::default())
        .unwrap();
    assert_eq!(
        fact_lines(&extraction),
        [
            "user | prefers_test_framework | pytest | preference | 0.9 | User prefers pytest over unittest"
        ]
    );
    assert_eq!(extraction.title.as_deref(), Some("Tests"));
}

#[test]
fn a_command_carries_the_whole_reply_contract() {
    let known = known();
    let ids = known.short_ids();
    let reply = format!(
        r#"{{"facts": [{{"subject": "user", "predicate": "lives_in", "object": "Berlin",
   "content": "User moved to Berlin", "category": "context", "confidence": 0.9,
   "turn": 2, "supersedes": ["{paris}"]}}],
 "facts_to_remove": ["{car}"],
 "aliases": [{{"alias": "Mel", "entity": "Melanie"}}],
 "user_context": {{"personal": "Lives in Berlin; has a sister, Melanie."}},
 "history": {{"recent_months": "Moved from Paris to Berlin in March 2026."}}}}"#,
        paris = ids[0],
        car = ids[1],
    );
    let command = format!("cat >/dev/null; cat <<'REPLY'\n{reply}\nREPLY");
    let extractor = LlmFactExtractor::new(
        Arc::new(CommandLlm::new(command, Duration::from_secs(10))),
        Arc::new(ManualClock::new(crate::at())),
        LlmExtractorConfig::default(),
    );
    let extraction = extractor
        .extract_conversation(&dated_conversation(), "chat-3", &known)
        .unwrap();
    assert_eq!(
        fact_lines(&extraction),
        ["user | lives_in | Berlin | context | 0.9 | User moved to Berlin"]
    );
    let berlin = &extraction.facts[0];
    assert_eq!(berlin.fact.valid_from(), t("2026-03-02T10:00:00Z"));
    assert_eq!(berlin.supersedes, [known.facts[0].id()]);
    assert_eq!(extraction.remove, [known.facts[1].id()]);
    assert_eq!(extraction.aliases[0].alias, "mel");
    assert_eq!(
        extraction.profile,
        [
            (
                ProfileField::Personal,
                "Lives in Berlin; has a sister, Melanie.".to_owned()
            ),
            (
                ProfileField::RecentMonths,
                "Moved from Paris to Berlin in March 2026.".to_owned()
            ),
        ]
    );
    assert!(
        extraction.diagnostics.is_empty(),
        "{:?}",
        extraction.diagnostics
    );
}
