//! Memory that keeps itself true, through the service as a user drives it, on every backend
//! (in memory, SQLite, and PostgreSQL when `FACTMEM_PG_URL` is set; under `CI=true` it must
//! be): conversations dated by their messages, replies judged against what memory holds,
//! aliases, the user's context, and forgetting.
//!
//! The model is a scripted command (`sh -c`), as a user's `--llm-cmd` is: it saves the
//! prompt it reads on stdin and prints a fixed reply, so each test checks what the model
//! was shown as well as what memory did with its answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dispatch_runtime::ReadOptions;
use dispatch_runtime::memory_protocol::command_extractor;
use dispatch_runtime::{ArchiveRequest, MemoryError, MemoryService, NewMemory};
use fact_extract::LlmFactExtractor;
use fact_model::{Clock, FactId, ManualClock, ProfileField, Timestamp};
use fact_store::{InMemoryLongTermStore, LongTermStore, MessageQuery, StoreConfig};
use tempfile::TempDir;

/// A backend the scenarios run on (the filtered-reads property runs on them too).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Memory,
    #[cfg(feature = "sqlite")]
    Sqlite,
    #[cfg(feature = "postgres")]
    Postgres,
}

/// Every backend this build and environment can run.
pub(crate) fn backends() -> Vec<Backend> {
    let mut all = vec![Backend::Memory];
    #[cfg(feature = "sqlite")]
    all.push(Backend::Sqlite);
    #[cfg(feature = "postgres")]
    if super::concurrency::pg_server().is_some() {
        all.push(Backend::Postgres);
    }
    all
}

fn t(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// A memory on `backend`, its clock at archive time (November), and the directory that
/// holds its database and the model's files.
fn memory(backend: Backend) -> (MemoryService, Arc<ManualClock>, TempDir) {
    let dir = TempDir::new().unwrap();
    let clock = Arc::new(ManualClock::new(t("2026-11-26T10:00:00Z")));
    let store = long_term_store(backend, dir.path(), "memory", clock.clone());
    (MemoryService::new(store, clock.clone()), clock, dir)
}

/// A store of unbounded capacity and history on `backend`, named `name`: on SQLite the
/// file `name.db` in `dir`, on PostgreSQL a scope named after `name`, this process and
/// `dir`.
pub(crate) fn long_term_store(
    backend: Backend,
    dir: &Path,
    name: &str,
    clock: Arc<ManualClock>,
) -> Arc<dyn LongTermStore> {
    let config = StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false);
    match backend {
        Backend::Memory => Arc::new(InMemoryLongTermStore::new(config, clock)),
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => Arc::new(
            fact_store_sqlite::SqliteFactStore::open(
                dir.join(format!("{name}.db")),
                "user:test",
                config,
                clock,
            )
            .unwrap(),
        ),
        #[cfg(feature = "postgres")]
        Backend::Postgres => {
            let url = super::concurrency::pg_server().unwrap();
            let scope = format!("{name}:{}:{}", std::process::id(), dir.display());
            Arc::new(fact_store_postgres::PgFactStore::open(&url, &scope, config, clock).unwrap())
        }
    }
}

/// A model command that saves its prompt as `prompt.txt` in `dir` and answers `reply`.
fn model(dir: &Path, reply: &str, clock: Arc<dyn Clock>) -> (LlmFactExtractor, PathBuf) {
    let reply_file = dir.join("reply.json");
    std::fs::write(&reply_file, reply).unwrap();
    let prompt = dir.join("prompt.txt");
    let cmd = format!(
        "cat > '{}'; cat '{}'",
        prompt.display(),
        reply_file.display()
    );
    (
        command_extractor(cmd, Duration::from_secs(30), clock),
        prompt,
    )
}

/// A transcript line.
fn line(role: &str, content: &str, at: Option<&str>) -> String {
    let mut message = serde_json::json!({"role": role, "content": content});
    if let Some(at) = at {
        message["timestamp"] = serde_json::json!(at);
    }
    format!("{message}\n")
}

