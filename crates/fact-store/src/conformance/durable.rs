//! What every durable store passes (SQLite, PostgreSQL), written once over the traits and
//! called by each backend's own tests with stores it opened: episodes, several stores
//! writing one scope at once, a store's search cache following another's writes, another
//! store seeing long-term memory's writes, and embeddings (durable, followed by other
//! store objects, kept apart by scope).

// `MemoryWrite` is `#[non_exhaustive]`: outside fact-store's own code a write is made by
// `Default` and assigned field by field.
#![allow(clippy::field_reassign_with_default)]

use crate::{
    AliasChange, Episode, EpisodeStore, LongTermStore, MemoryWrite, MessageQuery, ProfileEntry,
    SessionFactStore, StoreConfig, StoreError, TermQuery, TermWeighting,
};
use fact_model::{FactId, ManualClock, Message, MessageRole, ProfileField};

use super::fixture::{Overlap, fact, t};

/// A search with [`Overlap`] for the ten best, as lines with scores.
pub fn search(store: &dyn SessionFactStore, text: &str) -> Vec<(String, f64)> {
    let query = TermQuery::default().with_limit(10);
    super::fixture::search(store, text, query)
}

/// A configuration that neither compacts nor drops history in these tests.
pub fn roomy() -> StoreConfig {
    StoreConfig::default()
        .with_capacity(10_000)
        .with_history_limit(10_000)
}

/// A conversation of one message by the user, without a time.
pub fn says(content: &str) -> Vec<Message> {
    vec![Message::new(MessageRole::User, content)]
}

/// Episodes are stored, listed, searched, marked and replaced; `store` is empty.
pub fn episodes_are_stored_searched_and_marked<S>(store: &S)
where
    S: SessionFactStore + EpisodeStore,
{
    let mut testing = Episode::new(
        "Testing",
        "The user chose pytest over unittest.",
        says("pytest"),
        t(10),
    );
    testing.tags = vec!["python".into(), "tests".into()];
    let databases = Episode::new(
        "Databases",
        "SQLite with FTS5 for memory.",
        says("sqlite"),
        t(20),
    );
    let both = Episode::new(
        "Tests and databases",
        "pytest fixtures for SQLite.",
        Vec::new(),
        t(5),
    );
    for episode in [&testing, &databases, &both] {
        store.put_episode(episode).unwrap();
    }
    assert_eq!(store.episode(&testing.id).unwrap().as_ref(), Some(&testing));
    assert!(store.episode("ep_0000000000000000").unwrap().is_none());
    let ids =
        |episodes: Vec<Episode>| -> Vec<String> { episodes.into_iter().map(|e| e.title).collect() };
    assert_eq!(
        ids(store.episodes().unwrap()),
        ["Tests and databases", "Testing", "Databases"]
    );
    // More distinct query terms first, then newer.
    assert_eq!(
        ids(store.search_episodes("pytest and sqlite?", 5).unwrap()),
        ["Tests and databases", "Databases", "Testing"]
    );
    assert_eq!(
        ids(store.search_episodes("pytest", 1).unwrap()),
        ["Testing"]
    );
    assert!(store.search_episodes("kubernetes", 5).unwrap().is_empty());
    assert!(store.search_episodes("the and", 5).unwrap().is_empty());
    // Extraction bookkeeping.
    assert_eq!(store.pending_extraction().unwrap().len(), 3);
    store.mark_extracted(&testing.id, t(30)).unwrap();
    assert_eq!(
        ids(store.pending_extraction().unwrap()),
        ["Tests and databases", "Databases"]
    );
    assert_eq!(
        store.episode(&testing.id).unwrap().unwrap().extracted_at,
        Some(t(30))
    );
    let err = store.mark_extracted("ep_missing", t(30)).unwrap_err();
    assert!(matches!(err, StoreError::EpisodeNotFound { .. }), "{err:?}");
    // Replacing an episode keeps its place and re-indexes it.
    let mut renamed = databases.clone();
    renamed.summary = "Postgres after all.".into();
    store.put_episode(&renamed).unwrap();
    assert_eq!(store.episodes().unwrap().len(), 3);
    assert_eq!(
        ids(store.search_episodes("sqlite", 5).unwrap()),
        ["Tests and databases"]
    );
    assert_eq!(
        ids(store.search_episodes("postgres", 5).unwrap()),
        ["Databases"]
    );
    // Facts name their episode as their source task.
    let from_episode = fact_model::SessionFact::builder("user", "prefers_test_framework", "pytest")
        .tag(fact_model::Tag::Preference)
        .source(testing.id.clone(), fact_model::SourceRole::Extractor)
        .valid_from(t(10))
        .build()
        .unwrap();
    store.add(vec![from_episode]).unwrap();
    assert_eq!(store.valid_facts().unwrap()[0].source_task_id(), testing.id);
}

