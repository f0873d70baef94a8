//! `cargo xtask eval locomo --data PATH`: the LoCoMo fact-retrieval evaluation.
//!
//! Implements the protocol of `../shared/eval/README.md` exactly, and prints one JSON line
//! with the keys of `../shared/eval/fts5_baseline.py`, so the two compare side by side:
//!
//! - each of the ten samples is indexed on its own, in a fresh store: the in-memory store,
//!   or with `--store sqlite` the SQLite store in a temporary file (its search answered by
//!   the store's search cache, or the database's FTS5 index: see below), or with
//!   `--store postgres` the PostgreSQL store on the
//!   server `FACTMEM_PG_URL` names, in a fresh scope per sample and run;
//! - on SQLite and PostgreSQL, search is answered by the store's search cache (the scope's
//!   term index in this process, the stores' default) unless `--search-cache off`, which
//!   opens the stores without it so every query goes through the database's own index
//!   (SQLite FTS5, PostgreSQL's GIN index); the report's `system` names the path
//!   (`factmem-sqlite-fts5-…`, `factmem-postgres-gin-…`);
//! - corpus `observations`: every `[text, dia_id]` of `observation.session_N_observation
//!   .<speaker>` is one fact; corpus `turns`: every `{speaker, dia_id, text}` of
//!   `conversation.session_N` is one fact; subject = the speaker, object = the text (texts
//!   over the 200-character object limit are clipped there and kept whole as the
//!   statement, which is indexed too), evidence = its dia_id(s);
//! - questions: every `qa` entry whose category is not 5 and whose evidence is not empty;
//!   the query is the question text alone;
//! - recall@k = |evidence ∩ dia_ids of the top k facts| / |evidence|, averaged, for k in
//!   1, 5, 10, 20; latency is measured around the ranking call alone (store already
//!   built), reported as p50 and p95 in microseconds.
//!
//! The evaluation always runs an optimized build: a debug `cargo xtask` re-runs itself with
//! `--release`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fact_model::{FactId, SessionFact, SystemClock};
use fact_retrieve::{
    Bm25, DEFAULT_CANDIDATES, DEFAULT_VECTOR_WEIGHT, Embedder, FactQuery, Fusion, HybridRetriever,
    IndexRetriever, KeywordOverlap, OnnxEmbedder,
};
use fact_store::{
    AnalyzerConfig, InMemorySessionFactStore, SessionFactStore, SkipReason, StoreConfig,
    TermWeighting,
};
use fact_store_postgres::{PgFactStore, PgOptions};
use fact_store_sqlite::{SqliteFactStore, SqliteOptions};
use serde_json::Value;

use crate::cargo;
use crate::error::Error;
use crate::locomo::{KS, MAX_K, Ranker, fact, fresh_scope};

/// The environment variable that names the PostgreSQL server of `--store postgres`.
const PG_URL_ENV: &str = "FACTMEM_PG_URL";

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    data: String,
    corpus: Corpus,
    scorer: Scorer,
    stemming: bool,
    store: Store,
    /// `--search-cache on|off`: whether the SQLite and PostgreSQL stores answer search from
    /// their in-process term index (on, the default) or through the database's index.
    search_cache: bool,
    retriever: Retriever,
    /// The samples evaluated, by index, inclusive (`--samples 0-4`); all when `None`.
    samples: Option<(usize, usize)>,
    /// `--memory`: the sessions archived as episodes and the questions asked through
    /// `recall` (`eval_memory.rs`).
    memory: bool,
    /// `--context K --context-weight W` of `--memory`.
    context: Option<(usize, f64)>,
    /// `--facts`, `--expand 1` and `--recency-half-life D` of `--memory`.
    memory_facts: crate::eval_memory::FactOptions,
    /// `--frontier`: every retriever and neighbour context on both corpora, beside the
    /// FTS5 peer (`eval_frontier.rs`); needs `--model`.
    frontier: Option<PathBuf>,
    /// What `--frontier` measures (`--corpus`, `--contexts`, `--late-weights`,
    /// `--late-candidates`).
    frontier_grid: crate::eval_frontier::Grid,
}

/// How facts are ranked.
#[derive(Debug, Clone, PartialEq)]
enum Retriever {
    /// The store's BM25 search alone (`IndexRetriever`).
    Lexical,
    /// BM25 and the embeddings of the model in this directory, fused (`HybridRetriever`).
    Hybrid {
        model: PathBuf,
        fusion: Fusion,
        min_similarity: f64,
        candidates: usize,
    },
}

