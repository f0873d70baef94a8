//! Long-term memory benchmarks: assembling an extraction prompt (what memory holds about
//! the conversation, then the prompt) with 10,000 facts in scope, in memory and on SQLite;
//! and archiving a 200-message transcript on SQLite, the model excluded. Run with
//! `cargo bench -p dispatch-runtime --bench memory --features sqlite`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use dispatch_runtime::{ArchiveRequest, MemoryService};
use divan::Bencher;
use fact_extract::{DEFAULT_CATEGORIES, TranscriptChunk, extraction_prompt};
use fact_model::{ManualClock, Message, MessageRole, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{InMemoryLongTermStore, LongTermStore, StoreConfig};
use fact_store_sqlite::SqliteFactStore;

fn main() {
    divan::main();
}

const WORDS: &[&str] = &[
    "berlin", "paris", "rust", "python", "pytest", "nextest", "neovim", "vscode", "garden",
    "marathon", "painting", "guitar", "sister", "brother", "project", "deadline", "coffee", "tea",
    "bicycle", "train", "flat", "office", "remote", "team", "release", "database", "sqlite",
    "postgres", "dog", "cat", "holiday", "spain", "japan", "cooking", "novel",
];

fn config() -> StoreConfig {
    StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false)
}

/// 10,000 facts: a fifth about the user, the rest about 500 other entities, with
/// sentences drawn from a small vocabulary so many share words with a conversation.
fn facts() -> Vec<Vec<SessionFact>> {
    let at = Timestamp::from_unix_secs(1_750_000_000).unwrap();
    let word = |i: usize| WORDS[i % WORDS.len()];
    (0..100)
        .map(|batch| {
            (0..100)
                .map(|i| {
                    let n = batch * 100 + i;
                    let subject = if n % 5 == 0 {
                        "user".to_owned()
                    } else {
                        format!("person {}", n % 500)
                    };
                    let relation = format!("likes_{}_{n}", word(n / 7));
                    let object = format!("{} {} {n}", word(n), word(n * 3 + 1));
                    SessionFact::builder(subject.clone(), relation, object.clone())
                        .tag(Tag::Preference)
                        .source(format!("ep_{batch}"), SourceRole::Extractor)
                        .valid_from(at)
                        .statement(format!("{subject} likes {object} and {}", word(n * 11)))
                        .build()
                        .unwrap()
                })
                .collect()
        })
        .collect()
}

/// A conversation of `n` messages.
fn conversation(n: usize, salt: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 {
                MessageRole::User
            } else {
                MessageRole::Assistant
            };
            let text = format!(
                "Message {i} ({salt}): I moved to {} and now ride a {} to the {} with my {}.",
                WORDS[(i + salt) % WORDS.len()],
                WORDS[(i * 3 + 5) % WORDS.len()],
                WORDS[(i * 7 + 2) % WORDS.len()],
                WORDS[(i * 13 + 1) % WORDS.len()],
            );
            Message::new(role, text)
        })
        .collect()
}

fn fill(store: &dyn LongTermStore) {
    for batch in facts() {
        store.add(batch).unwrap();
    }
    assert_eq!(store.valid_count().unwrap(), 10_000);
}

/// What memory holds about a 20-message conversation, and the prompt that lists it.
fn assemble(memory: &MemoryService, messages: &[Message]) -> String {
    let known = memory.known_memory(messages).unwrap();
    assert!(known.facts.len() >= 10, "{} known facts", known.facts.len());
    let chunk = TranscriptChunk::new(0, messages.to_vec());
    extraction_prompt(DEFAULT_CATEGORIES, &known, &chunk)
}

#[divan::bench(sample_count = 100)]
fn extraction_prompt_with_10000_facts_in_memory(bencher: Bencher<'_, '_>) {
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_unix_secs(1_800_000_000).unwrap(),
    ));
    let store = Arc::new(InMemoryLongTermStore::new(config(), clock.clone()));
    fill(&*store);
    let memory = MemoryService::new(store, clock);
    let messages = conversation(20, 0);
    bencher.bench_local(|| assemble(&memory, &messages));
}

#[divan::bench(sample_count = 100)]
fn extraction_prompt_with_10000_facts_on_sqlite(bencher: Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_unix_secs(1_800_000_000).unwrap(),
    ));
    let store = Arc::new(
        SqliteFactStore::open(
            dir.path().join("memory.db"),
            "bench",
            config(),
            clock.clone(),
        )
        .unwrap(),
    );
    fill(&*store);
    let memory = MemoryService::new(store, clock);
    let messages = conversation(20, 0);
    bencher.bench_local(|| assemble(&memory, &messages));
}

#[divan::bench(sample_count = 50)]
fn archive_200_messages_on_sqlite(bencher: Bencher<'_, '_>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_unix_secs(1_800_000_000).unwrap(),
    ));
    let store = Arc::new(
        SqliteFactStore::open(
            dir.path().join("memory.db"),
            "bench",
            config(),
            clock.clone(),
        )
        .unwrap(),
    );
    let memory = MemoryService::new(store, clock);
    let mut salt = 0;
    bencher
        .with_inputs(|| {
            salt += 1;
            conversation(200, salt)
                .iter()
                .map(|m| format!("{}\n", serde_json::to_string(m).unwrap()))
                .collect::<String>()
        })
        .bench_local_values(|transcript| {
            memory
                .archive(
                    ArchiveRequest::new(&transcript)
                        .with_session_time(Some(Timestamp::from_unix_secs(1_750_000_000).unwrap())),
                )
                .unwrap()
        });
}
