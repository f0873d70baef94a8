//! The memory service through its public API: CRUD, supersession, recall, archiving and
//! backfill, over in-memory stores and a scripted extractor.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dispatch_runtime::{ArchiveRequest, MemoryChange, MemoryError, MemoryService, NewMemory};
use fact_extract::{
    ConversationExtractor, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor,
};
use fact_model::{Clock, ManualClock, Tag};
use fact_store::{InMemoryLongTermStore, StoreConfig};

fn service() -> (MemoryService, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new("2026-02-15T10:00:00Z".parse().unwrap()));
    let store = InMemoryLongTermStore::new(StoreConfig::default(), clock.clone());
    let memory = MemoryService::new(Arc::new(store), clock.clone());
    (memory, clock)
}

/// `TRANSCRIPT` archived with `extractor`, when given.
fn archive(
    memory: &MemoryService,
    title: Option<&str>,
    extractor: Option<&dyn ConversationExtractor>,
) -> Result<dispatch_runtime::ArchiveReport, MemoryError> {
    let mut request = ArchiveRequest::new(TRANSCRIPT).with_extractor(extractor);
    if let Some(title) = title {
        request = request.with_title(title);
    }
    memory.archive(request)
}

fn preference(object: &str, statement: &str) -> NewMemory {
    NewMemory::new("user", "prefers_test_framework", object)
        .with_statement(statement)
        .with_category(Tag::Preference)
        .with_confidence(0.9)
}

/// An LLM that answers every prompt with the next scripted reply, or fails.
#[derive(Debug)]
struct Scripted(Mutex<Vec<Result<String, LlmError>>>);

impl LlmClient for Scripted {
    fn complete(&self, _prompt: &str) -> Result<String, LlmError> {
        let mut replies = self.0.lock().unwrap();
        if replies.is_empty() {
            return Err(LlmError::InvalidReply("no reply scripted".into()));
        }
        replies.remove(0)
    }
}

fn extractor(replies: Vec<Result<String, LlmError>>, clock: Arc<ManualClock>) -> LlmFactExtractor {
    LlmFactExtractor::new(
        Arc::new(Scripted(Mutex::new(replies))),
        clock,
        LlmExtractorConfig::default(),
    )
}

const TRANSCRIPT: &str = r#"{"role": "user", "content": "Let's use pytest, not unittest, for the RLM project."}
{"role": "assistant", "content": "Done: the suite now runs under pytest."}
"#;

const REPLY: &str = r#"Here are the facts:
```json
{"title": "Test framework for RLM", "summary": "The user chose pytest over unittest.",
 "facts": [{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest",
            "statement": "User prefers pytest over unittest", "category": "preference",
            "confidence": 0.9},
           {"subject": "user", "predicate": "likes", "object": "clean code",
            "statement": "User likes clean code", "category": "preference", "confidence": 0.3}]}
```"#;

#[test]
fn a_newer_preference_supersedes_and_history_keeps_both() {
    let (memory, clock) = service();
    let first = memory
        .add(preference("unittest", "User prefers unittest"))
        .unwrap();
    assert_eq!(first.report.added, [first.fact.id()]);
    clock.advance(Duration::from_secs(60));
    let second = memory
        .add(preference("pytest", "User prefers pytest over unittest"))
        .unwrap();
    assert_eq!(second.report.invalidated, [first.fact.id()]);
    let history = memory.history("user", None).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].superseded_by(), Some(second.fact.id()));
    assert_eq!(memory.list(None).unwrap().len(), 1);
    // Another preference of the same user has its own predicate and supersedes nothing.
    let editor =
        NewMemory::new("user", "prefers_editor", "helix").with_statement("User edits in Helix");
    assert!(memory.add(editor).unwrap().report.invalidated.is_empty());
    assert_eq!(memory.list(None).unwrap().len(), 2);
}

#[test]
fn a_repeated_statement_is_skipped_whatever_its_case() {
    let (memory, _) = service();
    memory
        .add(preference("pytest", "User prefers pytest"))
        .unwrap();
    let again = NewMemory::new("user", "uses_test_framework", "pytest")
        .with_statement("  USER prefers   PYTEST ");
    let outcome = memory.add(again).unwrap();
    assert!(outcome.report.added.is_empty());
    assert_eq!(outcome.report.skipped.len(), 1);
}

#[test]
fn ids_are_checked_and_unknown_ids_are_not_found() {
    let (memory, _) = service();
    assert!(matches!(
        memory.get("nope"),
        Err(MemoryError::InvalidId { .. })
    ));
    let unknown = "0".repeat(16);
    let error = memory.delete(&unknown).unwrap_err();
    assert_eq!(error.code(), "not_found");
    assert!(error.to_string().contains(&unknown));
}

