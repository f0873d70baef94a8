//! Reads that fail (issue 23): a SQLite database whose tables another connection takes
//! away after the stores opened it. Every read of the runtime and of the memory service
//! is then the store's error with its code (`store_backend` in the protocol, `backend`
//! for memory), never an empty answer; nothing is archived or embedded on the strength
//! of a read that failed, and once the tables are back everything answers as before.
//! And a store whose counts fail right after a write (a [`Hooked`](crate::hooked::Hooked) store): the read an ingest
//! makes after an automatic compaction.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dispatch_runtime::ReadOptions;
use dispatch_runtime::durable::sqlite_stores;
use dispatch_runtime::memory_protocol::{Policy, handle};
use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
    MemoryChange, MemoryError, MemoryService, NewMemory, RuntimeError,
};
use fact_model::CharsPerToken;
use fact_model::{ManualClock, Message, MessageRole, SourceRole, Timestamp};
use fact_retrieve::{
    EmbedError, Embedder, FactQuery, FactRetriever, HybridError, HybridRetriever, IndexRetriever,
    RecallQuery,
};
use fact_store::{
    EpisodeStore, InMemoryEpisodeStore, InMemorySessionFactStore, SessionFactStore, StoreConfig,
    StoreError,
};
use fact_store_sqlite::SqliteFactStore;
use serde_json::json;
use tempfile::TempDir;

use crate::hooked::Hooked;

/// The tables every read of facts and counts uses.
const TABLES: [&str; 2] = ["facts", "scopes"];

/// Renames the tables of `db` away (`facts` → `gone_facts`, …) from another connection.
fn take_tables(db: &Path) {
    let other = rusqlite::Connection::open(db).unwrap();
    for table in TABLES {
        other
            .execute_batch(&format!("ALTER TABLE {table} RENAME TO gone_{table}"))
            .unwrap();
    }
}

/// Puts the tables [`take_tables`] took back.
fn give_tables_back(db: &Path) {
    let other = rusqlite::Connection::open(db).unwrap();
    for table in TABLES {
        other
            .execute_batch(&format!("ALTER TABLE gone_{table} RENAME TO {table}"))
            .unwrap();
    }
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2026-11-22T09:00:00Z".parse().unwrap()))
}

/// A project with spec `demo` (2 tasks), and a runtime whose spec stores live in
/// `memory.db` beside it.
fn durable_runtime() -> (DispatchRuntimeManager, TempDir) {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("tasks.md"),
        "- [ ] 1. Parse the input\n  - _Prompt: Write the parser in src/parser.rs_\n\
         - [ ] 2. Extend the parser\n  - _Prompt: Extend src/parser.rs with comments_\n",
    )
    .unwrap();
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock())
        .stores(sqlite_stores(
            dir.path().join("memory.db"),
            StoreConfig::default(),
        ))
        .project_root(dir.path())
        .build();
    (runtime, dir)
}

fn implemented(runtime: &DispatchRuntimeManager, run: &str) -> Result<(), RuntimeError> {
    let result = json!({"task_id": "1", "status": "completed",
        "summary": "Parser written in src/parser.rs", "files_changed": ["src/parser.rs"]});
    let output = format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    runtime
        .ingest_output(IngestOutputRequest::new(
            run,
            SourceRole::Implementer,
            "1",
            output,
        ))
        .map(|_| ())
}

