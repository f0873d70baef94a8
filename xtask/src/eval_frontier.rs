//! `cargo xtask eval locomo --data PATH --frontier --model DIR`: the retrieval frontier of
//! issue 26 in one run, beside the FTS5 peer.
//!
//! For each corpus (observations, turns) and each neighbour context k = 0, 1, 2, every
//! sample is indexed once in a fresh in-memory store; each fact is embedded (its vector
//! and its token vectors) with up to k neighbouring items of its session on each side
//! (turns: the session's turns in order; observations: the session's observations of one
//! speaker in order). The same questions are then ranked by
//!
//! - `lexical`: BM25 alone (k changes nothing: the context enters through the model);
//! - `hybrid`: BM25 and the pooled vectors, fused (`Fusion::default`);
//! - `hybrid+maxsim`: that, with the best candidates re-scored by late interaction
//!   ([`LateInteraction`]) at each weight of the [`Grid`] (0.5, 0.8 and 1.0 by default),
//!
//! and recall@k is reported on conversations 0–4 (where defaults are tuned), 5–9 (held
//! out) and all ten, with the p50/p95 of one ranking call (the query's embedding
//! included), the ingest rate (facts embedded per second, token vectors included) and the
//! token vectors' bytes per fact. The FTS5 peer (`fts5_baseline.py` beside the data) runs
//! in the same process tree, on the same machine, first.
//!
//! Output: one JSON line per row.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fact_model::{FactId, SessionFact, SystemClock};
use fact_retrieve::{
    Embedder, FactQuery, HybridRetriever, IndexRetriever, LateInteraction, OnnxEmbedder,
};
use fact_store::{InMemorySessionFactStore, SessionFactStore, SkipReason, StoreConfig};
use serde_json::{Value, json};

use crate::error::Error;
use crate::locomo::{KS, MAX_K, Ranker, fact};

/// What the frontier measures: by default both corpora, contexts 0, 1 and 2, and the
/// MaxSim weights 0.5, 0.8 and 1.0 over the default number of candidates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid {
    /// `false` for observations, `true` for turns.
    pub(crate) corpora: Vec<bool>,
    pub(crate) contexts: Vec<usize>,
    pub(crate) weights: Vec<f64>,
    pub(crate) late_candidates: usize,
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            corpora: vec![false, true],
            contexts: vec![0, 1, 2],
            weights: vec![0.5, 0.8, 1.0],
            late_candidates: fact_retrieve::DEFAULT_LATE_CANDIDATES,
        }
    }
}

/// One item of a sample in its session's order: speaker, text, evidence ids.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub(crate) speaker: String,
    pub(crate) text: String,
    pub(crate) evidence: Vec<String>,
}

/// A sample's items grouped by session (observations: by session and speaker), each group
/// in its order.
pub(crate) fn groups(sample: &Value, turns: bool) -> Vec<Vec<Item>> {
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
    let mut out = Vec::new();
    if turns {
        for (key, list) in sample["conversation"].as_object().into_iter().flatten() {
            if !key.starts_with("session_") {
                continue;
            }
            let group: Vec<Item> = list
                .as_array()
                .into_iter()
                .flatten()
                .map(|turn| Item {
                    speaker: turn["speaker"].as_str().unwrap_or_default().to_owned(),
                    text: turn
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    evidence: strings(&turn["dia_id"]),
                })
                .collect();
            if !group.is_empty() {
                out.push(group);
            }
        }
    } else {
        for by_speaker in sample["observation"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            for (speaker, entries) in by_speaker.as_object().into_iter().flatten() {
                let group: Vec<Item> = entries
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|entry| {
                        Some(Item {
                            speaker: speaker.clone(),
                            text: entry.get(0)?.as_str()?.to_owned(),
                            evidence: strings(entry.get(1)?),
                        })
                    })
                    .collect();
                if !group.is_empty() {
                    out.push(group);
                }
            }
        }
    }
    out
}

/// One configuration's sums over questions, for one split.
#[derive(Debug, Default, Clone)]
struct Sums {
    recall: [f64; KS.len()],
    questions: usize,
}

impl Sums {
    fn add(&mut self, found: &[f64; KS.len()]) {
        for (total, x) in self.recall.iter_mut().zip(found) {
            *total += x;
        }
        self.questions += 1;
    }

    fn json(&self) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("questions".into(), self.questions.into());
        for (k, total) in KS.iter().zip(self.recall) {
            let mean = if self.questions == 0 {
                0.0
            } else {
                total / self.questions as f64
            };
            out.insert(format!("recall@{k}"), round(mean, 4).into());
        }
        Value::Object(out)
    }
}

