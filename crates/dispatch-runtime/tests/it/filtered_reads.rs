//! Filters through the memory service, on every backend (in memory, SQLite, and PostgreSQL
//! when `FACTMEM_PG_URL` is set; under `CI=true` it must be): `list`, `search`, `recall`
//! (its facts) and `history` with a random filter, now or at a random instant, give what
//! brute force over the unfiltered list gives (issue 35). The stores' own reads are held
//! to brute force by `fact_store::conformance::filters`; this holds the service's reads,
//! which compose them (recall's ranking and order, history's filter per version).

use std::sync::Arc;

use super::maintenance::{Backend, backends, long_term_store};
use dispatch_runtime::{MemoryService, ReadOptions};
use fact_model::{
    Filter, ManualClock, MetaValue, Metadata, SessionFact, SourceRole, Tag, Timestamp,
};
use fact_retrieve::Bm25;
use fact_store::backend::scan_scores;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tempfile::TempDir;

const SUBJECTS: &[&str] = &["user", "project:rlm", "berlin"];
const RELATIONS: &[&str] = &["likes", "uses", "lives_in"];
const OBJECTS: &[&str] = &["tea", "rust parsers", "green tea", "lisbon", "user"];
const PROJECTS: &[&str] = &["rlm", "factmem"];
const QUERIES: &[&str] = &["tea", "rust user", "lisbon parsers tea"];
/// Filters of every field the service passes through, readable form.
const FILTERS: &[&str] = &[
    r#"metadata.project = "rlm""#,
    "metadata.n >= 2",
    "metadata.n exists",
    "not metadata.project exists",
    "category in (preference, decision)",
    "confidence > 0.5",
    r#"object contains "tea""#,
    "subject = user or relation = uses",
    r#"source = "ep:2" and metadata.n < 3"#,
    "valid_from >= 2026-01-01T00:00:05Z",
    "valid_to exists",
];

/// A generated fact: indexes into the lists above, a tag, confidence, a second of
/// `valid_from` and an optional `(project, n)`.
type Generated = (usize, usize, usize, bool, bool, i64, Option<(usize, u8)>);

fn generated() -> impl Strategy<Value = Generated> {
    (
        0..SUBJECTS.len(),
        0..RELATIONS.len(),
        0..OBJECTS.len(),
        any::<bool>(),
        any::<bool>(),
        0i64..12,
        proptest::option::of((0..PROJECTS.len(), 0u8..5)),
    )
}

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_767_225_600 + secs).unwrap()
}

fn fact(g: &Generated, batch: usize) -> SessionFact {
    let (s, r, o, preference, confident, secs, meta) = *g;
    let object = OBJECTS[o];
    let mut builder = SessionFact::builder(SUBJECTS[s], RELATIONS[r], object)
        .tag(if preference {
            Tag::Preference
        } else {
            Tag::Knowledge
        })
        .confidence(if confident { 0.9 } else { 0.4 })
        .statement(format!(
            "{} {} {object}, said in batch {batch}",
            SUBJECTS[s], RELATIONS[r]
        ))
        .source(
            if batch.is_multiple_of(2) {
                "ep:1"
            } else {
                "ep:2"
            },
            SourceRole::User,
        )
        .valid_from(t(secs));
    if let Some((project, n)) = meta {
        builder = builder.metadata(
            Metadata::from_pairs([
                ("project", MetaValue::String(PROJECTS[project].into())),
                ("n", MetaValue::Number(f64::from(n))),
            ])
            .unwrap(),
        );
    }
    builder.build().unwrap()
}

fn memory(backend: Backend, dir: &TempDir, case: usize) -> MemoryService {
    let clock = Arc::new(ManualClock::new(t(100)));
    let store = long_term_store(
        backend,
        dir.path(),
        &format!("memory-{case}"),
        clock.clone(),
    );
    MemoryService::new(store, clock)
}