#[test]
fn every_runtime_read_of_a_store_that_cannot_read_is_a_store_error() {
    let (runtime, dir) = durable_runtime();
    let db = dir.path().join("memory.db");
    // Another runtime on the same database (another process), which has run nothing of
    // the spec: whether it knows the spec is a read of the spec's store.
    let other = DispatchRuntimeManager::builder()
        .clock(clock())
        .stores(sqlite_stores(&db, StoreConfig::default()))
        .project_root(dir.path())
        .build();
    let first = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    implemented(&runtime, &first).unwrap();
    let second = runtime
        .init_run(InitRunRequest::new("demo", "2"))
        .unwrap()
        .run_id;
    let query = FactQuery::new("2", "Extend the parser");
    let found = runtime.query_facts("demo", &query).unwrap().facts.len();
    assert!(found > 0);
    assert!(other.knows_spec("demo").unwrap());
    let archive_facts = InMemorySessionFactStore::default();
    let archive_episodes = InMemoryEpisodeStore::default();
    let revision = runtime.get_snapshot(&first).unwrap().revision;

    take_tables(&db);
    let store_backend = |error: RuntimeError| {
        assert_eq!(error.code(), "store_backend", "{error}");
        assert!(error.to_string().contains("no such table"), "{error}");
    };
    // The prompt would go out without its session context: refused instead.
    store_backend(
        runtime
            .compile_prompt(CompilePromptRequest::new(
                &second,
                SourceRole::Implementer,
                "2",
            ))
            .unwrap_err(),
    );
    store_backend(runtime.query_facts("demo", &query).unwrap_err());
    store_backend(runtime.fact_history("demo", "src/parser.rs").unwrap_err());
    store_backend(other.knows_spec("demo").unwrap_err());
    store_backend(runtime.telemetry().unwrap_err());
    // Nothing is archived on the strength of a read that failed: no empty session.
    store_backend(
        runtime
            .archive_spec("demo", &archive_facts, &archive_episodes)
            .unwrap_err(),
    );
    assert_eq!(archive_facts.stored_count().unwrap(), 0);
    assert!(archive_episodes.episodes().unwrap().is_empty());
    // A result cannot be recorded either, and the run's ledger stays as it was.
    store_backend(implemented(&runtime, &first).unwrap_err());
    assert_eq!(runtime.get_snapshot(&first).unwrap().revision, revision);
    // Over the protocol: the same code, for every read action.
    for request in [
        json!({"action": "get_telemetry"}),
        json!({"action": "query_facts", "spec_name": "demo", "task_id": "2",
               "task_description": "Extend the parser"}),
        json!({"action": "fact_history", "spec_name": "demo", "subject": "src/parser.rs"}),
        json!({"action": "compile_prompt", "run_id": second, "role": "implementer",
               "task_id": "2"}),
    ] {
        let answer = dispatch_runtime::protocol::handle(&runtime, &request);
        assert_eq!(answer["ok"], false, "{request}: {answer}");
        assert_eq!(
            answer["error"]["code"], "store_backend",
            "{request}: {answer}"
        );
    }

    give_tables_back(&db);
    assert_eq!(
        runtime.query_facts("demo", &query).unwrap().facts.len(),
        found
    );
    assert_eq!(
        runtime.fact_history("demo", "src/parser.rs").unwrap().len(),
        1
    );
    assert!(runtime.telemetry().unwrap().facts_valid > 0);
    let archived = runtime
        .archive_spec("demo", &archive_facts, &archive_episodes)
        .unwrap();
    assert!(!archived.facts.added.is_empty());
    let prompt = runtime
        .compile_prompt(CompilePromptRequest::new(
            &second,
            SourceRole::Implementer,
            "2",
        ))
        .unwrap();
    assert!(
        prompt.session_context.contains("src/parser.rs"),
        "{prompt:?}"
    );
}

/// A memory on `memory.db` in a fresh directory, holding two facts about the user.
fn durable_memory() -> (MemoryService, TempDir) {
    let dir = TempDir::new().unwrap();
    let store = SqliteFactStore::open(
        dir.path().join("memory.db"),
        "user:test",
        StoreConfig::default(),
        clock(),
    )
    .unwrap();
    let memory = MemoryService::new(Arc::new(store), clock());
    for (relation, object) in [("lives_in", "Berlin"), ("prefers_test_framework", "pytest")] {
        memory
            .add(NewMemory::new("user", relation, object))
            .unwrap();
    }
    (memory, dir)
}