/// One row of the frontier while it is measured.
#[derive(Debug, Default)]
struct Row {
    tuning: Sums,
    held_out: Sums,
    latencies_us: Vec<f64>,
}

fn round(x: f64, digits: i32) -> f64 {
    (x * 10f64.powi(digits)).round() / 10f64.powi(digits)
}

/// Runs the frontier on `samples` with the model in `model`; prints one JSON line per row.
pub(crate) fn run(samples: &[Value], data: &Path, model: &Path, grid: &Grid) -> Result<(), Error> {
    let embedder: Arc<dyn Embedder> =
        Arc::new(OnnxEmbedder::open(model).map_err(|e| Error::Failed(format!("model: {e}")))?);
    print_line(&json!({"model": embedder.model(), "samples": samples.len()}))?;
    for &turns in &grid.corpora {
        let corpus = if turns { "turns" } else { "observations" };
        print_line(&peer(data, corpus)?)?;
    }
    for &turns in &grid.corpora {
        let corpus = if turns { "turns" } else { "observations" };
        for &k in &grid.contexts {
            for line in frontier(samples, turns, k, &embedder, grid)? {
                let mut line = line;
                if let Some(map) = line.as_object_mut() {
                    map.insert("corpus".into(), corpus.into());
                    map.insert("context".into(), k.into());
                }
                print_line(&line)?;
            }
        }
    }
    Ok(())
}

fn print_line(value: &Value) -> Result<(), Error> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{value}").map_err(|e| Error::Failed(format!("cannot write: {e}")))
}

/// The FTS5 peer's line for `corpus`: `fts5_baseline.py` beside the data.
fn peer(data: &Path, corpus: &str) -> Result<Value, Error> {
    let script: PathBuf = data
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("fts5_baseline.py");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .arg(data)
        .args(["--corpus", corpus])
        .output()
        .map_err(|e| Error::Failed(format!("cannot run {}: {e}", script.display())))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut line: Value = serde_json::from_str(text.trim())
        .map_err(|e| Error::Failed(format!("the peer printed no JSON: {e}")))?;
    if let Some(map) = line.as_object_mut() {
        map.insert("peer".into(), true.into());
    }
    Ok(line)
}