/// `threads` threads, taking `stores` (of one scope, configured [`roomy`]) in turn, each
/// add `per_thread` batches of two facts, one of a key every thread writes: nothing is
/// lost, the later batch wins the shared key each time, and every add got a batch number
/// of its own.
pub fn writers_on_several_stores_lose_nothing<S>(stores: &[S], threads: usize, per_thread: i64)
where
    S: SessionFactStore + Sync,
{
    std::thread::scope(|scope| {
        for worker in 0..threads {
            let store = &stores[worker % stores.len()];
            scope.spawn(move || {
                for n in 0..per_thread {
                    store
                        .add(vec![
                            fact(
                                &format!("src/{worker}/{n}.rs"),
                                "modified_by",
                                "task:1",
                                1,
                                n,
                            ),
                            // Every worker writes this key: the later batch wins each time.
                            fact("task:1", "completed_with", &format!("w{worker} n{n}"), 1, n),
                        ])
                        .unwrap();
                }
            });
        }
    });
    let adds = threads * usize::try_from(per_thread).unwrap();
    for store in stores {
        assert_eq!(store.valid_count().unwrap(), adds + 1);
        assert_eq!(store.stored_count().unwrap(), 2 * adds);
        assert_eq!(store.history("task:1").unwrap().len(), adds);
        // The search cache of each store sees the others' writes.
        assert_eq!(search(store, "completed").len(), 1);
    }
    let mut batches: Vec<u64> = stores[0]
        .export_snapshot()
        .unwrap()
        .records
        .iter()
        .map(|r| r.batch)
        .collect();
    batches.sort_unstable();
    batches.dedup();
    assert_eq!(
        batches,
        (1..=adds as u64).collect::<Vec<u64>>(),
        "one batch number per add, none shared"
    );
}

/// `reader` and `writer`, two stores of one new scope: the reader's search cache follows
/// the writer's adds, invalidations, updates and deletions.
pub fn a_search_cache_follows_writes_of_another_store(
    reader: &dyn SessionFactStore,
    writer: &dyn SessionFactStore,
    clock: std::sync::Arc<ManualClock>,
) {
    writer
        .add(vec![fact("src/lexer.rs", "modified_by", "task:1", 1, 0)])
        .unwrap();
    assert_eq!(search(reader, "lexer").len(), 1);
    writer
        .add(vec![fact("src/parser.rs", "modified_by", "task:2", 2, 1)])
        .unwrap();
    assert_eq!(search(reader, "parser").len(), 1);
    reader
        .add(vec![fact("src/parser.rs", "reviewed_by", "task:3", 3, 2)])
        .unwrap();
    writer.invalidate("src/parser.rs", "modified_by").unwrap();
    assert_eq!(
        search(reader, "parser"),
        [("src/parser.rs reviewed_by task:3".to_owned(), 1.0)]
    );
    assert_eq!(search(writer, "parser"), search(reader, "parser"));
    // An update by the other store (the row changes in place), then a deletion (which
    // the reader follows by reloading).
    let lexer = FactId::for_triple("src/lexer.rs", "modified_by", "task:1");
    let statement = fact_model::FactUpdate {
        statement: Some("the tokenizer moved".into()),
        ..fact_model::FactUpdate::default()
    };
    writer.update(lexer, &statement).unwrap();
    assert_eq!(search(reader, "tokenizer").len(), 1);
    writer.delete(lexer).unwrap();
    assert!(search(reader, "tokenizer lexer").is_empty());
    assert_eq!(search(reader, "parser").len(), 1);
    let reference = crate::InMemorySessionFactStore::new(StoreConfig::default(), clock.clone());
    reference.import(writer.export_snapshot().unwrap()).unwrap();
    for text in ["parser", "lexer tokenizer", "task modified reviewed src"] {
        assert_eq!(search(reader, text), search(&reference, text), "{text}");
    }
}