#[test]
fn every_memory_read_of_a_store_that_cannot_read_is_a_store_error() {
    let (memory, dir) = durable_memory();
    let db = dir.path().join("memory.db");
    let id = memory.list(&ReadOptions::default()).unwrap()[0]
        .id()
        .to_string();
    let at = Some(Timestamp::MAX);

    take_tables(&db);
    let backend = |error: MemoryError| {
        assert!(matches!(error, MemoryError::Store(_)), "{error:?}");
        assert_eq!(error.code(), "backend", "{error}");
    };
    backend(memory.list(&ReadOptions::default()).unwrap_err());
    backend(memory.list(&ReadOptions::as_of(at)).unwrap_err());
    backend(memory.get(&id).unwrap_err());
    backend(
        memory
            .search("berlin", 10, &ReadOptions::default())
            .unwrap_err(),
    );
    backend(
        memory
            .search("berlin", 10, &ReadOptions::as_of(at))
            .unwrap_err(),
    );
    backend(memory.history("user", &ReadOptions::default()).unwrap_err());
    backend(
        memory
            .recall("where does the user live", 10, 500, &ReadOptions::default())
            .unwrap_err(),
    );
    backend(memory.format(500, &ReadOptions::default()).unwrap_err());
    backend(
        memory
            .known_memory(&[Message::new(MessageRole::User, "I moved to Paris")])
            .unwrap_err(),
    );
    let change = MemoryChange {
        object: Some("Paris".into()),
        ..MemoryChange::default()
    };
    backend(memory.update(&id, change).unwrap_err());
    backend(memory.forget_subject("user").unwrap_err());
    backend(memory.set_alias("me", "user").unwrap_err());
    // The tools answer a tool error with the store's code, whichever read they make.
    let policy = Policy::new("test");
    for (tool, arguments) in [
        ("memory_list", json!({})),
        ("memory_get", json!({"id": id})),
        ("memory_search", json!({"query": "berlin"})),
        ("memory_history", json!({"subject": "user"})),
        (
            "memory_recall",
            json!({"query": "where does the user live"}),
        ),
        ("memory_format", json!({})),
    ] {
        let answer = handle(&memory, &policy, tool, arguments).unwrap();
        assert_eq!(answer["ok"], false, "{tool}: {answer}");
        assert_eq!(answer["error"]["code"], "backend", "{tool}: {answer}");
    }

    give_tables_back(&db);
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 2);
    assert_eq!(
        memory
            .history("user", &ReadOptions::default())
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        memory
            .search("berlin", 10, &ReadOptions::default())
            .unwrap()
            .len(),
        1
    );
}

/// A model of two dimensions: texts about places, and the rest.
#[derive(Debug)]
struct Places;

impl Embedder for Places {
    fn model(&self) -> &str {
        "places-v1"
    }

    fn dimension(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let lower = text.to_lowercase();
                if ["berlin", "paris", "live", "home"]
                    .iter()
                    .any(|w| lower.contains(w))
                {
                    vec![1.0, 0.1]
                } else {
                    vec![0.1, 1.0]
                }
            })
            .collect())
    }
}

#[test]
fn with_embedder_on_a_store_that_cannot_read_is_a_store_error_and_embeds_nothing() {
    let (memory, dir) = durable_memory();
    let db = dir.path().join("memory.db");
    take_tables(&db);
    // Which facts lack an embedding cannot be read: before, that was "none".
    let error = memory.clone().with_embedder(Arc::new(Places)).unwrap_err();
    assert!(matches!(error, MemoryError::Store(_)), "{error:?}");
    assert_eq!(error.code(), "backend");
    give_tables_back(&db);
    let vectors = memory.store().vectors().unwrap();
    assert_eq!(vectors.embedded_count("places-v1").unwrap(), 0);
    // Started again with the tables back, the service embeds every fact it holds.
    let memory = memory.with_embedder(Arc::new(Places)).unwrap();
    assert_eq!(
        memory
            .store()
            .vectors()
            .unwrap()
            .embedded_count("places-v1")
            .unwrap(),
        2
    );
    // A recall whose vector side cannot be read is a store error too.
    take_tables(&db);
    let error = memory
        .recall("where is home", 10, 500, &ReadOptions::default())
        .unwrap_err();
    assert!(matches!(error, MemoryError::Store(_)), "{error:?}");
    give_tables_back(&db);
    let recalled = memory
        .recall("where is home", 10, 500, &ReadOptions::default())
        .unwrap();
    assert!(recalled.text.contains("Berlin"), "{}", recalled.text);
}