/// The rows of one corpus at one context.
fn frontier(
    samples: &[Value],
    turns: bool,
    k: usize,
    embedder: &Arc<dyn Embedder>,
    grid: &Grid,
) -> Result<Vec<Value>, Error> {
    let mut names: Vec<String> = vec!["lexical".into(), "hybrid".into()];
    names.extend(grid.weights.iter().map(|w| format!("hybrid+maxsim-w{w}")));
    let mut rows: Vec<Row> = names.iter().map(|_| Row::default()).collect();
    let mut embedded = 0usize;
    let mut embedding_secs = 0.0f64;
    let mut token_bytes = 0u64;
    let mut token_facts = 0usize;
    for (index, sample) in samples.iter().enumerate() {
        let store = Arc::new(InMemorySessionFactStore::new(
            StoreConfig::default()
                .with_capacity(usize::MAX)
                .with_history_limit(usize::MAX)
                .with_auto_compact(false),
            Arc::new(SystemClock),
        ));
        let mut evidence: HashMap<FactId, HashSet<String>> = HashMap::new();
        let mut episodes: Vec<Vec<SessionFact>> = Vec::new();
        for group in groups(sample, turns) {
            let facts: Vec<SessionFact> = group
                .iter()
                .filter_map(|item| {
                    let fact = fact(&item.speaker, &item.text)?;
                    evidence
                        .entry(fact.id())
                        .or_default()
                        .extend(item.evidence.iter().cloned());
                    Some(fact)
                })
                .collect();
            episodes.push(facts);
        }
        let batch: Vec<SessionFact> = episodes.concat();
        let ids: Vec<FactId> = batch.iter().map(SessionFact::id).collect();
        // One batch per sample, as the fact protocol adds them.
        let report = store
            .add(batch)
            .map_err(|e| Error::Failed(format!("store: {e}")))?;
        for skip in &report.skipped {
            if let SkipReason::DuplicateStatement { existing } = skip.reason
                && let Some(id) = ids.get(skip.index)
                && let Some(moved) = evidence.remove(id)
            {
                evidence.entry(existing).or_default().extend(moved);
            }
        }
        let store: Arc<dyn SessionFactStore> = store;
        let late = HybridRetriever::new(store.clone(), embedder.clone())
            .map_err(|e| Error::Failed(format!("hybrid retriever: {e}")))?
            .with_late_interaction(LateInteraction::default())
            .with_neighbour_context(k);
        // Ingest: each session's items embedded in their context, vectors and token
        // vectors (an item the store refused as a duplicate is skipped by the store).
        let start = Instant::now();
        let slices: Vec<&[SessionFact]> = episodes.iter().map(Vec::as_slice).collect();
        embedded += late
            .embed_episodes(&slices)
            .map_err(|e| Error::Failed(format!("embedding the facts: {e}")))?;
        embedding_secs += start.elapsed().as_secs_f64();
        let vectors = store
            .vectors()
            .ok_or_else(|| Error::Failed("the store keeps no vectors".into()))?;
        let stats = vectors
            .token_vector_stats(embedder.model())
            .map_err(|e| Error::Failed(format!("store: {e}")))?;
        token_bytes += stats.bytes;
        token_facts += stats.facts;

        let mut rankers: Vec<Box<Ranker>> = Vec::new();
        let lexical = IndexRetriever::new(store.clone());
        rankers.push(Box::new(move |q| {
            lexical
                .rank(q)
                .map_err(|e| Error::Failed(format!("ranking: {e}")))
        }));
        let hybrid = HybridRetriever::new(store.clone(), embedder.clone())
            .map_err(|e| Error::Failed(format!("hybrid retriever: {e}")))?;
        rankers.push(Box::new(move |q| {
            hybrid
                .rank(q)
                .map_err(|e| Error::Failed(format!("hybrid: {e}")))
        }));
        for &weight in &grid.weights {
            let late = HybridRetriever::new(store.clone(), embedder.clone())
                .map_err(|e| Error::Failed(format!("hybrid retriever: {e}")))?
                .with_late_interaction(
                    LateInteraction::default()
                        .with_weight(weight)
                        .with_candidates(grid.late_candidates),
                );
            rankers.push(Box::new(move |q| {
                late.rank(q)
                    .map_err(|e| Error::Failed(format!("maxsim: {e}")))
            }));
        }
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
            for (row, rank) in rows.iter_mut().zip(&rankers) {
                let start = Instant::now();
                let ranked = rank(&query)?;
                row.latencies_us.push(start.elapsed().as_secs_f64() * 1e6);
                let mut found = [0.0; KS.len()];
                for (slot, cut) in found.iter_mut().zip(KS) {
                    let mut hit: HashSet<&str> = HashSet::new();
                    for top in ranked.iter().take(cut) {
                        if let Some(ids) = evidence.get(&top.fact.id()) {
                            hit.extend(ids.iter().map(String::as_str));
                        }
                    }
                    *slot = gold.iter().filter(|g| hit.contains(g.as_str())).count() as f64
                        / gold.len() as f64;
                }
                if index < 5 {
                    row.tuning.add(&found);
                } else {
                    row.held_out.add(&found);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (name, mut row) in names.into_iter().zip(rows) {
        row.latencies_us.sort_by(f64::total_cmp);
        let at = |q: f64| {
            row.latencies_us
                .get(((row.latencies_us.len() as f64) * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let mut all = row.tuning.clone();
        for (total, x) in all.recall.iter_mut().zip(row.held_out.recall) {
            *total += x;
        }
        all.questions += row.held_out.questions;
        let mut line = json!({
            "retriever": name,
            "tuning_0_4": row.tuning.json(),
            "held_out_5_9": row.held_out.json(),
            "all": all.json(),
            "p50_us": round(at(0.5), 1),
            "p95_us": round(at(0.95), 1),
            "late_candidates": grid.late_candidates,
        });
        if name != "lexical"
            && let Some(map) = line.as_object_mut()
        {
            map.insert(
                "ingest_facts_per_s".into(),
                round(embedded as f64 / embedding_secs.max(1e-9), 1).into(),
            );
            if name.contains("maxsim") {
                map.insert(
                    "token_bytes_per_fact".into(),
                    round(token_bytes as f64 / token_facts.max(1) as f64, 1).into(),
                );
            }
        }
        out.push(line);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn items_are_grouped_by_session_and_speaker_in_order() {
        let sample = json!({
            "observation": {"session_1_observation": {
                "Ann": [["a1", "D1:1"], ["a2", ["D1:3", "D1:4"]]],
                "Bob": [["b1", "D1:2"]]
            }},
            "conversation": {"session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "t1"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "t2"}
            ], "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "t3"}]}
        });
        let texts = |groups: Vec<Vec<Item>>| -> Vec<Vec<String>> {
            groups
                .into_iter()
                .map(|g| g.into_iter().map(|i| i.text).collect())
                .collect()
        };
        assert_eq!(
            texts(groups(&sample, false)),
            [vec!["a1", "a2"], vec!["b1"]]
        );
        assert_eq!(texts(groups(&sample, true)), [vec!["t1", "t2"], vec!["t3"]]);
        assert_eq!(groups(&sample, false)[0][1].evidence, ["D1:3", "D1:4"]);
    }
}