/// Keyword overlap for messages: each distinct query term a message holds counts 1.
#[derive(Debug)]
struct Count;

impl TermWeighting for Count {
    fn term_weight(&self, _: usize, _: usize, _: usize) -> f64 {
        1.0
    }
    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

/// `writer` and `reader`, two store objects of one new scope: what one commits (an
/// episode's messages, aliases, profile versions, a deleted episode) the other reads at
/// once, and a search ranks its messages with the statistics both wrote.
pub fn another_store_sees_long_term_writes(writer: &dyn LongTermStore, reader: &dyn LongTermStore) {
    let at = t(100);
    let moving = Episode::new(
        "Moving",
        "",
        vec![
            Message::new(MessageRole::User, "Where should the piano go?").at(at),
            Message::new(MessageRole::Assistant, "By the window of the new flat.").at(at),
        ],
        t(1_000),
    );
    let mut write = MemoryWrite::default();
    write.episode = Some(moving.clone());
    write.aliases = vec![AliasChange::Set {
        alias: "mel".into(),
        entity: "melanie".into(),
        at,
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Nurse".into(),
        at,
    }];
    writer.commit(write).unwrap();
    assert_eq!(reader.episode(&moving.id).unwrap().unwrap(), moving);
    let hits = reader
        .search_messages(&MessageQuery::new("piano", 5), &Count)
        .unwrap();
    let turns: Vec<usize> = hits.iter().map(|hit| hit.turn).collect();
    assert_eq!(turns, [0, 1], "the answer rides on the question: {hits:?}");
    assert_eq!(hits[0].message, moving.messages[0]);
    assert_eq!(hits[0].episode_id, moving.id);
    assert_eq!(reader.aliases().unwrap()[0].entity, "melanie");
    assert_eq!(reader.profile().unwrap()[0].text, "Nurse");
    // The reader writes too: the writer sees it, and the statistics stay shared.
    let pets = Episode::new("Pets", "", says("The piano scares the puppy."), t(1_001));
    reader.put_episode(&pets).unwrap();
    let mut write = MemoryWrite::default();
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Head nurse".into(),
        at: t(200),
    }];
    reader.commit(write).unwrap();
    assert_eq!(writer.profile_history().unwrap().len(), 2);
    assert_eq!(writer.profile().unwrap()[0].text, "Head nurse");
    let query = MessageQuery::new("piano puppy", 10);
    let from_writer = writer.search_messages(&query, &Count).unwrap();
    assert_eq!(from_writer, reader.search_messages(&query, &Count).unwrap());
    assert_eq!(from_writer[0].episode_title, "Pets");
    assert!(writer.delete_episode(&pets.id).unwrap());
    assert!(reader.episode(&pets.id).unwrap().is_none());
    assert!(
        reader
            .search_messages(&MessageQuery::new("puppy", 10), &Count)
            .unwrap()
            .is_empty()
    );
}

// --- embeddings ---------------------------------------------------------------------------

/// The model the embedding tests store vectors of.
pub const MODEL: &str = "test-model";

/// The embeddings of `store` (every durable store keeps them).
fn vectors(store: &dyn SessionFactStore) -> &dyn crate::FactVectors {
    store.vectors().expect("a durable store keeps embeddings")
}

/// The objects of the facts nearest `vector` (limit 10), best first.
pub fn nearest(store: &dyn SessionFactStore, vector: &[f32]) -> Vec<String> {
    vectors(store)
        .nearest(&crate::VectorQuery::new(MODEL, vector, 10))
        .unwrap()
        .into_iter()
        .map(|s| s.fact.object().to_owned())
        .collect()
}

/// Three facts (`a`, `b`, `c`, subjects `x/a.rs`…) and their embeddings: each along one
/// axis of three dimensions.
pub fn add_embedded_facts(store: &dyn SessionFactStore) {
    let facts: Vec<_> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(n, name)| fact(&format!("x/{name}.rs"), "modified_by", name, 1, n as i64))
        .collect();
    store.add(facts.clone()).unwrap();
    let embeddings = facts
        .iter()
        .enumerate()
        .map(|(n, f)| {
            let mut v = vec![0.0; 3];
            v[n] = 2.0;
            (f.id(), v)
        })
        .collect();
    assert_eq!(vectors(store).put_embeddings(MODEL, embeddings).unwrap(), 3);
}