/// The best `limit` of `valid` for `text` as a search ranks them (BM25 over every valid
/// fact, only those `filter` holds for ranked; score, then newer, then smaller id).
fn brute_search(
    memory: &MemoryService,
    valid: &[SessionFact],
    text: &str,
    filter: &Filter,
    limit: usize,
) -> Vec<SessionFact> {
    let mut scored: Vec<(&SessionFact, f64)> = scan_scores(
        memory.store().analyzer(),
        valid.iter(),
        text,
        &Bm25::default(),
    )
    .into_iter()
    .filter(|(fact, score)| *score > 0.0 && filter.matches(*fact))
    .collect();
    scored.sort_by(|(a, x), (b, y)| {
        y.total_cmp(x)
            .then(b.valid_from().cmp(&a.valid_from()))
            .then(a.id().cmp(&b.id()))
    });
    scored.truncate(limit);
    // Recall orders what the search found by score, then newer, then more confident.
    scored.sort_by(|(a, x), (b, y)| {
        y.total_cmp(x)
            .then(b.valid_from().cmp(&a.valid_from()))
            .then(b.confidence().total_cmp(&a.confidence()))
    });
    scored.into_iter().map(|(fact, _)| fact.clone()).collect()
}

#[test]
fn filtered_service_reads_match_brute_force_on_every_backend() {
    let case = (
        proptest::collection::vec(proptest::collection::vec(generated(), 1..8), 1..4),
        proptest::collection::vec(0..FILTERS.len(), 1..4),
        proptest::option::of(0i64..14),
        1usize..6,
    );
    for backend in backends() {
        let dir = TempDir::new().unwrap();
        let mut runner = TestRunner::new(Config {
            cases: 16,
            failure_persistence: None,
            ..Config::default()
        });
        let number = std::sync::atomic::AtomicUsize::new(0);
        let outcome = runner.run(&case, |(batches, filters, instant, limit)| {
            let case = number.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let memory = memory(backend, &dir, case);
            for (at, batch) in batches.iter().enumerate() {
                let facts: Vec<SessionFact> = batch.iter().map(|g| fact(g, at)).collect();
                memory.store().add(facts).unwrap();
            }
            let as_of = instant.map(t);
            let valid = match as_of {
                Some(at) => memory.store().valid_at(at).unwrap(),
                None => memory.store().valid_facts().unwrap(),
            };
            for &which in &filters {
                let filter = Filter::parse_where(FILTERS[which]).unwrap();
                let read = ReadOptions::as_of(as_of).with_filter(Some(filter.clone()));
                let want: Vec<SessionFact> = valid
                    .iter()
                    .filter(|f| filter.matches(*f))
                    .cloned()
                    .collect();
                prop_assert_eq!(memory.list(&read).unwrap(), want, "list {}", FILTERS[which]);
                for text in QUERIES {
                    let want = brute_search(&memory, &valid, text, &filter, limit);
                    let mut found: Vec<SessionFact> = memory
                        .search(text, limit, &read)
                        .unwrap()
                        .into_iter()
                        .map(|s| s.fact)
                        .collect();
                    // The search's own order breaks ties by id, recall's by confidence.
                    let recalled: Vec<SessionFact> = memory
                        .recall(text, limit, 1_000_000, &read)
                        .unwrap()
                        .facts
                        .into_iter()
                        .map(|s| s.fact)
                        .collect();
                    prop_assert_eq!(&recalled, &want, "recall {:?} {}", text, FILTERS[which]);
                    let key = |f: &SessionFact| (f.id(), f.valid_from());
                    found.sort_by_key(key);
                    let mut want = want;
                    want.sort_by_key(key);
                    prop_assert_eq!(found, want, "search {:?} {}", text, FILTERS[which]);
                }
                for subject in SUBJECTS {
                    let mut want: Vec<SessionFact> = memory
                        .store()
                        .history(subject)
                        .unwrap()
                        .into_iter()
                        .filter(|v| as_of.is_none_or(|at| v.valid_from() <= at))
                        .filter(|v| filter.matches(v))
                        .collect();
                    want.sort_by_key(SessionFact::valid_from);
                    prop_assert_eq!(
                        memory.history(subject, &read).unwrap(),
                        want,
                        "history {} {}",
                        subject,
                        FILTERS[which]
                    );
                }
            }
            Ok(())
        });
        if let Err(failure) = outcome {
            panic!("{backend:?}: {failure}");
        }
    }
}