/// Which store backend indexes and ranks the facts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Store {
    Memory,
    Sqlite,
    /// The server at this URL (from [`PG_URL_ENV`]).
    Postgres(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corpus {
    Observations,
    Turns,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scorer {
    Bm25,
    Overlap,
}

fn parse(args: &[String]) -> Result<Options, Error> {
    let usage = |message: String| Error::Usage(message);
    let mut args = args.iter();
    match args.next().map(String::as_str) {
        Some("locomo") => {}
        Some(other) => {
            return Err(usage(format!(
                "unknown evaluation `{other}`; use `locomo` or `tokens`"
            )));
        }
        None => {
            return Err(usage(
                "`eval` needs an evaluation name: `eval locomo --data PATH` or `eval tokens --corpus DIR`".into(),
            ));
        }
    }
    let mut options = Options {
        data: String::new(),
        corpus: Corpus::Observations,
        scorer: Scorer::Bm25,
        stemming: true,
        store: Store::Memory,
        search_cache: true,
        retriever: Retriever::Lexical,
        samples: None,
        memory: false,
        context: None,
        memory_facts: crate::eval_memory::FactOptions::default(),
        frontier: None,
        frontier_grid: crate::eval_frontier::Grid::default(),
    };
    let mut frontier = false;
    let mut corpus_given = false;
    let mut hybrid = false;
    let mut context: Option<usize> = None;
    let mut context_weight: Option<f64> = None;
    let mut model = None;
    let mut fusion = None;
    let mut vector_weight = DEFAULT_VECTOR_WEIGHT;
    let mut rrf_k = 60.0;
    let mut min_similarity = 0.0;
    let mut candidates = DEFAULT_CANDIDATES;
    let number = |flag: &str, text: String| {
        text.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| usage(format!("`{flag}` needs a number, not `{text}`")))
    };
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| usage(format!("`{flag}` needs a value")))
        };
        match flag.as_str() {
            "--data" => options.data = value()?,
            "--memory" => options.memory = true,
            "--facts" => options.memory_facts.facts = true,
            "--expand" => {
                let text = value()?;
                options.memory_facts.expand = match text.as_str() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(usage(format!("`--expand` is 0 or 1, not `{text}`"))),
                };
            }
            "--recency-half-life" => {
                let text = value()?;
                let half_life = fact_model::parse_duration(&text)
                    .map_err(|e| usage(format!("`--recency-half-life`: {e}")))?;
                options.memory_facts.recency_half_life = Some(half_life);
            }
            "--frontier" => frontier = true,
            "--contexts" => {
                options.frontier_grid.contexts = list(flag, &value()?)?;
            }
            "--late-weights" => {
                options.frontier_grid.weights = list(flag, &value()?)?;
            }
            "--late-candidates" => {
                let text = value()?;
                options.frontier_grid.late_candidates = text.parse().map_err(|_| {
                    usage(format!(
                        "`--late-candidates` needs a whole number, not `{text}`"
                    ))
                })?;
            }
            "--context" => {
                let text = value()?;
                context = Some(text.parse().map_err(|_| {
                    usage(format!("`--context` needs a whole number, not `{text}`"))
                })?);
            }
            "--context-weight" => context_weight = Some(number(flag, value()?)?),
            "--corpus" => {
                corpus_given = true;
                options.corpus = match value()?.as_str() {
                    "observations" => Corpus::Observations,
                    "turns" => Corpus::Turns,
                    other => {
                        return Err(usage(format!(
                            "unknown corpus `{other}`; use observations or turns"
                        )));
                    }
                }
            }
            "--scorer" => {
                options.scorer = match value()?.as_str() {
                    "bm25" => Scorer::Bm25,
                    "overlap" => Scorer::Overlap,
                    other => {
                        return Err(usage(format!(
                            "unknown scorer `{other}`; use bm25 or overlap"
                        )));
                    }
                }
            }
            "--store" => {
                options.store = match value()?.as_str() {
                    "memory" => Store::Memory,
                    "sqlite" => Store::Sqlite,
                    "postgres" => Store::Postgres(pg_url(|name| std::env::var(name).ok())?),
                    other => {
                        return Err(usage(format!(
                            "unknown store `{other}`; use memory, sqlite or postgres"
                        )));
                    }
                }
            }
            "--search-cache" => {
                options.search_cache = match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => {
                        return Err(usage(format!(
                            "`--search-cache` is on or off, not `{other}`"
                        )));
                    }
                }
            }
            "--stemming" => {
                options.stemming = match value()?.as_str() {
                    "on" => true,
                    "off" => false,
                    other => {
                        return Err(usage(format!("`--stemming` is on or off, not `{other}`")));
                    }
                }
            }
            "--retriever" => {
                hybrid = match value()?.as_str() {
                    "lexical" => false,
                    "hybrid" => true,
                    other => {
                        return Err(usage(format!(
                            "unknown retriever `{other}`; use lexical or hybrid"
                        )));
                    }
                }
            }
            "--model" => model = Some(PathBuf::from(value()?)),
            "--fusion" => {
                fusion = Some(match value()?.as_str() {
                    "weighted" => "weighted",
                    "rrf" => "rrf",
                    other => {
                        return Err(usage(format!(
                            "unknown fusion `{other}`; use weighted or rrf"
                        )));
                    }
                })
            }
            "--vector-weight" => vector_weight = number(flag, value()?)?,
            "--rrf-k" => rrf_k = number(flag, value()?)?,
            "--min-similarity" => min_similarity = number(flag, value()?)?,
            "--candidates" => {
                let text = value()?;
                candidates = text.parse().map_err(|_| {
                    usage(format!("`--candidates` needs a whole number, not `{text}`"))
                })?;
            }
            "--samples" => {
                let text = value()?;
                let range = text
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)));
                options.samples = match range {
                    Some((first, last)) if first <= last => Some((first, last)),
                    _ => {
                        return Err(usage(format!(
                            "`--samples` is a range like 0-4, not `{text}`"
                        )));
                    }
                };
            }
            other => return Err(usage(format!("unknown flag `{other}`"))),
        }
    }
    if !options.search_cache && options.store == Store::Memory {
        return Err(usage(
            "`--search-cache off` goes with `--store sqlite` or `--store postgres`: \
             the in-memory store has no database index to search"
                .into(),
        ));
    }
    let facts_options = &options.memory_facts;
    if !options.memory
        && (facts_options.facts
            || facts_options.expand
            || facts_options.recency_half_life.is_some())
    {
        return Err(usage(
            "`--facts`, `--expand` and `--recency-half-life` go with `--memory`".into(),
        ));
    }
    if (facts_options.expand || facts_options.recency_half_life.is_some()) && !facts_options.facts {
        return Err(usage(
            "`--expand` and `--recency-half-life` rank facts: add `--facts`".into(),
        ));
    }
    if context.is_some() || context_weight.is_some() {
        if !options.memory {
            return Err(usage(
                "`--context` and `--context-weight` go with `--memory`".into(),
            ));
        }
        options.context = Some((
            context.unwrap_or(fact_store::DEFAULT_MESSAGE_CONTEXT),
            context_weight.unwrap_or(fact_store::DEFAULT_CONTEXT_WEIGHT),
        ));
    }
    if frontier {
        let Some(model) = model else {
            return Err(usage(
                "`--frontier` needs `--model DIR` (a model directory: `.ci/models` makes one)"
                    .into(),
            ));
        };
        if options.data.is_empty() {
            return Err(usage(
                "`eval locomo` needs `--data PATH` (e.g. ../shared/eval/locomo10.json)".into(),
            ));
        }
        if corpus_given {
            options.frontier_grid.corpora = vec![options.corpus == Corpus::Turns];
        }
        options.frontier = Some(model);
        return Ok(options);
    }
    if options.memory {
        // The memory's own recall: facts by meaning too when a model is given.
        if let Some(model) = model {
            options.retriever = Retriever::Hybrid {
                model,
                fusion: Fusion::default(),
                min_similarity: 0.0,
                candidates: DEFAULT_CANDIDATES,
            };
        }
        if options.data.is_empty() {
            return Err(usage(
                "`eval locomo` needs `--data PATH` (e.g. ../shared/eval/locomo10.json)".into(),
            ));
        }
        return Ok(options);
    }
    if hybrid {
        let Some(model) = model else {
            return Err(usage(
                "`--retriever hybrid` needs `--model DIR` (a model directory: `.ci/models` makes one)"
                    .into(),
            ));
        };
        let fusion = match fusion {
            Some("rrf") => Fusion::Rrf { k: rrf_k },
            _ => Fusion::Weighted { vector_weight },
        };
        options.retriever = Retriever::Hybrid {
            model,
            fusion,
            min_similarity,
            candidates,
        };
    } else if model.is_some() || fusion.is_some() {
        return Err(usage(
            "`--model` and `--fusion` go with `--retriever hybrid`".into(),
        ));
    }
    if options.data.is_empty() {
        return Err(usage(
            "`eval locomo` needs `--data PATH` (e.g. ../shared/eval/locomo10.json)".into(),
        ));
    }
    Ok(options)
}