/// `first` holds [`add_embedded_facts`]; after it is dropped, `reopen` opens the same
/// database and scope again: the embeddings are there.
pub fn embeddings_survive_reopening(
    first: Box<dyn SessionFactStore>,
    reopen: impl FnOnce() -> Box<dyn SessionFactStore>,
) {
    add_embedded_facts(first.as_ref());
    assert_eq!(nearest(first.as_ref(), &[0.0, 1.0, 0.1]), ["b", "c", "a"]);
    drop(first);
    let store = reopen();
    assert_eq!(vectors(store.as_ref()).embedded_count(MODEL).unwrap(), 3);
    assert_eq!(
        vectors(store.as_ref())
            .embedded_count("other-model")
            .unwrap(),
        0
    );
    assert_eq!(nearest(store.as_ref(), &[0.0, 1.0, 0.1]), ["b", "c", "a"]);
    assert!(
        vectors(store.as_ref())
            .unembedded(MODEL, 10)
            .unwrap()
            .is_empty()
    );
    // The stored dimension binds later vectors, after reopening too.
    let a = FactId::for_triple("x/a.rs", "modified_by", "a");
    let err = vectors(store.as_ref())
        .put_embeddings(MODEL, vec![(a, vec![1.0, 0.0])])
        .unwrap_err();
    assert_eq!(err.code(), "invalid_embedding", "{err}");
}

/// `reader` and `writer`, two store objects of one new scope: the reader's `nearest`
/// sees the writer's embeddings as they are stored and replaced, and stops seeing a fact
/// that is superseded or deleted (also when its triple comes back without an embedding).
pub fn nearest_follows_embeddings_of_another_store(
    reader: &dyn SessionFactStore,
    writer: &dyn SessionFactStore,
) {
    assert!(nearest(reader, &[1.0, 0.0, 0.0]).is_empty());
    add_embedded_facts(writer);
    // The reader loads the model at its first search, and follows later writes.
    assert_eq!(nearest(reader, &[1.0, 0.1, 0.0]), ["a", "b", "c"]);
    let c = FactId::for_triple("x/c.rs", "modified_by", "c");
    vectors(writer)
        .put_embeddings(MODEL, vec![(c, vec![1.0, 0.0, 0.5])])
        .unwrap();
    assert_eq!(nearest(reader, &[1.0, 0.1, 0.0]), ["a", "c", "b"]);
    assert_eq!(vectors(reader).embedded_count(MODEL).unwrap(), 3);
    // A newer fact of `x/b.rs` supersedes `b`: it drops out, and the new fact waits for
    // its embedding.
    writer
        .add(vec![fact("x/b.rs", "modified_by", "b2", 2, 10)])
        .unwrap();
    assert_eq!(nearest(reader, &[0.1, 1.0, 0.0]), ["a", "c"]);
    let waiting: Vec<String> = vectors(reader)
        .unembedded(MODEL, 10)
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    assert_eq!(waiting, ["b2"]);
    // Deleting `a` deletes its embedding: gone from the reader's search, and not back when
    // the same triple is added again (it has no embedding now).
    let a = FactId::for_triple("x/a.rs", "modified_by", "a");
    writer.delete(a).unwrap();
    assert_eq!(nearest(reader, &[1.0, 0.0, 0.0]), ["c"]);
    assert_eq!(vectors(reader).embedded_count(MODEL).unwrap(), 2);
    writer
        .add(vec![fact("x/a.rs", "modified_by", "a", 1, 20)])
        .unwrap();
    assert_eq!(nearest(reader, &[1.0, 0.0, 0.0]), ["c"]);
    assert_eq!(nearest(writer, &[1.0, 0.0, 0.0]), ["c"]);
    assert_eq!(vectors(reader).unembedded(MODEL, 10).unwrap().len(), 2);
    // Embedded again, by the reader this time: the writer sees it.
    vectors(reader)
        .put_embeddings(MODEL, vec![(a, vec![0.0, 0.0, 5.0])])
        .unwrap();
    assert_eq!(nearest(writer, &[0.0, 0.0, 1.0]), ["a", "c"]);
}

