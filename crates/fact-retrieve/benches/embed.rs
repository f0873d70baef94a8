//! `OnnxEmbedder` benchmarks on the real model (all-MiniLM-L6-v2, int8) from
//! `FACTMEM_MODEL_DIR`, with the default options (up to 4 threads): `query` embeds one short
//! question (the latency a hybrid retrieval adds), `ingest` embeds 256 conversational
//! sentences in batches of 32 (throughput, reported as facts/s).
//! Run with `eval "$(.ci/models)"` and then
//! `cargo bench -p fact-retrieve --features onnx --bench embed`; without `FACTMEM_MODEL_DIR`
//! it prints a note and runs nothing.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::indexing_slicing)]

use std::sync::OnceLock;

use divan::{Bencher, counter::ItemsCount};
use fact_retrieve::{Embedder, OnnxEmbedder, OnnxOptions};

/// Sentences in the `ingest` benchmark.
const FACTS: usize = 256;

fn main() {
    if std::env::var_os("FACTMEM_MODEL_DIR").is_none_or(|dir| dir.is_empty()) {
        println!(
            "FACTMEM_MODEL_DIR is not set: the embedding benchmarks need the model; \
             run `eval \"$(.ci/models)\"` first"
        );
        return;
    }
    divan::main();
}

/// The embedder, opened once (default options: up to 4 threads, batches of 32).
fn embedder() -> &'static OnnxEmbedder {
    static EMBEDDER: OnceLock<OnnxEmbedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| {
        let dir = std::env::var_os("FACTMEM_MODEL_DIR").unwrap();
        OnnxEmbedder::open_with(dir, OnnxOptions::default().with_batch_size(32)).unwrap()
    })
}

/// Short questions of the kind a conversational memory is asked.
const QUESTIONS: [&str; 8] = [
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "What is Caroline's identity?",
    "Where did Melanie go camping with her kids?",
    "What instrument does Melanie play?",
    "When did Caroline go to the LGBTQ support group?",
    "What books has Melanie read?",
    "Which city did Caroline move from?",
];

/// `FACTS` conversational sentences of varied length and content.
fn sentences() -> Vec<String> {
    let people = ["Caroline", "Melanie", "Jon", "Gina", "Nate", "Joanna"];
    let acts = [
        "went to an LGBTQ support group meeting and felt accepted",
        "painted a sunrise over the lake with her kids last weekend",
        "is researching adoption agencies that welcome single parents",
        "signed up for a pottery class that starts in the spring",
        "took the family camping in the mountains and saw the Perseids",
        "opened a dance studio after losing the job at the bank",
        "adopted a second turtle and named it after a tournament win",
        "read a book about finding courage and recommended it to a friend",
    ];
    let when = [
        "yesterday",
        "on 7 May 2023",
        "two weeks ago",
        "after the charity race",
    ];
    (0..FACTS)
        .map(|i| {
            format!(
                "{} {} {}.",
                people[i % people.len()],
                acts[(i / people.len()) % acts.len()],
                when[i % when.len()]
            )
        })
        .collect()
}

#[divan::bench(sample_count = 200)]
fn query(bencher: Bencher<'_, '_>) {
    let embedder = embedder();
    let mut next = QUESTIONS.iter().cycle();
    bencher
        .with_inputs(|| *next.next().unwrap())
        .bench_local_values(|question| embedder.embed(&[question]).unwrap());
}

#[divan::bench(sample_count = 10)]
fn ingest(bencher: Bencher<'_, '_>) {
    let embedder = embedder();
    let sentences = sentences();
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    bencher.counter(ItemsCount::new(FACTS)).bench_local(|| {
        let mut vectors = 0;
        for batch in refs.chunks(32) {
            vectors += embedder.embed(batch).unwrap().len();
        }
        vectors
    });
}
