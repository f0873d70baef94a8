//! Random memories of every kind of record, for tests across backends: [`changes`], a
//! strategy, [`apply`], which writes one into a store, and [`export_bytes`], a store's
//! export.

use std::time::Duration;

use fact_model::{
    ManualClock, Message, MessageRole, Metadata, ProfileField, SessionFact, SourceRole, Tag,
    Timestamp,
};
use proptest::prelude::*;

use crate::{
    AliasChange, Episode, ExportHeader, ExportOptions, ExportWriter, LongTermStore, MemoryWrite,
    ProfileEntry,
};

/// Subjects of the random memories.
const SUBJECTS: [&str; 3] = ["user", "melanie", "caroline"];
/// Relations of the random memories.
const RELATIONS: [&str; 3] = ["prefers", "lives_in", "works_on"];
/// Objects of the random memories: texts that need escapes, and others that do not.
pub const OBJECTS: [&str; 5] = [
    "pytest",
    "unittest",
    "a \"quoted\"\nline\tand \\ slash",
    "Zürich 東京 🚲",
    "<script>alert(1)</script>",
];

/// One change of a random memory, made at the clock's time, which moves a second
/// forward before each change.
#[derive(Debug, Clone)]
pub enum Change {
    /// One batch of facts: `(subject, relation, object, with metadata)` indexes.
    Add(Vec<(usize, usize, usize, bool)>),
    /// Invalidates the valid facts of a subject and relation.
    Invalidate(usize, usize),
    /// Archives an episode of this many messages.
    Episode(usize),
    /// Sets an alias of one subject to another.
    Alias(usize, usize),
    /// Writes a profile field's text (an object's).
    Profile(usize, usize),
}

/// A random memory: up to a dozen changes of every kind.
pub fn changes() -> impl Strategy<Value = Vec<Change>> {
    let index = |n: usize| 0..n;
    let change = prop_oneof![
        4 => proptest::collection::vec(
            (index(3), index(3), index(5), any::<bool>()),
            1..4
        )
        .prop_map(Change::Add),
        1 => (index(3), index(3)).prop_map(|(s, r)| Change::Invalidate(s, r)),
        1 => (1usize..4).prop_map(Change::Episode),
        1 => (index(3), index(3)).prop_map(|(a, e)| Change::Alias(a, e)),
        1 => (index(ProfileField::ALL.len()), index(5)).prop_map(|(f, o)| Change::Profile(f, o)),
    ];
    proptest::collection::vec(change, 0..12)
}

/// Writes `changes` into `store`, moving `clock` a second before each.
///
/// # Panics
///
/// When the store fails (an alias the rules refuse is skipped, as a user's would be).
pub fn apply(changes: &[Change], store: &dyn LongTermStore, clock: &ManualClock) {
    let pick = |list: &[&'static str], n: usize| list.get(n).copied().unwrap_or("x");
    for (step, change) in changes.iter().enumerate() {
        clock.advance(Duration::from_secs(1));
        let now = clock_now(clock);
        match change {
            Change::Add(batch) => {
                let facts = batch
                    .iter()
                    .map(|&(s, r, o, meta)| {
                        let mut fact = SessionFact::builder(
                            pick(&SUBJECTS, s),
                            pick(&RELATIONS, r),
                            pick(&OBJECTS, o),
                        )
                        .tag(Tag::Preference)
                        .source(format!("ep_{step}"), SourceRole::Extractor)
                        .valid_from(now)
                        .confidence(0.1 + 0.2)
                        .recorded_at(now);
                        if meta {
                            fact = fact.metadata(
                                Metadata::from_assignments(["project=rlm", "n=3"]).unwrap(),
                            );
                        }
                        fact.build().unwrap()
                    })
                    .collect();
                store.add(facts).unwrap();
            }
            Change::Invalidate(s, r) => {
                store
                    .invalidate(pick(&SUBJECTS, *s), pick(&RELATIONS, *r))
                    .unwrap();
            }
            Change::Episode(messages) => {
                let messages = (0..*messages)
                    .map(|turn| {
                        let role = if turn % 2 == 0 {
                            MessageRole::User
                        } else {
                            MessageRole::Assistant
                        };
                        Message::new(role, pick(&OBJECTS, (step + turn) % OBJECTS.len())).at(now)
                    })
                    .collect();
                let mut write = MemoryWrite::default();
                let mut episode = Episode::new(format!("chat {step}"), "a chat", messages, now);
                episode.tags = vec!["chat".into()];
                write.episode = Some(episode);
                store.commit(write).unwrap();
            }
            Change::Alias(a, e) => {
                let mut write = MemoryWrite::default();
                write.aliases.push(AliasChange::Set {
                    alias: format!("{}-{step}", pick(&SUBJECTS, *a)),
                    entity: pick(&SUBJECTS, *e).to_owned(),
                    at: now,
                });
                store.commit(write).unwrap();
            }
            Change::Profile(field, text) => {
                let mut write = MemoryWrite::default();
                write.profile.push(ProfileEntry {
                    field: ProfileField::ALL
                        .get(*field)
                        .copied()
                        .unwrap_or(ProfileField::Work),
                    text: pick(&OBJECTS, *text).to_owned(),
                    at: now,
                });
                store.commit(write).unwrap();
            }
        }
    }
}

fn clock_now(clock: &ManualClock) -> Timestamp {
    fact_model::Clock::now(clock)
}

/// The export of `store` with `options`, its header naming the scope `test`.
///
/// # Panics
///
/// When the store fails to export.
pub fn export_bytes(store: &dyn LongTermStore, options: &ExportOptions) -> Vec<u8> {
    let header = ExportHeader::new("test", options.as_of);
    let mut writer = ExportWriter::new(Vec::new(), &header).unwrap();
    store
        .export_to(options, &mut |record| writer.write_record(&record))
        .unwrap();
    writer.finish().unwrap().0
}