fn archive(
    memory: &MemoryService,
    transcript: &str,
    reply: &str,
    dir: &Path,
) -> (dispatch_runtime::ArchiveReport, String) {
    let (extractor, prompt) = model(dir, reply, memory.clock().clone());
    let report = memory
        .archive(ArchiveRequest::new(transcript).with_extractor(Some(&extractor)))
        .unwrap();
    let prompt = std::fs::read_to_string(prompt).unwrap_or_default();
    (report, prompt)
}

/// The current objects of the user's `relation`.
fn current(memory: &MemoryService, relation: &str) -> Vec<String> {
    memory
        .list(&ReadOptions::default())
        .unwrap()
        .into_iter()
        .filter(|f| f.subject() == "user" && f.relation() == relation)
        .map(|f| f.object().to_owned())
        .collect()
}

#[test]
fn paris_then_berlin_leaves_berlin_current_and_paris_in_history_dated_by_the_turns() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        let transcript = [
            line("user", "I live in Paris, in the 11th.", Some("2026-03-01T09:00:00Z")),
            line("assistant", "Nice city.", None),
            line(
                "user",
                "Actually I moved from Paris to Berlin last month, and I use neovim now instead of vscode.",
                Some("2026-03-01T09:05:00Z"),
            ),
        ]
        .concat();
        let reply = r#"{"title": "Moving", "summary": "The user moved to Berlin.", "facts": [
            {"subject": "User", "predicate": "lives_in", "object": "Paris", "content": "User lives in Paris", "category": "context", "turn": 0},
            {"subject": "user", "predicate": "lives_in", "object": "Berlin", "content": "User lives in Berlin", "category": "context", "turn": 2},
            {"subject": "I", "predicate": "prefers_editor", "object": "neovim", "content": "User edits in neovim", "category": "preference", "turn": 2}
        ]}"#;
        let (report, prompt) = archive(&memory, &transcript, reply, dir.path());
        assert!(
            prompt.contains("[2] user (2026-03-01)"),
            "{backend:?}: {prompt}"
        );
        assert_eq!(report.started_at, t("2026-03-01T09:00:00Z"), "{backend:?}");
        let changes = report.changes.unwrap();
        assert_eq!(changes.added.len(), 3, "{backend:?}: {changes:?}");
        assert_eq!(
            changes.superseded,
            [FactId::for_triple("user", "lives_in", "Paris")],
            "{backend:?}"
        );
        assert_eq!(current(&memory, "lives_in"), ["Berlin"], "{backend:?}");
        let history = memory.history("User", &ReadOptions::default()).unwrap();
        let paris = history.iter().find(|f| f.object() == "Paris").unwrap();
        let berlin = history.iter().find(|f| f.object() == "Berlin").unwrap();
        assert_eq!(paris.valid_from(), t("2026-03-01T09:00:00Z"), "{backend:?}");
        assert_eq!(
            paris.valid_to(),
            Some(t("2026-03-01T09:05:00Z")),
            "{backend:?}"
        );
        assert_eq!(paris.superseded_by(), Some(berlin.id()), "{backend:?}");
        assert_eq!(
            berlin.valid_from(),
            t("2026-03-01T09:05:00Z"),
            "{backend:?}"
        );
        assert_eq!(
            berlin.recorded_at(),
            Some(t("2026-11-26T10:00:00Z")),
            "{backend:?}"
        );
        // As of the first turn, Paris was the truth.
        let then = memory
            .search(
                "where does the user live",
                5,
                &ReadOptions::as_of(Some(t("2026-03-01T09:01:00Z"))),
            )
            .unwrap();
        assert_eq!(then[0].fact.object(), "Paris", "{backend:?}");
        // Recall shows the date the fact was said, and the line that said it.
        let recalled = memory
            .recall(
                "did the user move to Berlin?",
                10,
                2000,
                &ReadOptions::default(),
            )
            .unwrap();
        assert!(
            recalled
                .text
                .contains("User lives in Berlin (from 2026-03-01)"),
            "{backend:?}: {}",
            recalled.text
        );
        assert!(
            recalled
                .text
                .contains("> [2026-03-01] user: Actually I moved from Paris to Berlin"),
            "{backend:?}: {}",
            recalled.text
        );
    }
}

