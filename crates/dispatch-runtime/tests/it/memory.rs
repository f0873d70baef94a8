//! The memory service through its public API: CRUD, supersession, recall, archiving and
//! backfill, over in-memory stores and a scripted extractor.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dispatch_runtime::ReadOptions;
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
    let history = memory.history("user", &ReadOptions::default()).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].superseded_by(), Some(second.fact.id()));
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 1);
    // Another preference of the same user has its own predicate and supersedes nothing.
    let editor =
        NewMemory::new("user", "prefers_editor", "helix").with_statement("User edits in Helix");
    assert!(memory.add(editor).unwrap().report.invalidated.is_empty());
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 2);
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
        .recall(
            "which test framework, pytest or unittest?",
            10,
            2000,
            &ReadOptions::default(),
        )
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
        .recall(
            "which test framework, pytest or unittest?",
            10,
            25,
            &ReadOptions::default(),
        )
        .unwrap();
    assert!(tight.tokens <= 25 && tight.episodes.is_empty(), "{tight:?}");
    assert!(
        memory
            .recall("databases", 10, 2000, &ReadOptions::default())
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
    let fact = &memory.list(&ReadOptions::default()).unwrap()[0];
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
    assert!(memory.list(&ReadOptions::default()).unwrap().is_empty());

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
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 1);
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
    let text = memory.format(2000, &ReadOptions::default()).unwrap();
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
    let words = memory
        .search_hybrid("where is home", 10, &ReadOptions::default())
        .unwrap();
    assert_eq!(
        words,
        memory
            .search("where is home", 10, &ReadOptions::default())
            .unwrap()
    );
    assert!(words.is_empty(), "{words:?}");
    // With one: a question that shares no word with the fact finds it.
    let memory = memory.with_embedder(Arc::new(Places)).unwrap();
    let found = memory
        .search_hybrid("where is home", 10, &ReadOptions::default())
        .unwrap();
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
            .search_hybrid("where is home", 10, &ReadOptions::as_of(Some(now)))
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
    let found = memory
        .search_hybrid("where is home", 10, &ReadOptions::default())
        .unwrap();
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

fn meta(pairs: &[&str]) -> fact_model::Metadata {
    fact_model::Metadata::from_assignments(pairs.iter().copied()).unwrap()
}

fn filter(text: &str) -> ReadOptions {
    ReadOptions::default().with_filter(Some(fact_model::Filter::parse_where(text).unwrap()))
}

