//! Long-term memory beside the facts: episodes kept once as their messages, message search
//! (ranked exactly as the in-memory store ranks, neighbours included), aliases, the
//! versioned profile, and commits that apply whole or not at all.

// `MemoryWrite` is `#[non_exhaustive]`: outside this crate, where backends' tests read
// these functions as their own, it is built by assigning fields to a default.
#![allow(clippy::field_reassign_with_default)]

use super::{Fixture, long_term, t};
use crate::{
    AliasChange, Episode, EpisodeStore, InMemoryEpisodeStore, MAX_SEARCH_LIMIT, MemoryWrite,
    MessageQuery, ProfileEntry, StepReport, StoreError, TermWeighting, Transaction,
};
use fact_model::{
    FactId, Message, MessageRole, ProfileField, SessionFact, SourceRole, Tag, Timestamp,
};

/// BM25 with the usual constants, as `fact-retrieve`'s `Bm25` computes it.
#[derive(Debug)]
struct Bm25;

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
        let (df, docs) = (df as f64, docs as f64);
        (1.0 + (docs - df + 0.5) / (df + 0.5)).ln().max(0.0)
    }
    fn tf_weight(&self, tf: u32, len: u32, avg: f64) -> f64 {
        let tf = f64::from(tf);
        let relative = if avg > 0.0 { f64::from(len) / avg } else { 1.0 };
        tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * relative))
    }
}

/// A message of `role` saying `content` at `at`.
fn message(role: MessageRole, content: &str, at: Timestamp) -> Message {
    Message::new(role, content).at(at)
}

/// Two conversations: a move (March) and a pet (April).
fn episodes() -> Vec<Episode> {
    let user = MessageRole::User;
    let assistant = MessageRole::Assistant;
    vec![
        Episode::new(
            "Moving",
            "The user moved to Berlin.",
            vec![
                message(user, "I live in Paris, but not for long.", t(100)),
                message(assistant, "Where are you going?", t(101)),
                message(user, "Berlin! The flat on Torstrasse is ours.", t(102)),
                message(assistant, "Congratulations on the new flat.", t(103)),
            ],
            t(1_000),
        ),
        Episode::new(
            "Pets",
            "",
            vec![
                message(user, "We adopted a puppy named Oscar.", t(200)),
                message(assistant, "What breed is he?", t(201)),
                message(user, "A beagle, and he hates the flat's stairs.", t(202)),
            ],
            t(1_001),
        ),
    ]
}

/// The `(episode title, turn, score)` of each hit of a message search with [`Bm25`].
fn hits(store: &dyn EpisodeStore, query: &MessageQuery<'_>) -> Vec<(String, usize, f64)> {
    store
        .search_messages(query, &Bm25)
        .unwrap()
        .into_iter()
        .map(|hit| (hit.episode_title, hit.turn, hit.score))
        .collect()
}

/// The same search on an in-memory store holding the same episodes.
fn reference(query: &MessageQuery<'_>) -> Vec<(String, usize, f64)> {
    let memory = InMemoryEpisodeStore::default();
    for episode in episodes() {
        memory.put_episode(&episode).unwrap();
    }
    hits(&memory, query)
}