#[test]
fn a_reply_that_supersedes_under_another_predicate_ends_the_old_fact() {
    for backend in backends() {
        let (memory, clock, dir) = memory(backend);
        let pytest = memory
            .add(
                NewMemory::new("user", "prefers_test_framework", "pytest")
                    .with_statement("User prefers pytest")
                    .with_valid_from(t("2026-01-10T00:00:00Z")),
            )
            .unwrap()
            .fact;
        clock.advance(Duration::from_secs(60));
        let id = pytest.id().to_string();
        let short = id.get(..8).unwrap();
        let reply = format!(
            r#"{{"facts": [{{"subject": "user", "predicate": "switched_test_runner_to",
                "object": "nextest", "content": "User switched to nextest", "category": "decision",
                "turn": 0, "supersedes": ["{short}"]}}]}}"#
        );
        let transcript = line(
            "user",
            "I switched to nextest for running tests.",
            Some("2026-04-02T12:00:00Z"),
        );
        let (report, prompt) = archive(&memory, &transcript, &reply, dir.path());
        // The model was shown what memory holds, with the id it answered with.
        assert!(
            prompt.contains(&format!("[{short}]")),
            "{backend:?}: {prompt}"
        );
        assert!(prompt.contains("prefers_test_framework"), "{backend:?}");
        let changes = report.changes.unwrap();
        assert_eq!(changes.superseded, [pytest.id()], "{backend:?}");
        let ended = memory.get(&pytest.id().to_string()).unwrap();
        let nextest = FactId::for_triple("user", "switched_test_runner_to", "nextest");
        assert_eq!(
            ended.valid_to(),
            Some(t("2026-04-02T12:00:00Z")),
            "{backend:?}"
        );
        assert_eq!(ended.superseded_by(), Some(nextest), "{backend:?}");
    }
}

#[test]
fn facts_to_remove_ends_and_never_deletes_and_an_unknown_id_changes_nothing() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        let vscode = memory
            .add(
                NewMemory::new("user", "uses_editor", "vscode")
                    .with_valid_from(t("2026-01-01T00:00:00Z")),
            )
            .unwrap()
            .fact;
        let transcript = line(
            "user",
            "I stopped using vscode.",
            Some("2026-05-01T08:00:00Z"),
        );
        let reply = r#"{"facts_to_remove": ["deadbeef"]}"#;
        let (report, _) = archive(&memory, &transcript, reply, dir.path());
        assert!(
            report.diagnostics.iter().any(|d| d.contains("deadbeef")),
            "{backend:?}: {report:?}"
        );
        assert_eq!(current(&memory, "uses_editor"), ["vscode"], "{backend:?}");
        let reply = format!(r#"{{"facts_to_remove": ["{}"]}}"#, vscode.id());
        let (report, _) = archive(
            &memory,
            &transcript.replace("stopped", "really stopped"),
            &reply,
            dir.path(),
        );
        assert_eq!(
            report.changes.unwrap().removed,
            [vscode.id()],
            "{backend:?}"
        );
        assert!(current(&memory, "uses_editor").is_empty(), "{backend:?}");
        let kept = memory.get(&vscode.id().to_string()).unwrap();
        assert_eq!(
            kept.valid_to(),
            Some(t("2026-05-01T08:00:00Z")),
            "{backend:?}"
        );
        assert_eq!(kept.superseded_by(), None, "{backend:?}");
    }
}