/// A comma-separated list of `flag`'s values (`0,1,2`).
fn list<T: std::str::FromStr>(flag: &str, text: &str) -> Result<Vec<T>, Error> {
    text.split(',')
        .map(|item| item.trim().parse::<T>())
        .collect::<Result<Vec<T>, _>>()
        .ok()
        .filter(|items| !items.is_empty())
        .ok_or_else(|| Error::Usage(format!("`{flag}` needs a list like 0,1,2, not `{text}`")))
}

/// How the report's `system` names the path of a search: nothing for the in-process index
/// (the in-memory store, or a database store's search cache), else the database's index
/// (`fts5-` for SQLite, `gin-` for PostgreSQL), which `--search-cache off` searches.
fn search_path(store: &Store, search_cache: bool) -> &'static str {
    match store {
        Store::Sqlite if !search_cache => "fts5-",
        Store::Postgres(_) if !search_cache => "gin-",
        Store::Memory | Store::Sqlite | Store::Postgres(_) => "",
    }
}

/// The URL of `--store postgres`: [`PG_URL_ENV`] from `env`, or a usage error that says
/// how to get a server.
fn pg_url(env: impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    env(PG_URL_ENV)
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            Error::Usage(format!(
                "`--store postgres` needs a server: set {PG_URL_ENV} \
             (`eval \"$(.ci/pg-server start)\"` starts a throwaway one and sets it)"
            ))
        })
}