/// The retriever's own reads (fact-retrieve names no backend, so its test of a SQLite store
/// that cannot read lives here): every read of `HybridRetriever`, `IndexRetriever` and
/// `recall` over such a store is its error, never "nothing found", and nothing is lost.
#[test]
fn every_retriever_read_of_a_store_that_cannot_read_is_an_error_never_nothing_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let clock: Arc<dyn fact_model::Clock> = clock();
    let store = Arc::new(SqliteFactStore::open(&db, "s", StoreConfig::default(), clock).unwrap());
    let said = |text: &str| {
        fact_model::SessionFact::builder("user", "said", text)
            .tag(fact_model::Tag::Observation)
            .source("chat", SourceRole::User)
            .valid_from(Timestamp::from_unix_secs(1_800_000_000).unwrap())
            .build()
            .unwrap()
    };
    let corpus = vec![said("I live in Berlin"), said("I adopted a puppy")];
    store.add(corpus.clone()).unwrap();
    let retriever = HybridRetriever::new(store.clone(), Arc::new(Places)).unwrap();
    take_tables(&db);
    let store_error = |error: HybridError| match error {
        HybridError::Store(error) => error,
        other => panic!("not a store error: {other:?}"),
    };
    // Which facts lack an embedding cannot be read: an error, not "none is missing".
    let error = store_error(retriever.embed_missing().unwrap_err());
    assert_eq!(error.code(), "backend", "{error}");
    assert!(error.to_string().contains("no such table"), "{error}");
    let query = FactQuery::new("q", "where is home");
    assert_eq!(retriever.rank(&query).unwrap_err().code(), "backend");
    assert_eq!(retriever.retrieve(&query).unwrap_err().code(), "backend");
    let lexical = IndexRetriever::new(store.clone());
    assert_eq!(lexical.retrieve(&query).unwrap_err().code(), "backend");
    let recall_query = RecallQuery::new("where is home");
    let counter = CharsPerToken::default();
    let error = retriever
        .recall(&*store, &recall_query, &counter)
        .unwrap_err();
    assert_eq!(error.code(), "backend");
    let error = fact_retrieve::recall(&*store, &*store, &recall_query, &counter).unwrap_err();
    assert_eq!(error.code(), "backend");
    // With the tables back nothing is lost, and every fact is still to embed.
    give_tables_back(&db);
    assert_eq!(retriever.embed_missing().unwrap(), corpus.len());
    let found = retriever.retrieve(&query).unwrap();
    assert_eq!(
        found.facts.first().map(|f| f.fact.object()),
        Some("I live in Berlin")
    );
}

#[test]
fn an_ingest_whose_count_after_compaction_cannot_be_read_is_a_store_error() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("tasks.md"), "- [ ] 1. Parse the input\n").unwrap();
    let broken = Arc::new(AtomicBool::new(false));
    let counts = broken.clone();
    // A capacity of one: every ingest compacts, then reads how many facts are valid.
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock())
        .stores(Box::new(move |_, clock| {
            let config = StoreConfig::default().with_capacity(1);
            // Its counts cannot be read once `broken` is set, as a store whose connection
            // dropped right after a write committed.
            let broken = counts.clone();
            Ok(Arc::new(Hooked {
                store: InMemorySessionFactStore::new(config, clock),
                hook: Box::new(move |call| {
                    if matches!(call, "valid_count" | "stored_count")
                        && broken.load(Ordering::Relaxed)
                    {
                        return Err(StoreError::Io {
                            message: "the connection was closed".into(),
                        });
                    }
                    Ok(())
                }),
            }) as Arc<dyn SessionFactStore>)
        }))
        .project_root(dir.path())
        .build();
    let run = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    let revision = runtime.get_snapshot(&run).unwrap().revision;
    broken.store(true, Ordering::Relaxed);
    // Before, the count answered 0 (`"valid_after": 0`) and the ingest was recorded.
    let error = implemented(&runtime, &run).unwrap_err();
    assert_eq!(error.code(), "store_io", "{error}");
    assert_eq!(runtime.get_snapshot(&run).unwrap().revision, revision);
    assert_eq!(runtime.telemetry().unwrap_err().code(), "store_io");
    // Once the store answers, the same output is recorded. Its facts went in with the
    // first attempt (the count was read after the commit), and the retry's keyed
    // transaction is applied once: nothing is added again, nothing compacted again.
    broken.store(false, Ordering::Relaxed);
    let result = json!({"task_id": "1", "status": "completed",
        "summary": "Parser written in src/parser.rs", "files_changed": ["src/parser.rs"]});
    let output = format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    let ingested = runtime
        .ingest_output(IngestOutputRequest::new(
            &run,
            SourceRole::Implementer,
            "1",
            output,
        ))
        .unwrap();
    assert_eq!((ingested.facts_added, ingested.facts_invalidated), (0, 0));
    assert!(ingested.compaction.is_none());
    assert_eq!(runtime.telemetry().unwrap().facts_valid, 1);
    assert!(runtime.get_snapshot(&run).unwrap().revision > revision);
}