#[test]
fn aliases_merge_names_and_a_search_for_the_alias_finds_the_entity() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        memory
            .add(
                NewMemory::new("Mel", "owns_pet", "a dog named Oscar")
                    .with_statement("Mel owns a dog named Oscar"),
            )
            .unwrap();
        let transcript = line(
            "user",
            "Melanie (Mel to friends) adopted a second puppy.",
            Some("2026-06-01T00:00:00Z"),
        );
        let reply = r#"{"aliases": [{"alias": "Mel", "entity": "Melanie"}],
            "facts": [{"subject": "Mel", "predicate": "adopted", "object": "a second puppy", "content": "Melanie adopted a second puppy", "category": "knowledge", "turn": 0}]}"#;
        let (report, _) = archive(&memory, &transcript, reply, dir.path());
        let changes = report.changes.unwrap();
        assert_eq!(
            changes.aliases,
            [("mel".to_owned(), "melanie".to_owned())],
            "{backend:?}"
        );
        let subjects: Vec<String> = memory
            .list(&ReadOptions::default())
            .unwrap()
            .iter()
            .map(|f| f.subject().to_owned())
            .collect();
        assert_eq!(
            subjects,
            ["melanie", "melanie"],
            "{backend:?}: {:#?} {:?}",
            memory.store().export_snapshot().unwrap(),
            report.diagnostics
        );
        // No instant sees the moved fact twice, under both names.
        let then = memory
            .list(&ReadOptions::as_of(Some(t("2026-11-26T10:00:00Z"))))
            .unwrap();
        let dogs = then
            .iter()
            .filter(|f| f.object() == "a dog named Oscar")
            .count();
        assert_eq!(dogs, 1, "{backend:?}: {then:?}");
        let found = memory
            .search("what pets does Mel have", 5, &ReadOptions::default())
            .unwrap();
        assert_eq!(found.len(), 2, "{backend:?}");
        let history = memory.history("MEL", &ReadOptions::default()).unwrap();
        assert_eq!(
            history.len(),
            3,
            "{backend:?}: the old name's version stays in history"
        );
        // A cycle is refused, by the CLI's path as by a reply's.
        let error = memory.set_alias("melanie", "mel").unwrap_err();
        assert_eq!(error.code(), "alias_cycle", "{backend:?}");
    }
}

#[test]
fn a_reply_with_only_user_context_changes_only_the_context() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        memory
            .add(NewMemory::new("user", "lives_in", "Berlin"))
            .unwrap();
        let before = memory.list(&ReadOptions::default()).unwrap();
        let transcript = line(
            "user",
            "Work is intense: I lead the platform team now.",
            Some("2026-07-01T00:00:00Z"),
        );
        let reply = r#"{"user_context": {"work": "Leads the platform team"}, "history": {"recent_months": "Moved to Berlin"}}"#;
        let (report, _) = archive(&memory, &transcript, reply, dir.path());
        let changes = report.changes.unwrap();
        assert_eq!(
            changes.profile,
            [ProfileField::Work, ProfileField::RecentMonths],
            "{backend:?}"
        );
        assert!(
            changes.added.is_empty() && changes.superseded.is_empty(),
            "{backend:?}"
        );
        assert_eq!(
            memory.list(&ReadOptions::default()).unwrap(),
            before,
            "{backend:?}"
        );
        let context = memory.context().unwrap();
        assert_eq!(
            context.user_context.work, "Leads the platform team",
            "{backend:?}"
        );
        let formatted = memory.format(2000, &ReadOptions::default()).unwrap();
        assert!(
            formatted.starts_with("User Context:\n- Work: Leads the platform team\n\nHistory:\n- Recent months: Moved to Berlin\n\nFacts:\n"),
            "{backend:?}: {formatted}"
        );
        // Set by hand later; the old text stays in the profile's history.
        memory
            .set_context(vec![(ProfileField::Work, "CTO".into())])
            .unwrap();
        assert_eq!(
            memory.context().unwrap().user_context.work,
            "CTO",
            "{backend:?}"
        );
        let texts: Vec<String> = memory
            .store()
            .profile_history()
            .unwrap()
            .into_iter()
            .filter(|e| e.field == ProfileField::Work)
            .map(|e| e.text)
            .collect();
        assert_eq!(texts, ["Leads the platform team", "CTO"], "{backend:?}");
    }
}