/// Entry point of `cargo xtask eval`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    if let Some((first, rest)) = args.split_first()
        && first == "tokens"
    {
        return crate::tokens::run(rest);
    }
    let options = parse(args)?;
    if let Some(outcome) = cargo::rerun_in_release("eval", args) {
        return outcome;
    }
    let text = std::fs::read_to_string(&options.data)
        .map_err(|e| Error::Failed(format!("cannot read {}: {e}", options.data)))?;
    let data: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Failed(format!("{} is not JSON: {e}", options.data)))?;
    let samples = data
        .as_array()
        .ok_or_else(|| Error::Failed(format!("{} is not a JSON array of samples", options.data)))?;
    if let Some(model) = &options.frontier {
        return crate::eval_frontier::run(
            samples,
            std::path::Path::new(&options.data),
            model,
            &options.frontier_grid,
        );
    }
    let report = if options.memory {
        let backend = match &options.store {
            Store::Memory => crate::eval_memory::Backend::Memory,
            Store::Sqlite => crate::eval_memory::Backend::Sqlite,
            Store::Postgres(url) => crate::eval_memory::Backend::Postgres(url.clone()),
        };
        let model = match &options.retriever {
            Retriever::Hybrid { model, .. } => Some(model.clone()),
            Retriever::Lexical => None,
        };
        crate::eval_memory::evaluate(
            samples,
            &crate::eval_memory::MemoryOptions {
                backend,
                samples: options.samples,
                model,
                context: options.context,
                search_cache: options.search_cache,
                facts: options.memory_facts.clone(),
            },
        )?
    } else {
        evaluate(samples, &options)?
    };
    let mut stdout = std::io::stdout().lock();
    std::io::Write::write_all(&mut stdout, format!("{report}\n").as_bytes())
        .map_err(|e| Error::Failed(format!("cannot write the result: {e}")))
}

/// One fact of a sample: speaker, text, evidence ids.
type Item = (String, String, Vec<String>);