#[test]
fn update_edits_in_place_or_supersedes_with_a_new_object() {
    let (memory, clock) = service();
    let added = memory
        .add(preference("pytest", "User prefers pytest"))
        .unwrap();
    let id = added.fact.id().to_string();
    let change = MemoryChange {
        confidence: Some(0.5),
        ..MemoryChange::default()
    };
    assert_eq!(memory.update(&id, change).unwrap().confidence(), 0.5);
    clock.advance(Duration::from_secs(5));
    let change = MemoryChange {
        object: Some("nose2".into()),
        statement: Some("User prefers nose2".into()),
        ..MemoryChange::default()
    };
    let new = memory.update(&id, change).unwrap();
    assert_eq!(new.object(), "nose2");
    assert_eq!(memory.get(&id).unwrap().superseded_by(), Some(new.id()));
    let bad = MemoryChange {
        confidence: Some(f64::NAN),
        ..MemoryChange::default()
    };
    assert_eq!(
        memory
            .update(&new.id().to_string(), bad)
            .unwrap_err()
            .code(),
        "invalid_fact"
    );
}

#[test]
fn recall_renders_facts_then_episodes_within_the_budget() {
    let (memory, clock) = service();
    memory
        .add(preference("pytest", "User prefers pytest over unittest"))
        .unwrap();
    let llm = extractor(vec![Ok(REPLY.into())], clock.clone());
    archive(&memory, None, Some(&llm)).unwrap();
    let found = memory
        .recall("which test framework, pytest or unittest?", 10, 2000, None)
        .unwrap();
    assert_eq!(
        found.text,
        "## Relevant Facts\n\
         - [preference] User prefers pytest over unittest (from 2026-02-15)\n\n\
         ## Related Episodes\n\
         - Test framework for RLM on 2026-02-15 (entry: "
            .to_owned()
            + &found.episodes[0].id
            + "): The user chose pytest over unittest.\n  \
            > [2026-02-15] user: Let's use pytest, not unittest, for the RLM project.\n  \
            > [2026-02-15] assistant: Done: the suite now runs under pytest."
    );
    let tight = memory
        .recall("which test framework, pytest or unittest?", 10, 25, None)
        .unwrap();
    assert!(tight.tokens <= 25 && tight.episodes.is_empty(), "{tight:?}");
    assert!(
        memory
            .recall("databases", 10, 2000, None)
            .unwrap()
            .text
            .is_empty()
    );
}

#[test]
fn archiving_extracts_facts_above_the_threshold_from_the_episode() {
    let (memory, clock) = service();
    let llm = extractor(vec![Ok(REPLY.into())], clock);
    let report = archive(&memory, Some("RLM tests"), Some(&llm)).unwrap();
    assert_eq!(report.messages, 2);
    let facts = report.changes.unwrap();
    assert_eq!(facts.added.len(), 1, "the 0.3-confidence fact is skipped");
    assert!(
        report.diagnostics.iter().any(|d| d.contains("confidence")),
        "{:?}",
        report.diagnostics
    );
    let fact = &memory.list(None).unwrap()[0];
    assert_eq!(
        fact.source_task_id(),
        report.episode_id,
        "a fact names its episode"
    );
    let episode = memory.store().episode(&report.episode_id).unwrap().unwrap();
    assert_eq!(episode.title, "RLM tests");
    assert_eq!(episode.summary, "The user chose pytest over unittest.");
    assert!(episode.extracted_at.is_some());
}

#[test]
fn a_failing_model_keeps_the_episode_for_backfill() {
    let (memory, clock) = service();
    let failing = extractor(
        vec![Err(LlmError::Timeout {
            after: Duration::from_secs(1),
        })],
        clock.clone(),
    );
    let error = archive(&memory, None, Some(&failing)).unwrap_err();
    assert_eq!(error.code(), "extraction_failed");
    assert_eq!(memory.store().pending_extraction().unwrap().len(), 1);
    assert!(memory.list(None).unwrap().is_empty());

    let working = extractor(vec![Ok(REPLY.into())], clock);
    let mut seen = Vec::new();
    let reports = memory
        .backfill(
            &working as &dyn ConversationExtractor,
            &mut |done, total| seen.push((done, total)),
        )
        .unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(seen, [(1, 1)]);
    assert_eq!(memory.list(None).unwrap().len(), 1);
    assert!(memory.store().pending_extraction().unwrap().is_empty());
}