#[test]
fn an_old_conversation_archived_late_never_overturns_a_newer_one() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        let reply = |city: &str| {
            format!(
                r#"{{"facts": [{{"subject": "user", "predicate": "lives_in", "object": "{city}", "content": "User lives in {city}", "category": "context", "turn": 0}}]}}"#
            )
        };
        let april = line("user", "I live in Berlin.", Some("2026-04-01T00:00:00Z"));
        archive(&memory, &april, &reply("Berlin"), dir.path());
        let march = line("user", "I live in Paris.", Some("2026-03-01T00:00:00Z"));
        let (report, _) = archive(&memory, &march, &reply("Paris"), dir.path());
        assert_eq!(
            report.changes.unwrap().arrived_superseded.len(),
            1,
            "{backend:?}"
        );
        assert_eq!(current(&memory, "lives_in"), ["Berlin"], "{backend:?}");
    }
}

#[test]
fn forgetting_an_episode_or_a_subject_leaves_no_trace() {
    for backend in backends() {
        let (memory, _, dir) = memory(backend);
        let transcript = line(
            "user",
            "My sister Anna lives in Rome.",
            Some("2026-03-01T00:00:00Z"),
        );
        let reply = r#"{"facts": [{"subject": "Anna", "predicate": "lives_in", "object": "Rome", "content": "Anna lives in Rome", "category": "knowledge", "turn": 0}]}"#;
        let (report, _) = archive(&memory, &transcript, reply, dir.path());
        let episode = report.episode_id;
        let architect = memory
            .add(NewMemory::new("anna", "works_as", "architect"))
            .unwrap()
            .fact;
        // Embeddings of both facts, as a service with a model stores them.
        let vectors = memory.store().vectors().unwrap();
        let rome = FactId::for_triple("anna", "lives_in", "Rome");
        let embeddings = vec![(rome, vec![1.0, 0.0]), (architect.id(), vec![0.0, 1.0])];
        vectors.put_embeddings("test-model", embeddings).unwrap();
        assert_eq!(
            vectors.embedded_count("test-model").unwrap(),
            2,
            "{backend:?}"
        );
        let forgotten = memory.forget_episode(&episode).unwrap();
        assert_eq!(forgotten.facts, [rome], "{backend:?}");
        assert_eq!(
            vectors.embedded_count("test-model").unwrap(),
            1,
            "{backend:?}"
        );
        assert!(
            memory.store().episode(&episode).unwrap().is_none(),
            "{backend:?}"
        );
        let bm25 = fact_retrieve::Bm25::default();
        let messages = memory
            .store()
            .search_messages(&MessageQuery::new("sister Rome", 10), &bm25)
            .unwrap();
        assert!(messages.is_empty(), "{backend:?}");
        assert!(
            memory
                .search("Rome", 10, &ReadOptions::default())
                .unwrap()
                .is_empty(),
            "{backend:?}"
        );
        // The subject: every version of every fact about Anna.
        let report = memory.forget_subject("Anna").unwrap();
        assert_eq!(report.facts.len(), 1, "{backend:?}");
        assert_eq!(
            vectors.embedded_count("test-model").unwrap(),
            0,
            "{backend:?}"
        );
        assert!(
            memory
                .history("anna", &ReadOptions::default())
                .unwrap()
                .is_empty(),
            "{backend:?}"
        );
        assert_eq!(
            memory.forget_subject("anna").unwrap_err().code(),
            "not_found",
            "{backend:?}"
        );
        assert!(matches!(
            memory.forget_episode(&episode),
            Err(MemoryError::NotFound { .. })
        ));
    }
}