fn items(sample: &Value, corpus: Corpus) -> Vec<Item> {
    let mut out = Vec::new();
    let strings = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(list) => list
                .iter()
                .filter_map(|d| d.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    match corpus {
        Corpus::Observations => {
            for by_speaker in sample["observation"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
            {
                for (speaker, entries) in by_speaker.as_object().into_iter().flatten() {
                    for entry in entries.as_array().into_iter().flatten() {
                        if let (Some(text), Some(dia)) =
                            (entry.get(0).and_then(Value::as_str), entry.get(1))
                        {
                            out.push((speaker.clone(), text.to_owned(), strings(dia)));
                        }
                    }
                }
            }
        }
        Corpus::Turns => {
            for (key, turns) in sample["conversation"].as_object().into_iter().flatten() {
                if !key.starts_with("session_") {
                    continue;
                }
                for turn in turns.as_array().into_iter().flatten() {
                    let speaker = turn["speaker"].as_str().unwrap_or_default();
                    let text = turn.get("text").and_then(Value::as_str).unwrap_or_default();
                    out.push((
                        speaker.to_owned(),
                        text.to_owned(),
                        strings(&turn["dia_id"]),
                    ));
                }
            }
        }
    }
    out
}

fn evaluate(samples: &[Value], options: &Options) -> Result<Value, Error> {
    let mut recall = [0.0f64; KS.len()];
    let mut latencies_us: Vec<f64> = Vec::new();
    let mut questions = 0usize;
    let mut facts_indexed = 0usize;
    // The model is loaded once; every sample embeds its facts with it.
    let embedder: Option<Arc<dyn Embedder>> = match &options.retriever {
        Retriever::Lexical => None,
        Retriever::Hybrid { model, .. } => Some(Arc::new(
            OnnxEmbedder::open(model).map_err(|e| Error::Failed(format!("model: {e}")))?,
        )),
    };
    let mut embedded = 0usize;
    let mut embedding_secs = 0.0f64;
    for (index, sample) in samples.iter().enumerate() {
        if let Some((first, last)) = options.samples
            && !(first..=last).contains(&index)
        {
            continue;
        }
        let config = StoreConfig::default()
            .with_capacity(usize::MAX)
            .with_history_limit(usize::MAX)
            .with_auto_compact(false)
            .with_analyzer(AnalyzerConfig::default().with_stemming(options.stemming));
        // The SQLite store lives in a temporary file, so its search runs through the
        // database as it would for a user; the directory goes when the sample is done.
        let mut dir = None;
        let store: Arc<dyn SessionFactStore> = match &options.store {
            Store::Memory => Arc::new(InMemorySessionFactStore::new(config, Arc::new(SystemClock))),
            Store::Sqlite => {
                let dir = dir.insert(tempfile::TempDir::new().map_err(|e| {
                    Error::Failed(format!("cannot make a temporary directory: {e}"))
                })?);
                let path = dir.path().join("eval.db");
                let sqlite = SqliteOptions::default().with_search_cache(options.search_cache);
                Arc::new(
                    SqliteFactStore::open_with(path, "eval", config, sqlite, Arc::new(SystemClock))
                        .map_err(|e| Error::Failed(format!("sqlite store: {e}")))?,
                )
            }
            // A scope of its own per sample and run: the server keeps earlier runs' facts,
            // and no search crosses scopes.
            Store::Postgres(url) => {
                let postgres = PgOptions::default().with_search_cache(options.search_cache);
                Arc::new(
                    PgFactStore::open_with(
                        url,
                        &fresh_scope(index),
                        config,
                        postgres,
                        Arc::new(SystemClock),
                    )
                    .map_err(|e| Error::Failed(format!("postgres store: {e}")))?,
                )
            }
        };
        // Evidence of each stored fact; duplicates (same triple or same statement) share one.
        let mut evidence: HashMap<FactId, HashSet<String>> = HashMap::new();
        let mut batch = Vec::new();
        for (speaker, text, dia) in items(sample, options.corpus) {
            if let Some(fact) = fact(&speaker, &text) {
                evidence.entry(fact.id()).or_default().extend(dia);
                batch.push(fact);
            }
        }
        let ids: Vec<FactId> = batch.iter().map(SessionFact::id).collect();
        // One batch per sample: all facts share (speaker, said), and facts of one batch
        // never invalidate each other.
        let report = store
            .add(batch)
            .map_err(|e| Error::Failed(format!("store: {e}")))?;
        for skipped in &report.skipped {
            if let SkipReason::DuplicateStatement { existing } = skipped.reason
                && let Some(id) = ids.get(skipped.index)
                && let Some(moved) = evidence.remove(id)
            {
                evidence.entry(existing).or_default().extend(moved);
            }
        }
        facts_indexed += store
            .valid_count()
            .map_err(|e| Error::Failed(format!("store: {e}")))?;
        let weighting: Box<dyn TermWeighting> = match options.scorer {
            Scorer::Bm25 => Box::new(Bm25::default()),
            Scorer::Overlap => Box::new(KeywordOverlap),
        };
        let rank: Box<Ranker> = match (&options.retriever, &embedder) {
            (
                Retriever::Hybrid {
                    fusion,
                    min_similarity,
                    candidates,
                    ..
                },
                Some(embedder),
            ) => {
                let retriever = HybridRetriever::new(store, embedder.clone())
                    .map_err(|e| Error::Failed(format!("hybrid retriever: {e}")))?
                    .with_weighting(weighting)
                    .with_fusion(*fusion)
                    .with_min_similarity(*min_similarity)
                    .with_candidates(*candidates);
                // Ingest: every stored fact embedded, in batches, as a user's add would.
                let start = Instant::now();
                embedded += retriever
                    .embed_missing()
                    .map_err(|e| Error::Failed(format!("embedding the facts: {e}")))?;
                embedding_secs += start.elapsed().as_secs_f64();
                Box::new(move |query| {
                    retriever
                        .rank(query)
                        .map_err(|e| Error::Failed(format!("hybrid ranking: {e}")))
                })
            }
            _ => {
                let retriever = IndexRetriever::new(store).with_weighting(weighting);
                Box::new(move |query| {
                    retriever
                        .rank(query)
                        .map_err(|e| Error::Failed(format!("ranking: {e}")))
                })
            }
        };
        for qa in sample["qa"].as_array().into_iter().flatten() {
            let gold: HashSet<String> = qa["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect();
            if qa["category"].as_i64() == Some(5) || gold.is_empty() {
                continue;
            }
            let question = qa["question"].as_str().unwrap_or_default();
            let query = FactQuery::new("eval", question).with_max_facts(MAX_K);
            let start = Instant::now();
            let ranked = rank(&query)?;
            latencies_us.push(start.elapsed().as_secs_f64() * 1e6);
            questions += 1;
            for (slot, k) in recall.iter_mut().zip(KS) {
                let mut found: HashSet<&str> = HashSet::new();
                for hit in ranked.iter().take(k) {
                    if let Some(ids) = evidence.get(&hit.fact.id()) {
                        found.extend(ids.iter().map(String::as_str));
                    }
                }
                *slot += gold.iter().filter(|g| found.contains(g.as_str())).count() as f64
                    / gold.len() as f64;
            }
        }
    }
    if questions == 0 {
        return Err(Error::Failed("the data has no answerable questions".into()));
    }
    latencies_us.sort_by(f64::total_cmp);
    let at = |q: f64| {
        latencies_us
            .get(((latencies_us.len() as f64) * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let round = |x: f64, digits: i32| (x * 10f64.powi(digits)).round() / 10f64.powi(digits);
    let system = format!(
        "factmem-{}{}{}{}{}",
        match &options.retriever {
            Retriever::Lexical => String::new(),
            Retriever::Hybrid { fusion, .. } => match fusion {
                Fusion::Rrf { k } => format!("hybrid-rrf{k}-"),
                Fusion::Weighted { vector_weight } => format!("hybrid-w{vector_weight}-"),
            },
        },
        match options.store {
            Store::Memory => "",
            Store::Sqlite => "sqlite-",
            Store::Postgres(_) => "postgres-",
        },
        search_path(&options.store, options.search_cache),
        match options.scorer {
            Scorer::Bm25 => "bm25",
            Scorer::Overlap => "overlap",
        },
        if options.stemming { "-porter2" } else { "" }
    );
    let mut out = serde_json::Map::new();
    out.insert("system".into(), system.into());
    out.insert(
        "corpus".into(),
        match options.corpus {
            Corpus::Observations => "observations",
            Corpus::Turns => "turns",
        }
        .into(),
    );
    out.insert("questions".into(), questions.into());
    for (k, total) in KS.iter().zip(recall) {
        out.insert(
            format!("recall@{k}"),
            round(total / questions as f64, 4).into(),
        );
    }
    if let Some((first, last)) = options.samples {
        out.insert("samples".into(), format!("{first}-{last}").into());
    }
    if let Retriever::Hybrid {
        min_similarity,
        candidates,
        ..
    } = &options.retriever
    {
        out.insert("candidates".into(), (*candidates).into());
        if *min_similarity != 0.0 {
            out.insert("min_similarity".into(), (*min_similarity).into());
        }
        if let Some(embedder) = &embedder {
            out.insert("model".into(), embedder.model().into());
        }
        if embedding_secs > 0.0 {
            out.insert(
                "ingest_facts_per_s".into(),
                round(embedded as f64 / embedding_secs, 1).into(),
            );
        }
    }
    out.insert("p50_us".into(), round(at(0.5), 1).into());
    out.insert("p95_us".into(), round(at(0.95), 1).into());
    if facts_indexed == 0 {
        return Err(Error::Failed("no fact was indexed".into()));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;

    use super::*;
    use serde_json::json;

    fn options(corpus: Corpus) -> Options {
        Options {
            data: "x".into(),
            corpus,
            scorer: Scorer::Bm25,
            stemming: true,
            store: Store::Memory,
            search_cache: true,
            retriever: Retriever::Lexical,
            samples: None,
            memory: false,
            context: None,
            memory_facts: crate::eval_memory::FactOptions::default(),
            frontier: None,
            frontier_grid: crate::eval_frontier::Grid::default(),
        }
    }

    fn sample() -> Value {
        json!({
            "observation": {"session_1_observation": {
                "Ann": [["Ann adopted a rescue dog named Pixel.", "D1:1"], ["Ann paints landscapes on weekends.", ["D1:3", "D1:4"]]],
                "Bob": [["Bob is training for a marathon in spring.", "D1:2"]]
            }},
            "conversation": {"speaker_a": "Ann", "session_1_date_time": "x", "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog, Pixel!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice. I am training for a marathon."}
            ]},
            "qa": [
                {"question": "What is the name of Ann's dog?", "evidence": ["D1:1"], "category": 1},
                {"question": "What does Ann paint?", "evidence": ["D1:3", "D1:9"], "category": 1},
                {"question": "Unanswerable?", "evidence": ["D1:2"], "category": 5},
                {"question": "No evidence", "evidence": [], "category": 2}
            ]
        })
    }

    #[test]
    fn follows_the_protocol_on_a_small_sample() {
        let report = evaluate(&[sample()], &options(Corpus::Observations)).unwrap();
        assert_eq!(
            report["questions"], 2,
            "category 5 and evidence-less questions are skipped"
        );
        // First question: found at rank 1. Second: one of two evidence ids exists.
        assert_eq!(report["recall@1"], 0.75);
        assert_eq!(report["recall@20"], 0.75);
        let keys: Vec<&str> = report
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "corpus",
                "p50_us",
                "p95_us",
                "questions",
                "recall@1",
                "recall@10",
                "recall@20",
                "recall@5",
                "system"
            ]
        );
        let turns = evaluate(&[sample()], &options(Corpus::Turns)).unwrap();
        assert_eq!(turns["corpus"], "turns");
        assert_eq!(turns["recall@1"], 0.5);
        // The SQLite store ranks exactly as the in-memory store does.
        let sqlite = Options {
            store: Store::Sqlite,
            ..options(Corpus::Observations)
        };
        let on_sqlite = evaluate(&[sample()], &sqlite).unwrap();
        assert_eq!(on_sqlite["system"], "factmem-sqlite-bm25-porter2");
        // And so it does through FTS5, without the search cache.
        let fts5 = Options {
            search_cache: false,
            ..sqlite
        };
        let on_fts5 = evaluate(&[sample()], &fts5).unwrap();
        assert_eq!(on_fts5["system"], "factmem-sqlite-fts5-bm25-porter2");
        for k in ["recall@1", "recall@5", "recall@10", "recall@20"] {
            assert_eq!(on_sqlite[k], report[k], "{k}");
            assert_eq!(on_fts5[k], report[k], "{k}");
        }
    }

    #[test]
    fn the_hybrid_retriever_runs_the_same_protocol() {
        let Some(model) = std::env::var_os("FACTMEM_MODEL_DIR") else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "FACTMEM_MODEL_DIR is unset under CI=true: run `.ci/models` first"
            );
            eprintln!("skipped: FACTMEM_MODEL_DIR is unset (`.ci/models` prints it)");
            return;
        };
        let hybrid = Options {
            retriever: Retriever::Hybrid {
                model: PathBuf::from(model),
                fusion: Fusion::default(),
                min_similarity: 0.0,
                candidates: DEFAULT_CANDIDATES,
            },
            ..options(Corpus::Observations)
        };
        let lexical = evaluate(&[sample()], &options(Corpus::Observations)).unwrap();
        let report = evaluate(&[sample()], &hybrid).unwrap();
        assert_eq!(report["questions"], lexical["questions"]);
        assert!(
            report["system"]
                .as_str()
                .unwrap()
                .starts_with("factmem-hybrid-")
        );
        assert!(report["model"].as_str().unwrap().starts_with("onnx:"));
        assert!(report["ingest_facts_per_s"].as_f64().unwrap() > 0.0);
        // Every fact is a candidate of the vector side here, so the evidence that exists
        // is found within 20, as the words alone find it.
        assert_eq!(report["recall@20"], lexical["recall@20"]);
    }

    /// The test server's URL; `None` outside CI when [`PG_URL_ENV`] is unset.
    fn pg_server() -> Option<String> {
        if let Ok(url) = std::env::var(PG_URL_ENV)
            && !url.is_empty()
        {
            return Some(url);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{PG_URL_ENV} is not set under CI=true: start a server with \
             `eval \"$(.ci/pg-server start)\"` (.ci/run does)"
        );
        // Straight to stderr: the test harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "{PG_URL_ENV} is not set: the PostgreSQL evaluation test is skipped; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
        None
    }

    #[test]
    fn the_postgres_store_ranks_as_the_in_memory_store_does() {
        let Some(url) = pg_server() else { return };
        let report = evaluate(&[sample()], &options(Corpus::Observations)).unwrap();
        let postgres = Options {
            store: Store::Postgres(url),
            ..options(Corpus::Observations)
        };
        // Twice: each run indexes into fresh scopes, so the second sees none of the first.
        for _ in 0..2 {
            let on_postgres = evaluate(&[sample(), sample()], &postgres).unwrap();
            assert_eq!(on_postgres["system"], "factmem-postgres-bm25-porter2");
            assert_eq!(on_postgres["questions"], 4);
            for k in ["recall@1", "recall@5", "recall@10", "recall@20"] {
                assert_eq!(on_postgres[k], report[k], "{k}");
            }
        }
        // And through the GIN index, without the search cache.
        let gin = Options {
            search_cache: false,
            ..postgres
        };
        let on_gin = evaluate(&[sample()], &gin).unwrap();
        assert_eq!(on_gin["system"], "factmem-postgres-gin-bm25-porter2");
        for k in ["recall@1", "recall@5", "recall@10", "recall@20"] {
            assert_eq!(on_gin[k], report[k], "{k}");
        }
    }

    #[test]
    fn arguments_are_checked() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(matches!(parse(&args(&[])), Err(Error::Usage(_))));
        assert!(matches!(parse(&args(&["beir"])), Err(Error::Usage(_))));
        assert!(matches!(
            parse(&args(&["locomo", "--data", "x", "--store", "mysql"])),
            Err(Error::Usage(m)) if m.contains("memory, sqlite or postgres")
        ));
        // Postgres needs a server, named by the variable.
        assert!(matches!(
            pg_url(|_| None),
            Err(Error::Usage(m)) if m.contains("FACTMEM_PG_URL") && m.contains(".ci/pg-server start")
        ));
        assert!(matches!(
            pg_url(|_| Some(String::new())),
            Err(Error::Usage(_))
        ));
        assert_eq!(
            pg_url(|name| (name == "FACTMEM_PG_URL").then(|| "postgres://h/db".to_owned()))
                .unwrap(),
            "postgres://h/db"
        );
        assert!(matches!(parse(&args(&["locomo"])), Err(Error::Usage(m)) if m.contains("--data")));
        assert!(matches!(
            parse(&args(&["locomo", "--data"])),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--corpus", "x"])),
            Err(Error::Usage(_))
        ));
        let ok = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--corpus",
            "turns",
            "--scorer",
            "overlap",
            "--stemming",
            "off",
        ]))
        .unwrap();
        assert_eq!(
            (ok.corpus, ok.scorer, ok.stemming, ok.search_cache),
            (Corpus::Turns, Scorer::Overlap, false, true)
        );
        // The search cache is a database store's: off goes with sqlite or postgres.
        let off = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--search-cache",
            "off",
            "--store",
            "sqlite",
        ]))
        .unwrap();
        assert_eq!((off.store, off.search_cache), (Store::Sqlite, false));
        let memory_off = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--memory",
            "--store",
            "sqlite",
            "--search-cache",
            "off",
        ]))
        .unwrap();
        assert!(memory_off.memory && !memory_off.search_cache);
        // The facts of `--memory`: expansion and recency rank facts, so they need them.
        let facts = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--memory",
            "--facts",
            "--expand",
            "1",
            "--recency-half-life",
            "30d",
        ]))
        .unwrap();
        assert!(facts.memory_facts.facts && facts.memory_facts.expand);
        assert_eq!(
            facts.memory_facts.recency_half_life,
            Some(std::time::Duration::from_secs(30 * 86_400))
        );
        for (bad, says) in [
            (&["--facts"][..], "go with `--memory`"),
            (&["--memory", "--expand", "1"], "add `--facts`"),
            (&["--memory", "--facts", "--expand", "2"], "0 or 1"),
            (
                &["--memory", "--facts", "--recency-half-life", "soon"],
                "--recency-half-life",
            ),
        ] {
            let mut line = vec!["locomo", "--data", "f"];
            line.extend_from_slice(bad);
            assert!(
                matches!(parse(&args(&line)), Err(Error::Usage(ref m)) if m.contains(says)),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--search-cache", "off"])),
            Err(Error::Usage(m)) if m.contains("--store sqlite")
        ));
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--store", "sqlite", "--search-cache", "no"])),
            Err(Error::Usage(m)) if m.contains("on or off")
        ));
        // Hybrid retrieval needs a model; its flags go with it.
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--retriever", "hybrid"])),
            Err(Error::Usage(m)) if m.contains("--model") && m.contains(".ci/models")
        ));
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--fusion", "rrf"])),
            Err(Error::Usage(m)) if m.contains("--retriever hybrid")
        ));
        for bad in [
            ["--samples", "4-0"],
            ["--samples", "x"],
            ["--vector-weight", "NaN"],
            ["--candidates", "-1"],
            ["--fusion", "max"],
            ["--retriever", "dense"],
            ["--contexts", "1,x"],
            ["--late-weights", ""],
            ["--late-candidates", "many"],
        ] {
            let mut list = vec![
                "locomo",
                "--data",
                "f",
                "--retriever",
                "hybrid",
                "--model",
                "m",
            ];
            list.extend(bad);
            assert!(
                matches!(parse(&args(&list)), Err(Error::Usage(_))),
                "{bad:?}"
            );
        }
        // The frontier needs a model; its grid comes from its flags.
        assert!(matches!(
            parse(&args(&["locomo", "--data", "f", "--frontier"])),
            Err(Error::Usage(m)) if m.contains("--model")
        ));
        let frontier = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--frontier",
            "--model",
            "m",
            "--corpus",
            "turns",
            "--contexts",
            "0,2",
            "--late-weights",
            "0.8",
            "--late-candidates",
            "50",
        ]))
        .unwrap();
        assert_eq!(frontier.frontier, Some(PathBuf::from("m")));
        assert_eq!(
            frontier.frontier_grid,
            crate::eval_frontier::Grid {
                corpora: vec![true],
                contexts: vec![0, 2],
                weights: vec![0.8],
                late_candidates: 50,
            }
        );
        let hybrid = parse(&args(&[
            "locomo",
            "--data",
            "f",
            "--retriever",
            "hybrid",
            "--model",
            "m",
            "--fusion",
            "rrf",
            "--rrf-k",
            "10",
            "--candidates",
            "30",
            "--samples",
            "5-9",
        ]))
        .unwrap();
        assert_eq!(hybrid.samples, Some((5, 9)));
        assert_eq!(
            hybrid.retriever,
            Retriever::Hybrid {
                model: PathBuf::from("m"),
                fusion: Fusion::Rrf { k: 10.0 },
                min_similarity: 0.0,
                candidates: 30,
            }
        );
    }
}