#[test]
fn an_empty_or_broken_transcript_is_a_clear_error() {
    let (memory, _) = service();
    assert_eq!(
        memory.archive(ArchiveRequest::new("")).unwrap_err().code(),
        "empty_transcript"
    );
    let error = memory
        .archive(ArchiveRequest::new("not json\n"))
        .unwrap_err();
    assert!(error.to_string().contains("line 1"), "{error}");
    // Without an extractor the episode is archived and left pending.
    let report = archive(&memory, None, None).unwrap();
    assert!(report.changes.is_none());
    assert_eq!(
        memory.store().pending_extraction().unwrap()[0].id,
        report.episode_id
    );
}

#[test]
fn format_lists_facts_by_confidence() {
    let (memory, _) = service();
    memory
        .add(preference("pytest", "User prefers pytest"))
        .unwrap();
    let text = memory.format(2000, None).unwrap();
    assert!(
        text.contains("- [preference | 0.90] User prefers pytest"),
        "{text}"
    );
}

/// A model of two dimensions: texts about places, and the rest.
#[derive(Debug)]
struct Places;

impl fact_retrieve::Embedder for Places {
    fn model(&self) -> &str {
        "places-v1"
    }

    fn dimension(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, fact_retrieve::EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let lower = text.to_lowercase();
                if ["lisbon", "live", "home"].iter().any(|w| lower.contains(w)) {
                    vec![1.0, 0.1]
                } else {
                    vec![0.1, 1.0]
                }
            })
            .collect())
    }
}

#[test]
fn search_hybrid_finds_by_meaning_with_an_embedder_and_by_words_without() {
    let (memory, clock) = service();
    memory
        .add(NewMemory::new("user", "moved_to", "Lisbon").with_statement("User moved to Lisbon"))
        .unwrap();
    memory
        .add(preference("pytest", "User prefers pytest over unittest"))
        .unwrap();
    // No embedder: the words decide, as `search`.
    let words = memory.search_hybrid("where is home", 10, None).unwrap();
    assert_eq!(words, memory.search("where is home", 10, None).unwrap());
    assert!(words.is_empty(), "{words:?}");
    // With one: a question that shares no word with the fact finds it.
    let memory = memory.with_embedder(Arc::new(Places)).unwrap();
    let found = memory.search_hybrid("where is home", 10, None).unwrap();
    assert_eq!(
        found.first().map(|s| s.fact.object()),
        Some("Lisbon"),
        "{found:?}"
    );
    // As of another instant, the words alone (the vectors are of what is valid now).
    clock.advance(Duration::from_secs(60));
    let now = clock.now();
    assert!(
        memory
            .search_hybrid("where is home", 10, Some(now))
            .unwrap()
            .is_empty()
    );
}

/// [`Places`] with token vectors: one per word, the word's place-ness.
#[derive(Debug)]
struct PlaceTokens;

impl fact_retrieve::Embedder for PlaceTokens {
    fn model(&self) -> &str {
        "place-tokens-v1"
    }

    fn dimension(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, fact_retrieve::EmbedError> {
        Places.embed(texts)
    }

    fn embed_tokens(
        &self,
        texts: &[&str],
    ) -> Result<Vec<fact_retrieve::TokenEmbedding>, fact_retrieve::EmbedError> {
        let vectors = Places.embed(texts)?;
        Ok(texts
            .iter()
            .zip(vectors)
            .map(|(text, vector)| {
                let words: Vec<&str> = text.split_whitespace().collect();
                let tokens = Places.embed(&words).unwrap_or_default().concat();
                fact_retrieve::TokenEmbedding::new(vector, tokens)
            })
            .collect())
    }
}

#[test]
fn an_embedder_with_token_vectors_turns_late_interaction_on() {
    let (memory, _) = service();
    let memory = memory.with_embedder(Arc::new(PlaceTokens)).unwrap();
    assert!(memory.hybrid().unwrap().late_interaction().is_some());
    memory
        .add(NewMemory::new("user", "moved_to", "Lisbon").with_statement("User moved to Lisbon"))
        .unwrap();
    let vectors = memory.store().vectors().unwrap();
    let stats = vectors.token_vector_stats("place-tokens-v1").unwrap();
    assert_eq!(stats.facts, 1, "the added fact's token vectors are stored");
    let found = memory.search_hybrid("where is home", 10, None).unwrap();
    assert_eq!(found.first().map(|s| s.fact.object()), Some("Lisbon"));
    // Forgetting the subject forgets its token vectors with its facts.
    memory.forget_subject("user").unwrap();
    let stats = vectors.token_vector_stats("place-tokens-v1").unwrap();
    assert_eq!(stats.facts, 0, "forgotten with the facts");
    // A model without token vectors keeps plain hybrid retrieval.
    let (memory, _) = service();
    let memory = memory.with_embedder(Arc::new(Places)).unwrap();
    assert!(memory.hybrid().unwrap().late_interaction().is_none());
}