/// Asserts two hit lists name the same turns in the same order, with scores equal to
/// 1e-9.
fn assert_same(got: &[(String, usize, f64)], want: &[(String, usize, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for ((a, x, s), (b, y, r)) in got.iter().zip(want) {
        assert_eq!((a, x), (b, y), "{got:?} vs {want:?}");
        assert!((s - r).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

/// An episode is its messages kept once with their times.
pub fn an_episode_is_its_messages_kept_once_with_their_times(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let [moving, pets] = <[Episode; 2]>::try_from(episodes()).unwrap();
    store.put_episode(&moving).unwrap();
    store.put_episode(&pets).unwrap();
    let got = store.episode(&moving.id).unwrap().unwrap();
    assert_eq!(got, moving);
    assert_eq!(got.started_at(), t(100));
    assert_eq!(got.messages[2].timestamp, Some(t(102)));
    let all: Vec<String> = store
        .episodes()
        .unwrap()
        .into_iter()
        .map(|e| e.title)
        .collect();
    assert_eq!(all, ["Moving", "Pets"]);
    assert_eq!(store.pending_extraction().unwrap().len(), 2);
    store.mark_extracted(&pets.id, t(2_000)).unwrap();
    assert_eq!(store.pending_extraction().unwrap()[0].id, moving.id);
    assert!(matches!(
        store.mark_extracted("ep_0000000000000000", t(1)),
        Err(StoreError::EpisodeNotFound { .. })
    ));
}

/// Every message is searchable, ranked as in memory.
pub fn every_message_is_searchable_and_ranked_as_in_memory(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    for episode in episodes() {
        store.put_episode(&episode).unwrap();
    }
    for text in [
        "flat",
        "puppy Oscar",
        "Berlin Paris",
        "stairs breed",
        "nothing here",
    ] {
        for context in [0, 1, 2] {
            let query = MessageQuery::new(text, 10).with_context(context, 0.3);
            assert_same(&hits(&*store, &query), &reference(&query));
        }
    }
    // The answer that shares no word with the question is found beside it.
    let query = MessageQuery::new("Where are you going?", 3);
    let found = hits(&*store, &query);
    assert_eq!((found[0].0.as_str(), found[0].1), ("Moving", 1));
    assert!(
        found
            .iter()
            .any(|(title, turn, _)| title == "Moving" && *turn == 2)
    );
}

/// Message search honours its limit and `as_of`.
pub fn message_search_honours_its_limit_and_as_of(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    for episode in episodes() {
        store.put_episode(&episode).unwrap();
    }
    let query = MessageQuery::new("flat", 1);
    assert_eq!(hits(&*store, &query).len(), 1);
    // Said by t(150): only March's messages.
    let query = MessageQuery::new("flat puppy", 10).with_as_of(t(150));
    let found = hits(&*store, &query);
    assert!(!found.is_empty());
    assert!(
        found.iter().all(|(title, ..)| title == "Moving"),
        "{found:?}"
    );
    assert_same(&found, &reference(&query));
    let query = MessageQuery::new("flat", usize::MAX);
    assert!(hits(&*store, &query).len() <= MAX_SEARCH_LIMIT);
    assert!(store.search_episodes("Berlin", usize::MAX).unwrap().len() <= MAX_SEARCH_LIMIT);
}

/// A deleted or replaced episode leaves no trace in search.
pub fn a_deleted_or_replaced_episode_leaves_no_trace_in_search(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let [moving, pets] = <[Episode; 2]>::try_from(episodes()).unwrap();
    store.put_episode(&moving).unwrap();
    store.put_episode(&pets).unwrap();
    assert!(store.delete_episode(&pets.id).unwrap());
    assert!(!store.delete_episode(&pets.id).unwrap());
    assert!(hits(&*store, &MessageQuery::new("puppy", 10)).is_empty());
    assert!(store.episode(&pets.id).unwrap().is_none());
    // Replacing an episode reindexes its messages.
    let mut changed = moving.clone();
    changed.messages[2].content = "Munich, in the end.".into();
    store.put_episode(&changed).unwrap();
    assert!(
        hits(
            &*store,
            &MessageQuery::new("Torstrasse", 10).with_context(0, 0.0)
        )
        .is_empty()
    );
    assert_eq!(
        hits(
            &*store,
            &MessageQuery::new("Munich", 10).with_context(0, 0.0)
        )
        .len(),
        1
    );
    assert_eq!(store.episodes().unwrap().len(), 1);
}

/// Aliases are set, listed, replaced and removed, and cycles refused.
pub fn aliases_are_set_listed_replaced_and_removed_and_cycles_refused(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let set = |alias: &str, entity: &str, at| AliasChange::Set {
        alias: alias.into(),
        entity: entity.into(),
        at,
    };
    let mut write = MemoryWrite::default();
    write.aliases = vec![set("mel", "melanie", t(1)), set("mellie", "mel", t(2))];
    assert_eq!(store.commit(write).unwrap().aliases_changed, 2);
    let table: Vec<(String, String)> = store
        .aliases()
        .unwrap()
        .into_iter()
        .map(|a| (a.alias, a.entity))
        .collect();
    assert_eq!(
        table,
        [
            ("mel".to_owned(), "melanie".to_owned()),
            ("mellie".to_owned(), "mel".to_owned())
        ]
    );
    for (alias, entity) in [("melanie", "mellie"), ("melanie", "mel"), ("x", "x")] {
        let mut write = MemoryWrite::default();
        write.aliases = vec![set(alias, entity, t(3))];
        write.profile = vec![ProfileEntry {
            field: ProfileField::Work,
            text: "never written".into(),
            at: t(3),
        }];
        let error = store.commit(write).unwrap_err();
        assert_eq!(error.code(), "alias_cycle", "{alias} -> {entity}");
    }
    assert!(
        store.profile().unwrap().is_empty(),
        "a refused commit writes nothing"
    );
    let mut write = MemoryWrite::default();
    write.aliases = vec![
        AliasChange::Remove {
            alias: "mellie".into(),
        },
        set("mel", "melanie smith", t(4)),
    ];
    store.commit(write).unwrap();
    let aliases = store.aliases().unwrap();
    assert_eq!(aliases.len(), 1);
    assert_eq!(
        (aliases[0].entity.as_str(), aliases[0].at),
        ("melanie smith", t(4))
    );
}

/// The profile keeps every version with its time.
pub fn the_profile_keeps_every_version_with_its_time(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let entry = |field, text: &str, at| ProfileEntry {
        field,
        text: text.into(),
        at,
    };
    let mut write = MemoryWrite::default();
    write.profile = vec![
        entry(ProfileField::Work, "Nurse", t(1)),
        entry(ProfileField::TopOfMind, "Moving house", t(1)),
    ];
    assert_eq!(
        store.commit(write).unwrap().profile_changed,
        [ProfileField::Work, ProfileField::TopOfMind]
    );
    let mut write = MemoryWrite::default();
    write.profile = vec![
        entry(ProfileField::Work, "Nurse", t(2)),
        entry(ProfileField::Work, "Head nurse", t(3)),
    ];
    assert_eq!(
        store.commit(write).unwrap().profile_changed,
        [ProfileField::Work]
    );
    assert_eq!(
        store.profile().unwrap(),
        [
            entry(ProfileField::Work, "Head nurse", t(3)),
            entry(ProfileField::TopOfMind, "Moving house", t(1))
        ]
    );
    let history: Vec<String> = store
        .profile_history()
        .unwrap()
        .into_iter()
        .map(|e| e.text)
        .collect();
    assert_eq!(history, ["Nurse", "Moving house", "Head nurse"]);
}

/// A commit applies facts episode and profile together or not at all.
pub fn a_commit_applies_facts_episode_and_profile_together_or_not_at_all(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let [moving, _] = <[Episode; 2]>::try_from(episodes()).unwrap();
    let fact = SessionFact::builder("user", "lives_in", "Berlin")
        .tag(Tag::Context)
        .source(moving.id.clone(), SourceRole::Extractor)
        .valid_from(t(102))
        .build()
        .unwrap()
        .recorded(t(1_000));
    let mut write = MemoryWrite::default();
    write.facts = Transaction::new().add(vec![fact.clone()]);
    write.episode = Some(moving.clone());
    write.aliases = vec![AliasChange::Set {
        alias: "u".into(),
        entity: "u".into(),
        at: t(1),
    }];
    assert!(store.commit(write.clone()).is_err());
    assert_eq!(store.valid_count().unwrap(), 0);
    assert!(store.episode(&moving.id).unwrap().is_none());
    write.aliases.clear();
    let report = store.commit(write).unwrap();
    assert!(matches!(&report.facts.steps[0], StepReport::Added(a) if a.added == [fact.id()]));
    assert_eq!(store.get(fact.id()).unwrap().unwrap(), fact);
    assert_eq!(store.episode(&moving.id).unwrap().unwrap(), moving);
    assert_eq!(store.fact_ids_from_source(&moving.id).unwrap(), [fact.id()]);
    assert!(store.fact_ids_from_source("ep_none").unwrap().is_empty());
    // Forgetting the episode and its facts is one commit too.
    let mut write = MemoryWrite::default();
    write.delete_episodes = vec![moving.id.clone(), "ep_unknown".into()];
    write.facts = Transaction::new().delete(fact.id());
    let report = store.commit(write).unwrap();
    assert_eq!(report.episodes_deleted, 1);
    assert_eq!(store.stored_count().unwrap(), 0);
    assert!(
        store
            .get(FactId::for_triple("user", "lives_in", "Berlin"))
            .unwrap()
            .is_none()
    );
    assert!(hits(&*store, &MessageQuery::new("Berlin", 10)).is_empty());
}

/// An episode is marked extracted in the commit of its facts.
pub fn an_episode_is_marked_extracted_in_the_commit_of_its_facts(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let [moving, _] = <[Episode; 2]>::try_from(episodes()).unwrap();
    store.put_episode(&moving).unwrap();
    let mut write = MemoryWrite::default();
    write.extracted = Some(
        crate::EpisodeExtracted::new(moving.id.clone(), t(2_000))
            .with_summary(Some("Moved to Berlin.".into())),
    );
    store.commit(write).unwrap();
    let got = store.episode(&moving.id).unwrap().unwrap();
    assert_eq!(got.extracted_at, Some(t(2_000)));
    assert_eq!(
        (got.title.as_str(), got.summary.as_str()),
        ("Moving", "Moved to Berlin.")
    );
    assert_eq!(got.messages, moving.messages);
    assert!(store.pending_extraction().unwrap().is_empty());
    // Marking an episode that is not stored fails the whole commit.
    let mut write = MemoryWrite::default();
    write.extracted = Some(crate::EpisodeExtracted::new("ep_0000000000000000", t(1)));
    write.profile = vec![ProfileEntry {
        field: ProfileField::Personal,
        text: "never written".into(),
        at: t(1),
    }];
    assert!(matches!(
        store.commit(write),
        Err(StoreError::EpisodeNotFound { .. })
    ));
    assert!(store.profile().unwrap().is_empty());
}

/// A subjects newest valid facts and its relations.
pub fn a_subjects_newest_valid_facts_and_its_relations(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let fact = |relation: &str, object: &str, secs| {
        SessionFact::builder("user", relation, object)
            .tag(Tag::Context)
            .source("ep_1", SourceRole::Extractor)
            .valid_from(t(secs))
            .build()
            .unwrap()
    };
    store
        .add(vec![
            fact("lives_in", "Paris", 1),
            fact("speaks", "French", 1),
        ])
        .unwrap();
    store.add(vec![fact("lives_in", "Berlin", 2)]).unwrap();
    store.add(vec![fact("prefers_editor", "vim", 3)]).unwrap();
    store
        .add(vec![
            SessionFact::builder("anna", "lives_in", "Rome")
                .tag(Tag::Context)
                .source("ep_1", SourceRole::Extractor)
                .valid_from(t(4))
                .build()
                .unwrap(),
        ])
        .unwrap();
    let objects = |facts: Vec<SessionFact>| -> Vec<String> {
        facts.into_iter().map(|f| f.object().to_owned()).collect()
    };
    assert_eq!(
        objects(store.valid_about("user", 10).unwrap()),
        ["vim", "Berlin", "French"]
    );
    assert_eq!(
        objects(store.valid_about("user", 2).unwrap()),
        ["vim", "Berlin"]
    );
    assert!(store.valid_about("nobody", 10).unwrap().is_empty());
    assert_eq!(
        store.relations_of("user", 10).unwrap(),
        ["speaks", "lives_in", "prefers_editor"]
    );
    assert_eq!(store.relations_of("user", 1).unwrap(), ["speaks"]);
}

/// A keyed commit applies at most once.
pub fn a_keyed_commit_applies_at_most_once(fixture: &dyn Fixture) {
    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let [moving, _] = <[Episode; 2]>::try_from(episodes()).unwrap();
    let mut write = MemoryWrite::default();
    write.episode = Some(moving.clone());
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Nurse".into(),
        at: t(1),
    }];
    write.facts = Transaction::new().with_key(format!("{}:reply", moving.id));
    assert!(!store.commit(write.clone()).unwrap().facts.replayed);
    // Meanwhile the profile changed; the retry must not set it back.
    let mut change = MemoryWrite::default();
    change.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Head nurse".into(),
        at: t(2),
    }];
    store.commit(change).unwrap();
    let retry = store.commit(write).unwrap();
    assert!(retry.facts.replayed);
    assert!(retry.profile_changed.is_empty());
    assert_eq!(store.profile().unwrap()[0].text, "Head nurse");
    assert_eq!(store.profile_history().unwrap().len(), 2);
}

/// Erasing a scope deletes every part of it (every version of every fact, embeddings,
/// token vectors, episodes with their messages, aliases, profile versions, transaction
/// keys), reports what it deleted, and leaves a store as usable as a new one.
pub fn erasing_leaves_the_scope_empty_and_usable(fixture: &dyn Fixture) {
    use crate::{TermQuery, TokenEncoding, TokenVectors, VectorQuery};

    let Some((store, _)) = long_term(fixture) else {
        return;
    };
    let user = |relation: &str, object: &str, secs: i64| {
        SessionFact::builder("user", relation, object)
            .tag(Tag::Preference)
            .statement(format!("The user {relation} {object}."))
            .source("chat", SourceRole::User)
            .valid_from(t(secs))
            .build()
            .unwrap()
    };
    // Two versions of one key (the first ends), and a second fact.
    let (old, new, other) = (
        user("lives_in", "zanzibar", 1),
        user("lives_in", "quixotic harbour", 2),
        user("prefers", "xylophones", 3),
    );
    store.add(vec![old.clone()]).unwrap();
    store.add(vec![new.clone(), other.clone()]).unwrap();
    let vectors = store
        .vectors()
        .expect("every conforming store keeps vectors");
    let embedded = vectors
        .put_embeddings(
            "m",
            vec![(new.id(), vec![1.0, 0.0]), (other.id(), vec![0.0, 1.0])],
        )
        .unwrap();
    assert_eq!(embedded, 2);
    let tokens = TokenVectors::encode(TokenEncoding::Int8, 2, &[0.5, -0.5, 1.0, 0.25]).unwrap();
    vectors
        .put_token_vectors("m", vec![(other.id(), tokens)])
        .unwrap();
    let mut write = MemoryWrite::default();
    write.episode = Some(episodes().remove(0));
    write.aliases = vec![AliasChange::Set {
        alias: "zed".into(),
        entity: "user".into(),
        at: t(4),
    }];
    write.profile = vec![
        ProfileEntry {
            field: ProfileField::Work,
            text: "Nurse".into(),
            at: t(5),
        },
        ProfileEntry {
            field: ProfileField::Work,
            text: "Head nurse".into(),
            at: t(6),
        },
    ];
    write.facts = Transaction::new().with_key("erase-me");
    store.commit(write.clone()).unwrap();
    let search = |words: &str| {
        store
            .search(&TermQuery::new(words, 10), &Bm25)
            .unwrap()
            .len()
    };
    assert_eq!(search("xylophones"), 1);
    let moving = MessageQuery::new("Berlin flat Torstrasse", 10);
    let found = hits(&*store, &moving);
    assert!(!found.is_empty());

    let report = store.erase().unwrap();
    assert_eq!(
        (report.versions, report.embeddings, report.token_vectors),
        (3, 2, 1),
        "{report:?}"
    );
    assert_eq!(
        (report.episodes, report.messages, report.aliases),
        (1, 4, 1),
        "{report:?}"
    );
    assert_eq!((report.profile_versions, report.keys), (2, 1), "{report:?}");

    // Nothing of it is read back, by any path.
    assert!(store.valid_facts().unwrap().is_empty());
    assert!(store.history("user").unwrap().is_empty());
    for fact in [&old, &new, &other] {
        assert_eq!(store.get(fact.id()).unwrap(), None);
    }
    assert_eq!(
        (store.valid_count().unwrap(), store.stored_count().unwrap()),
        (0, 0)
    );
    assert_eq!(search("xylophones zanzibar quixotic"), 0);
    assert_eq!(vectors.embedded_count("m").unwrap(), 0);
    assert_eq!(vectors.token_vector_stats("m").unwrap().facts, 0);
    let query = VectorQuery::new("m", &[0.0, 1.0], 10);
    assert!(vectors.nearest(&query).unwrap().is_empty());
    assert!(store.episodes().unwrap().is_empty());
    assert!(hits(&*store, &moving).is_empty());
    assert!(store.search_episodes("Berlin", 10).unwrap().is_empty());
    assert!(store.aliases().unwrap().is_empty());
    assert!(store.profile_history().unwrap().is_empty());
    assert!(store.fact_ids_from_source("chat").unwrap().is_empty());
    assert!(
        store.erase().unwrap().is_empty(),
        "a second erase finds nothing"
    );

    // As usable as a new store: the same write applies again (its key is gone), the
    // erased words index anew, and vectors of another dimension are taken.
    let again = store.commit(write).unwrap();
    assert!(!again.facts.replayed);
    assert_eq!(
        again.profile_changed,
        [ProfileField::Work, ProfileField::Work]
    );
    assert_eq!(store.episodes().unwrap().len(), 1);
    assert_same(&hits(&*store, &moving), &found);
    store.add(vec![other.clone()]).unwrap();
    assert_eq!(search("xylophones"), 1);
    assert_eq!(search("zanzibar"), 0);
    vectors
        .put_embeddings("m", vec![(other.id(), vec![0.0, 0.0, 1.0])])
        .unwrap();
    let query = VectorQuery::new("m", &[0.0, 0.0, 1.0], 10);
    assert_eq!(vectors.nearest(&query).unwrap().len(), 1);
}