#[test]
fn bad_transcripts_are_refused_and_store_nothing() {
    for backend in backends() {
        let (memory, _, _dir) = memory(backend);
        for (transcript, code) in [
            (line("user", "hi", Some("yesterday")), "invalid_timestamp"),
            (
                line("user", "hi", Some("2026-12-31T00:00:00Z")),
                "future_timestamp",
            ),
            (String::new(), "empty_transcript"),
            (
                "x".repeat(fact_extract::MAX_TRANSCRIPT_BYTES + 1),
                "transcript_too_large",
            ),
        ] {
            let error = memory
                .archive(ArchiveRequest::new(&transcript))
                .unwrap_err();
            assert_eq!(error.code(), code, "{backend:?}");
        }
        assert!(memory.store().episodes().unwrap().is_empty(), "{backend:?}");
        // A session time in the future beyond a day is refused too.
        let error = memory
            .archive(
                ArchiveRequest::new(&line("user", "hi", None))
                    .with_session_time(Some(t("2027-01-01T00:00:00Z"))),
            )
            .unwrap_err();
        assert_eq!(error.code(), "future_timestamp", "{backend:?}");
    }
}

/// Whether `haystack` holds `needle`, byte for byte.
#[cfg(feature = "sqlite")]
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The bytes of the SQLite database file and of its write-ahead log.
#[cfg(feature = "sqlite")]
fn database_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(dir.join("memory.db")).unwrap();
    if let Ok(wal) = std::fs::read(dir.join("memory.db-wal")) {
        bytes.extend(wal);
    }
    bytes
}

/// Forgetting on SQLite leaves no byte of the forgotten text in the database file or its
/// WAL: not the messages, statements, triples or aliases, and not the analyzed words of
/// the term dictionaries or of the episode index (issue 36).
#[cfg(feature = "sqlite")]
#[test]
fn forgetting_on_sqlite_leaves_no_byte_of_the_text_in_the_file() {
    // Words no other text of the test holds, as said and as analyzed (lower case).
    const SENTINEL: &str = "Zorblaxian quintessence glimmers over Vrellstad harbour";
    let words = [
        "Zorblaxian",
        "zorblaxian",
        "Vrellstad",
        "vrellstad",
        "quintessence",
        "glimmers",
    ];
    let (memory, _, dir) = memory(Backend::Sqlite);
    let transcript = line("user", SENTINEL, Some("2026-03-01T00:00:00Z"));
    let reply = r#"{"facts": [{"subject": "Vrellstad", "predicate": "has_harbour", "object": "Zorblaxian quintessence", "content": "Zorblaxian quintessence glimmers over Vrellstad harbour", "category": "knowledge", "turn": 0}]}"#;
    let (report, _) = archive(&memory, &transcript, reply, dir.path());
    // A second fact about the subject, superseded, so that history holds text too.
    memory
        .add(
            NewMemory::new("vrellstad", "described_as", "zorblaxian")
                .with_statement("Vrellstad is Zorblaxian, with quintessence"),
        )
        .unwrap();
    memory
        .add(NewMemory::new("vrellstad", "described_as", "quiet"))
        .unwrap();
    memory.set_alias("zorblaxian port", "vrellstad").unwrap();
    // Text of another subject, which stays.
    memory
        .add(NewMemory::new("user", "likes", "tea").with_statement("User likes green tea"))
        .unwrap();
    let before = database_bytes(dir.path());
    for word in words {
        assert!(holds(&before, word), "{word} was never written");
    }

    memory.forget_episode(&report.episode_id).unwrap();
    memory.forget_subject("vrellstad").unwrap();
    let after = database_bytes(dir.path());
    let left: Vec<&str> = words.into_iter().filter(|w| holds(&after, w)).collect();
    assert!(
        left.is_empty(),
        "still in the database file or its WAL: {left:?}"
    );
    // What was not forgotten is still there, and still found by its words.
    let found = memory
        .search("green tea", 10, &ReadOptions::default())
        .unwrap();
    assert_eq!(found.len(), 1);
    // New text with a forgotten word gets a new term, found by the database's index too.
    memory
        .add(NewMemory::new("user", "visited", "vrellstad"))
        .unwrap();
    let found = memory
        .search("vrellstad", 10, &ReadOptions::default())
        .unwrap();
    assert_eq!(found.len(), 1);
}

