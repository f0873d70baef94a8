//! Filtered search against unfiltered search, and the edges at entities (`touching`, what
//! `neighbours` walks), on the in-memory store at 100,000 valid workload facts, each with
//! metadata of three keys: `n` (0 to 99: `metadata.n = 7` holds for 1%), `ok` (`true` for
//! half) and `project` (one of four). Run with `cargo bench -p fact-store --bench filters`.
//!
//! Each sample is one of the workload's 40-word queries, the ten best facts (as
//! `search_40_words` of the `store` bench), with no filter or with one of the three.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/facts.rs"]
mod facts;
#[path = "support/search.rs"]
mod search_support;
#[path = "support/workload.rs"]
mod workload;

use std::sync::{Arc, OnceLock};

use divan::Bencher;
use fact_model::{Filter, ManualClock, MetaValue, Metadata, SessionFact, Timestamp};
use fact_store::{EdgeQuery, InMemorySessionFactStore, SessionFactStore, TermQuery};
use search_support::{Bm25, unbounded};

fn main() {
    divan::main();
}

/// How many valid facts the store holds.
const SIZE: usize = 100_000;

/// The metadata of the `n`-th fact added.
fn metadata(n: usize) -> Metadata {
    let projects = ["rlm", "factmem", "home", "work"];
    let project = projects.get(n % projects.len()).copied().unwrap_or("rlm");
    Metadata::from_pairs([
        ("n", MetaValue::Number((n % 100) as f64)),
        ("ok", MetaValue::Bool(n.is_multiple_of(2))),
        ("project", MetaValue::String(project.into())),
    ])
    .unwrap()
}

/// The store, filled once for every benchmark of this file.
fn store() -> &'static InMemorySessionFactStore {
    static STORE: OnceLock<InMemorySessionFactStore> = OnceLock::new();
    STORE.get_or_init(|| {
        let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
        let workload = workload::generate(SIZE * 3 / 2, 0, 42);
        let mut added = 0;
        for (secs, task) in (1..).zip(workload.tasks.iter()) {
            if store.valid_count().unwrap() >= SIZE {
                break;
            }
            let at = Timestamp::from_unix_secs(secs).unwrap();
            for batch in facts::task_batches(task, at) {
                let batch: Vec<SessionFact> = batch
                    .into_iter()
                    .map(|fact| {
                        added += 1;
                        fact.with_metadata(metadata(added))
                    })
                    .collect();
                store.add(batch).unwrap();
            }
        }
        store
    })
}

fn search(bencher: Bencher<'_, '_>, filter: Option<&str>) {
    let store = store();
    let filter = filter.map(|text| Filter::parse_where(text).unwrap());
    let queries = workload::generate(13, 500, 7).queries;
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().map(|(_, text)| text.as_str()).unwrap_or(""))
        .bench_local_values(|text| {
            let mut query = TermQuery::new(text, 10);
            query.filter = filter.as_ref();
            store.search(&query, &Bm25).unwrap()
        });
}

#[divan::bench(sample_count = 500, sample_size = 1)]
fn search_unfiltered(bencher: Bencher<'_, '_>) {
    search(bencher, None);
}

/// A selective filter: 1% of the facts.
#[divan::bench(sample_count = 500, sample_size = 1)]
fn search_selective_1_percent(bencher: Bencher<'_, '_>) {
    search(bencher, Some("metadata.n = 7"));
}

/// A broad filter: half of the facts.
#[divan::bench(sample_count = 500, sample_size = 1)]
fn search_broad_50_percent(bencher: Bencher<'_, '_>) {
    search(bencher, Some("metadata.ok = true"));
}

/// A metadata equality: a quarter of the facts.
#[divan::bench(sample_count = 500, sample_size = 1)]
fn search_metadata_equality(bencher: Bencher<'_, '_>) {
    search(bencher, Some(r#"metadata.project = "rlm""#));
}

/// The edges at one entity, then at the entities those lead to: `neighbours` at depth 2.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn touching_depth_2(bencher: Bencher<'_, '_>) {
    let store = store();
    let valid = store.valid_facts().unwrap();
    let mut subjects: Vec<String> = valid.iter().map(|f| f.subject().to_owned()).collect();
    subjects.dedup();
    let mut next = subjects.iter().cycle();
    bencher
        .with_inputs(|| next.next().cloned().unwrap_or_default())
        .bench_local_values(|entity| {
            let first = store.touching(&EdgeQuery::new(&[entity.as_str()])).unwrap();
            let others: Vec<&str> = first
                .iter()
                .map(|f| {
                    if f.subject() == entity {
                        f.object()
                    } else {
                        f.subject()
                    }
                })
                .collect();
            store.touching(&EdgeQuery::new(&others)).unwrap().len() + first.len()
        });
}