/// `a` and `b`, stores of two scopes of one database: neither sees the other's vectors,
/// even for the same triple and model.
pub fn scopes_do_not_see_each_other_s_vectors(a: &dyn SessionFactStore, b: &dyn SessionFactStore) {
    add_embedded_facts(a);
    assert!(nearest(b, &[1.0, 0.0, 0.0]).is_empty());
    assert_eq!(vectors(b).embedded_count(MODEL).unwrap(), 0);
    // An id only `a` holds is skipped in `b`.
    let id = FactId::for_triple("x/a.rs", "modified_by", "a");
    assert_eq!(
        vectors(b)
            .put_embeddings(MODEL, vec![(id, vec![1.0; 5])])
            .unwrap(),
        0
    );
    // `b` holds the same triple with a vector of its own, of another dimension even.
    b.add(vec![fact("x/a.rs", "modified_by", "a", 1, 0)])
        .unwrap();
    assert_eq!(
        vectors(b)
            .put_embeddings(MODEL, vec![(id, vec![1.0; 5])])
            .unwrap(),
        1
    );
    assert_eq!(nearest(b, &[1.0; 5]), ["a"]);
    assert!(nearest(b, &[1.0, 0.0, 0.0]).is_empty());
    assert_eq!(nearest(a, &[1.0, 0.1, 0.0]), ["a", "b", "c"]);
    assert_eq!(vectors(a).embedded_count(MODEL).unwrap(), 3);
}

// --- reads that fail (issue 23) ------------------------------------------------------------

/// Every read of the fact store and of its vectors, by name, with its outcome reduced to
/// `Ok(())` or the error: what a test that breaks the database checks, read by read.
pub fn every_read(store: &dyn SessionFactStore) -> Vec<(&'static str, Result<(), StoreError>)> {
    let id = FactId::for_triple("x/a.rs", "modified_by", "a");
    let query = TermQuery::new("modified", 10);
    let as_of = TermQuery::new("modified", 10).with_as_of(t(5));
    let vectors = vectors(store);
    let near = crate::VectorQuery::new(MODEL, &[1.0, 0.0, 0.0], 10);
    vec![
        ("valid_facts", ok(store.valid_facts())),
        ("valid_at", ok(store.valid_at(t(5)))),
        ("history", ok(store.history("x/a.rs"))),
        ("get", ok(store.get(id))),
        ("export_snapshot", ok(store.export_snapshot())),
        ("search", ok(store.search(&query, &Overlap))),
        ("search as_of", ok(store.search(&as_of, &Overlap))),
        (
            "valid_facts_by_tags",
            ok(store.valid_facts_by_tags(&[fact_model::Tag::Decision])),
        ),
        ("valid_count", ok(store.valid_count())),
        ("stored_count", ok(store.stored_count())),
        ("unembedded", ok(vectors.unembedded(MODEL, 10))),
        ("embedded_count", ok(vectors.embedded_count(MODEL))),
        ("nearest", ok(vectors.nearest(&near))),
    ]
}

/// A read's outcome without its value.
fn ok<T>(result: Result<T, StoreError>) -> Result<(), StoreError> {
    result.map(|_| ())
}

/// Holds [`add_embedded_facts`] and answers every read as it should.
pub fn assert_reads_answer(store: &dyn SessionFactStore) {
    for (read, outcome) in every_read(store) {
        assert!(outcome.is_ok(), "{read}: {outcome:?}");
    }
    assert_eq!(store.valid_count().unwrap(), 3);
    assert_eq!(store.export_snapshot().unwrap().records.len(), 3);
    assert_eq!(nearest(store, &[1.0, 0.0, 0.0])[0], "a");
}

/// Every read of a store whose database cannot be read returns an error with `code`,
/// never an empty answer.
pub fn assert_every_read_fails(store: &dyn SessionFactStore, code: &str) {
    for (read, outcome) in every_read(store) {
        let error = outcome.expect_err(read);
        assert_eq!(error.code(), code, "{read}: {error}");
    }
}