/// `add_many` is `add` called once per fact, in one transaction: the same facts, history
/// and answers as the loop; an invalid fact anywhere stores nothing of the batch.
/// `search_many` answers each query as `search` does.
#[test]
fn a_batch_adds_as_the_loop_does_all_or_nothing_and_searches_answer_as_one_by_one() {
    let news = || {
        vec![
            NewMemory::new("User", "prefers_editor", "vim").with_statement("User prefers vim"),
            NewMemory::new("user", "lives_in", "Porto"),
            NewMemory::new("user", "prefers_editor", "helix").with_statement("User prefers helix"),
            NewMemory::new("Melanie", "adopted", "Oscar").with_statement("user prefers  HELIX"),
            NewMemory::new("user", "lives_in", "Porto"),
        ]
    };
    for backend in backends() {
        let (batch, _, _dir) = memory(backend);
        let (looped, _, _other) = memory(backend);
        let outcomes = batch.add_many(news()).unwrap();
        let one_by_one: Vec<_> = news()
            .into_iter()
            .map(|new| looped.add(new).unwrap())
            .collect();
        let status =
            |o: &dispatch_runtime::AddOutcome| dispatch_runtime::memory_protocol::add_status(o);
        assert_eq!(
            outcomes.iter().map(status).collect::<Vec<_>>(),
            one_by_one.iter().map(status).collect::<Vec<_>>(),
            "{backend:?}"
        );
        assert_eq!(
            outcomes
                .iter()
                .map(|o| &o.report.invalidated)
                .collect::<Vec<_>>(),
            one_by_one
                .iter()
                .map(|o| &o.report.invalidated)
                .collect::<Vec<_>>(),
            "{backend:?}: the helix fact supersedes the vim one"
        );
        let read = ReadOptions::default();
        let objects = |memory: &MemoryService| -> Vec<String> {
            let mut objects: Vec<String> = memory
                .list(&read)
                .unwrap()
                .iter()
                .map(|f| f.object().to_owned())
                .collect();
            objects.sort();
            objects
        };
        assert_eq!(objects(&batch), ["Porto", "helix"], "{backend:?}");
        assert_eq!(objects(&batch), objects(&looped), "{backend:?}");
        assert_eq!(batch.history("user", &read).unwrap().len(), 3);

        // All or nothing: the third fact is invalid.
        let mut bad = vec![
            NewMemory::new("user", "speaks", "Portuguese"),
            NewMemory::new("user", "drinks", "tea"),
            NewMemory::new(" ", "drinks", "coffee"),
        ];
        bad.push(NewMemory::new("user", "eats", "bread"));
        let error = batch.add_many(bad).unwrap_err();
        assert_eq!(error.code(), "invalid_fact", "{backend:?}");
        assert!(error.to_string().contains("index 2"), "{error}");
        assert_eq!(
            objects(&batch),
            ["Porto", "helix"],
            "{backend:?}: nothing stored"
        );
        assert!(batch.add_many(Vec::new()).unwrap().is_empty());

        let queries = ["editor", "lives Porto", "nothing at all", "editor"];
        let many = batch.search_many(&queries, 5, &read).unwrap();
        assert_eq!(many.len(), queries.len());
        for (query, found) in queries.iter().zip(&many) {
            assert_eq!(found, &batch.search(query, 5, &read).unwrap(), "{query}");
        }
        assert_eq!(many[0][0].fact.object(), "helix", "{backend:?}");
    }
}