#[test]
fn metadata_goes_on_facts_and_every_read_takes_a_filter() {
    let (memory, clock) = service();
    let rlm = memory
        .add(
            preference("pytest", "User prefers pytest")
                .with_metadata(meta(&["project=rlm", "n=3"])),
        )
        .unwrap();
    memory
        .add(
            NewMemory::new("user", "drinks", "tea")
                .with_statement("User drinks tea")
                .with_metadata(meta(&["project=home"])),
        )
        .unwrap();
    memory
        .add(NewMemory::new("user", "edits_with", "helix").with_statement("User edits with helix"))
        .unwrap();
    let rlm_only = filter(r#"metadata.project = "rlm""#);
    let objects = |facts: Vec<fact_model::SessionFact>| -> Vec<String> {
        facts.iter().map(|f| f.object().to_owned()).collect()
    };
    assert_eq!(objects(memory.list(&rlm_only).unwrap()), ["pytest"]);
    let found = memory.search("user", 10, &rlm_only).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].fact.metadata(), &meta(&["project=rlm", "n=3"]));
    let recalled = memory
        .recall("what does the user prefer drink edit", 10, 2000, &rlm_only)
        .unwrap();
    assert_eq!(recalled.facts.len(), 1);
    assert!(recalled.text.contains("pytest") && !recalled.text.contains("tea"));
    assert!(recalled.episodes.is_empty());
    assert!(!memory.format(2000, &rlm_only).unwrap().contains("tea"));
    // A new object supersedes the fact and keeps its metadata; history filters versions.
    clock.advance(Duration::from_secs(60));
    let change = MemoryChange {
        object: Some("nose2".into()),
        ..MemoryChange::default()
    };
    let newer = memory.update(&rlm.fact.id().to_string(), change).unwrap();
    assert_eq!(newer.metadata(), rlm.fact.metadata());
    let current = filter(r#"metadata.project = "rlm" and valid_to not exists"#);
    assert_eq!(
        objects(memory.history("user", &current).unwrap()),
        ["nose2"]
    );
    assert_eq!(
        objects(memory.history("user", &rlm_only).unwrap()),
        ["pytest", "nose2"]
    );
    // An update replaces the metadata whole; empty metadata clears it.
    let cleared = MemoryChange {
        metadata: Some(fact_model::Metadata::new()),
        ..MemoryChange::default()
    };
    memory.update(&newer.id().to_string(), cleared).unwrap();
    assert!(memory.list(&rlm_only).unwrap().is_empty());
    // Deleting by filter: a dry run deletes nothing, then every version of each goes.
    let home = fact_model::Filter::parse_where(r#"metadata.project = "home""#).unwrap();
    assert_eq!(memory.delete_matching(&home, true).unwrap().len(), 1);
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 3);
    let deleted = memory.delete_matching(&home, false).unwrap();
    assert_eq!(objects(deleted), ["tea"]);
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 2);
    assert!(
        memory
            .history("user", &filter(r#"object = "tea""#))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_archived_conversations_metadata_goes_on_its_episode_and_every_extracted_fact() {
    let (memory, clock) = service();
    let extractor = extractor(vec![Ok(REPLY.to_owned())], clock);
    let request = ArchiveRequest::new(TRANSCRIPT)
        .with_extractor(Some(&extractor))
        .with_metadata(meta(&["project=rlm", "channel=slack"]));
    let report = memory.archive(request).unwrap();
    let episode = fact_store::EpisodeStore::episode(&**memory.store(), &report.episode_id)
        .unwrap()
        .unwrap();
    assert_eq!(episode.metadata, meta(&["project=rlm", "channel=slack"]));
    let added = report.changes.unwrap().added;
    assert!(!added.is_empty());
    let facts = memory
        .list(&filter(r#"metadata.channel = "slack""#))
        .unwrap();
    let ids: Vec<_> = facts.iter().map(fact_model::SessionFact::id).collect();
    assert_eq!(ids, added);
    assert!(facts.iter().all(|f| f.metadata() == &episode.metadata));
}

#[test]
fn filters_and_metadata_that_do_not_read_are_typed_errors_over_the_protocol() {
    use dispatch_runtime::memory_protocol::{Policy, handle};
    use serde_json::json;

    let (memory, _) = service();
    let policy = Policy::new("mcp");
    let added = handle(
        &memory,
        &policy,
        "memory_add",
        json!({"subject": "user", "relation": "likes", "object": "tea",
               "metadata": {"project": "rlm", "n": 2}}),
    )
    .unwrap();
    assert_eq!(added["fact"]["metadata"], json!({"project": "rlm", "n": 2}));
    for filter in [json!({"metadata.n": {"gte": 2}}), json!("metadata.n >= 2")] {
        let listed = handle(&memory, &policy, "memory_list", json!({"filter": filter})).unwrap();
        assert_eq!(listed["count"], 1, "{listed}");
    }
    let bad = handle(
        &memory,
        &policy,
        "memory_search",
        json!({"query": "tea", "filter": {"and": [{"colour": "red"}]}}),
    )
    .unwrap();
    assert_eq!(bad["error"]["code"], "invalid_filter");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/and/0/colour")
    );
    let bad = handle(
        &memory,
        &policy,
        "memory_add",
        json!({"subject": "u", "relation": "r", "object": "o", "metadata": {"a": [1]}}),
    )
    .unwrap();
    assert_eq!(bad["error"]["code"], "invalid_metadata");
}

#[test]
fn neighbours_walk_one_or_two_hops_with_their_paths() {
    let (memory, clock) = service();
    let add = |s: &str, r: &str, o: &str, project: &str| {
        memory
            .add(NewMemory::new(s, r, o).with_metadata(meta(&[&format!("project={project}")])))
            .unwrap()
            .fact
    };
    let works = add("user", "works_on", "project:rlm", "rlm");
    let manager = add("user", "reports_to", "dana", "org");
    let lang = add("project:rlm", "written_in", "rust", "rlm");
    let dana_team = add("dana", "leads", "team:infra", "org");
    add("rust", "created_by", "graydon", "lang");
    let unrelated = add("berlin", "is_in", "germany", "geo");
    memory.set_alias("boss", "dana").unwrap();
    let before = clock.now();
    clock.advance(Duration::from_secs(60));
    let moved = add("dana", "lives_in", "lisbon", "org");

    let read = ReadOptions::default();
    let one = memory.neighbours("Me", 1, 100, &read).unwrap();
    let ids: Vec<_> = one.iter().map(|n| n.fact.id()).collect();
    assert_eq!(ids, [works.id(), manager.id()]);
    assert!(
        one.iter()
            .all(|n| n.depth == 1 && n.path == ["user"] && n.via.is_none())
    );

    let two = memory.neighbours("user", 2, 100, &read).unwrap();
    let reached: Vec<_> = two
        .iter()
        .map(|n| (n.depth, n.path.join(">"), n.via, n.fact.id()))
        .collect();
    assert_eq!(
        reached,
        [
            (1, "user".into(), None, works.id()),
            (1, "user".into(), None, manager.id()),
            (2, "user>project:rlm".into(), Some(works.id()), lang.id()),
            (2, "user>dana".into(), Some(manager.id()), dana_team.id()),
            (2, "user>dana".into(), Some(manager.id()), moved.id()),
        ]
    );
    assert!(!two.iter().any(|n| n.fact.id() == unrelated.id()));
    // Three hops are not walked: rust's creator is not reached.
    assert!(!two.iter().any(|n| n.fact.object() == "graydon"));
    // A filter narrows every hop; a limit cuts, depth 1 first; as_of reads the past.
    let org = ReadOptions::default().with_filter(Some(
        fact_model::Filter::parse_where(r#"metadata.project = "org""#).unwrap(),
    ));
    let walked: Vec<_> = memory
        .neighbours("user", 2, 100, &org)
        .unwrap()
        .iter()
        .map(|n| n.fact.id())
        .collect();
    assert_eq!(walked, [manager.id(), dana_team.id(), moved.id()]);
    assert_eq!(memory.neighbours("user", 2, 3, &read).unwrap().len(), 3);
    let then = memory
        .neighbours("dana", 1, 100, &ReadOptions::as_of(Some(before)))
        .unwrap();
    assert_eq!(then.len(), 2);
    assert!(
        memory
            .neighbours("nobody", 2, 100, &read)
            .unwrap()
            .is_empty()
    );
    for depth in [0, 3] {
        let error = memory.neighbours("user", depth, 100, &read).unwrap_err();
        assert_eq!(error.code(), "invalid_depth");
    }
}

#[test]
fn recency_is_opt_in_and_ranks_newer_facts_first_by_their_age() {
    use dispatch_runtime::memory_protocol::{Policy, handle};
    use serde_json::json;

    let (memory, clock) = service();
    let day = Duration::from_secs(86_400);
    let old = memory
        .add(
            NewMemory::new("user", "plays", "tennis")
                .with_statement("User plays tennis on tennis courts every week")
                .with_valid_from(clock.now()),
        )
        .unwrap()
        .fact;
    clock.advance(day * 90);
    let new = memory
        .add(
            NewMemory::new("user", "started", "padel")
                .with_statement("User started padel, like tennis"),
        )
        .unwrap()
        .fact;
    let ids = |read: &ReadOptions| -> Vec<fact_model::FactId> {
        memory
            .search("tennis courts", 10, read)
            .unwrap()
            .iter()
            .map(|s| s.fact.id())
            .collect()
    };
    // By relevance alone the older fact, which says tennis twice, ranks first.
    assert_eq!(ids(&ReadOptions::default()), [old.id(), new.id()]);
    // With a 30-day half-life it is worth an eighth of that, and the new fact leads.
    let recent = ReadOptions::default().with_recency(Some(day * 30), None);
    assert_eq!(ids(&recent), [new.id(), old.id()]);
    // Measured to a reference date before the new fact, nothing decays the old one.
    let then = ReadOptions::default().with_recency(Some(day * 30), Some(old.valid_from()));
    assert_eq!(ids(&then), [old.id(), new.id()]);
    let recalled = memory.recall("tennis courts", 10, 2000, &recent).unwrap();
    assert_eq!(recalled.facts[0].fact.id(), new.id());

    let policy = Policy::new("mcp");
    let found = handle(
        &memory,
        &policy,
        "memory_search",
        json!({"query": "tennis courts", "recency_half_life": "30d"}),
    )
    .unwrap();
    assert_eq!(found["results"][0]["fact"]["id"], json!(new.id()));
    let bad = handle(
        &memory,
        &policy,
        "memory_recall",
        json!({"query": "tennis", "recency_half_life": "soon"}),
    )
    .unwrap();
    assert_eq!(bad["error"]["code"], "invalid_request");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("recency_half_life")
    );
}

#[test]
fn recall_expands_to_the_neighbours_of_its_best_facts_on_request() {
    use dispatch_runtime::memory_protocol::{Policy, handle};
    use serde_json::json;

    let (memory, _) = service();
    let add = |s: &str, r: &str, o: &str, statement: &str| {
        memory
            .add(NewMemory::new(s, r, o).with_statement(statement))
            .unwrap()
            .fact
    };
    let moved = add("caroline", "moved_to", "lisbon", "Caroline moved to Lisbon");
    let climate = add("lisbon", "has_climate", "mild", "Lisbon has mild winters");
    add("melanie", "paints", "sunsets", "Melanie paints sunsets");
    let question = "Where did Caroline move?";
    let plain = memory
        .recall(question, 1, 2000, &ReadOptions::default())
        .unwrap();
    assert!(plain.expanded.is_empty());
    let read = ReadOptions::default().with_expand(1);
    let found = memory.recall(question, 1, 2000, &read).unwrap();
    assert_eq!(found.facts[0].fact.id(), moved.id());
    let reached: Vec<_> = found
        .expanded
        .iter()
        .map(|n| (n.fact.id(), n.via))
        .collect();
    assert_eq!(reached, [(climate.id(), moved.id())]);
    assert!(
        found
            .text
            .ends_with("Lisbon has mild winters (from 2026-02-15)"),
        "{}",
        found.text
    );

    let policy = Policy::new("mcp");
    let answer = handle(
        &memory,
        &policy,
        "memory_recall",
        json!({"query": question, "limit": 1, "expand": 1}),
    )
    .unwrap();
    assert_eq!(answer["expanded"][0]["via"], json!(moved.id()));
    assert_eq!(answer["expanded"][0]["fact"]["id"], json!(climate.id()));
    let bad = handle(
        &memory,
        &policy,
        "memory_recall",
        json!({"query": question, "expand": 2}),
    )
    .unwrap();
    assert_eq!(bad["error"]["code"], "invalid_expand");
}
