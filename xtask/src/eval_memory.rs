//! `cargo xtask eval locomo --memory`: the LoCoMo questions asked of the memory as a user
//! gets it. Each sample's sessions are archived as episodes through `MemoryService`, each
//! with its session date as the session time; every question goes through `recall`, and
//! the evidence turns are looked for among the episode messages it returns.
//!
//! Reported beside the keys of the fact protocol (`recall@k` over the ranked messages,
//! `p50_us` and `p95_us` of one `recall` call): `temporal_dated`, the share of the
//! temporal questions' (category 2) evidence lines found in the top 10 whose rendered
//! line carries its session's date.
//!
//! With `--facts`, each sample's observations (`observation.session_N_observation`, the
//! facts LoCoMo's authors wrote for each session) are added too, one fact per observation
//! (`speaker said text`, valid from the session's date, its dia ids as metadata `dia`), and
//! recall's facts are measured as well: `facts_recall@k` over the ranked facts, and per
//! question category (`facts_by_category`: 1 single-hop, 2 temporal, 3 multi-hop, 4 open
//! domain) recall@10 and @20. `--expand 1` adds, per category, `expanded@10`: the evidence
//! among the ten best facts and the neighbours `expand` adds to them (at most ten more;
//! compare with `recall@20`, as many facts without expansion). `--recency-half-life D`
//! ranks every recall with recency, its reference the instant of the run.
//!
//! On SQLite and PostgreSQL, messages are always searched through the database's own index
//! (FTS5, or PostgreSQL's GIN index): the stores keep no message index in process. What
//! `--search-cache off` changes is the fact search inside `recall` (the store's in-process
//! term index, or the database's); the report's `system` then ends in `-fts5` or `-gin`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dispatch_runtime::{ArchiveRequest, MemoryService, ReadOptions};
use fact_model::{MetaValue, Metadata, SessionFact, SystemClock, Timestamp};
use fact_retrieve::recall_message_line;
use fact_store::{InMemoryLongTermStore, LongTermStore, MessageHit, StoreConfig};
use fact_store_postgres::{PgFactStore, PgOptions};
use fact_store_sqlite::{SqliteFactStore, SqliteOptions};
use serde_json::{Value, json};

use crate::error::Error;

const KS: [usize; 4] = [1, 5, 10, 20];
/// The deepest cut-off of [`KS`]: how many messages each recall asks for.
const MAX_K: usize = 20;

/// Where the memory lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Backend {
    Memory,
    Sqlite,
    Postgres(String),
}

/// What `--memory` was asked for.
#[derive(Debug, Clone)]
pub(crate) struct MemoryOptions {
    pub(crate) backend: Backend,
    pub(crate) samples: Option<(usize, usize)>,
    /// A model directory: recall ranks facts by meaning too.
    pub(crate) model: Option<std::path::PathBuf>,
    /// Neighbouring messages lending their score: (how many, what share); the service's
    /// default when `None`.
    pub(crate) context: Option<(usize, f64)>,
    /// Whether the SQLite and PostgreSQL stores search facts through their in-process term
    /// index (the default) or the database's.
    pub(crate) search_cache: bool,
    /// The observations as facts, and how recall ranks them.
    pub(crate) facts: FactOptions,
}

/// `--facts`, `--expand 1` and `--recency-half-life D`.
#[derive(Debug, Clone, Default)]
pub(crate) struct FactOptions {
    /// Add each sample's observations as facts, and measure recall's facts.
    pub(crate) facts: bool,
    /// Also measure recall with `expand` 1.
    pub(crate) expand: bool,
    /// Rank every recall with this recency half-life.
    pub(crate) recency_half_life: Option<Duration>,
}

/// The facts measures of one question category.
#[derive(Debug, Default)]
struct Category {
    questions: usize,
    at10: f64,
    at20: f64,
    expanded10: f64,
}

/// The observations of a session as facts: `speaker said text`, valid from `at`, with
/// their dia ids as metadata `dia` (comma-separated).
fn observation_facts(sample: &Value, number: usize, at: Timestamp) -> Vec<SessionFact> {
    let mut out = Vec::new();
    let by_speaker = sample
        .get("observation")
        .and_then(|o| o.get(format!("session_{number}_observation")))
        .and_then(Value::as_object);
    for (speaker, entries) in by_speaker.into_iter().flatten() {
        for entry in entries.as_array().into_iter().flatten() {
            let Some(text) = entry.get(0).and_then(Value::as_str) else {
                continue;
            };
            let dia: Vec<&str> = match entry.get(1) {
                Some(Value::String(id)) => vec![id.as_str()],
                Some(Value::Array(ids)) => ids.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let Ok(metadata) = Metadata::from_pairs([("dia", MetaValue::String(dia.join(",")))])
            else {
                continue;
            };
            if let Some(fact) = crate::locomo::fact_at(speaker, text, at) {
                out.push(fact.with_metadata(metadata));
            }
        }
    }
    out
}

/// The dia ids a fact carries (metadata `dia`).
fn dia_of(fact: &SessionFact) -> Vec<String> {
    match fact.metadata().get("dia") {
        Some(MetaValue::String(ids)) => ids.split(',').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// The share of `gold` among the dia ids of `facts`.
fn share<'f>(gold: &HashSet<String>, facts: impl Iterator<Item = &'f SessionFact>) -> f64 {
    let got: HashSet<String> = facts.flat_map(dia_of).collect();
    gold.iter().filter(|g| got.contains(*g)).count() as f64 / gold.len().max(1) as f64
}

/// `1:56 pm on 8 May, 2023` as an instant (UTC).
pub(crate) fn session_time(text: &str) -> Option<Timestamp> {
    let (clock, date) = text.trim().split_once(" on ")?;
    let (hm, meridiem) = clock.trim().split_once(' ')?;
    let (hour, minute) = hm.split_once(':')?;
    let mut hour: u32 = hour.parse().ok()?;
    let minute: u32 = minute.parse().ok()?;
    match meridiem.to_ascii_lowercase().as_str() {
        "am" if hour == 12 => hour = 0,
        "am" => {}
        "pm" if hour < 12 => hour += 12,
        "pm" => {}
        _ => return None,
    }
    let mut parts = date.split_whitespace();
    let day: u32 = parts.next()?.parse().ok()?;
    let month = parts.next()?.trim_end_matches(',');
    let year: u32 = parts.next()?.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let month = MONTHS
        .iter()
        .position(|m| *m == month.to_ascii_lowercase())?
        + 1;
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z")
        .parse()
        .ok()
}

/// One session of a sample: its number, date and turns as `(speaker, text, dia_id)`.
struct Session {
    number: usize,
    at: Timestamp,
    turns: Vec<(String, String, String)>,
}

fn sessions(sample: &Value) -> Vec<Session> {
    let mut out = Vec::new();
    let Some(conversation) = sample["conversation"].as_object() else {
        return out;
    };
    for (key, turns) in conversation {
        let Some(number) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let Some(at) = conversation
            .get(&format!("session_{number}_date_time"))
            .and_then(Value::as_str)
            .and_then(session_time)
        else {
            continue;
        };
        let turns = turns
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|turn| {
                Some((
                    turn["speaker"].as_str()?.to_owned(),
                    turn.get("text").and_then(Value::as_str)?.to_owned(),
                    turn["dia_id"].as_str()?.to_owned(),
                ))
            })
            .collect();
        out.push(Session { number, at, turns });
    }
    out.sort_by_key(|s| s.number);
    out
}

/// The transcript of a session: one message per turn, `Speaker: text`, the first speaker
/// as the user.
fn transcript(session: &Session, first_speaker: &str) -> String {
    session
        .turns
        .iter()
        .map(|(speaker, text, _)| {
            let role = if speaker == first_speaker {
                "user"
            } else {
                "assistant"
            };
            let line = json!({"role": role, "content": format!("{speaker}: {text}")});
            format!("{line}\n")
        })
        .collect()
}

fn store(
    options: &MemoryOptions,
    index: usize,
    dir: &tempfile::TempDir,
) -> Result<Arc<dyn LongTermStore>, Error> {
    let config = StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false);
    Ok(match &options.backend {
        Backend::Memory => Arc::new(InMemoryLongTermStore::new(config, Arc::new(SystemClock))),
        Backend::Sqlite => Arc::new(
            SqliteFactStore::open_with(
                dir.path().join("memory.db"),
                &format!("eval:{index}"),
                config,
                SqliteOptions::default().with_search_cache(options.search_cache),
                Arc::new(SystemClock),
            )
            .map_err(|e| Error::Failed(format!("sqlite store: {e}")))?,
        ),
        Backend::Postgres(url) => Arc::new(
            PgFactStore::open_with(
                url,
                &crate::locomo::fresh_scope(index),
                config,
                PgOptions::default().with_search_cache(options.search_cache),
                Arc::new(SystemClock),
            )
            .map_err(|e| Error::Failed(format!("postgres store: {e}")))?,
        ),
    })
}

/// Runs the evaluation over `samples`.
pub(crate) fn evaluate(samples: &[Value], options: &MemoryOptions) -> Result<Value, Error> {
    let embedder = match &options.model {
        None => None,
        Some(dir) => Some(Arc::new(
            fact_retrieve::OnnxEmbedder::open(dir)
                .map_err(|e| Error::Failed(format!("model: {e}")))?,
        ) as Arc<dyn fact_retrieve::Embedder>),
    };
    let mut recall = [0.0f64; KS.len()];
    let mut latencies_us: Vec<f64> = Vec::new();
    let mut questions = 0usize;
    let mut messages = 0usize;
    let mut temporal = (0usize, 0usize);
    let mut archive_us: Vec<f64> = Vec::new();
    let mut facts_added = 0usize;
    let mut facts_recall = [0.0f64; KS.len()];
    let mut categories: std::collections::BTreeMap<i64, Category> = Default::default();
    let read = ReadOptions::default().with_recency(options.facts.recency_half_life, None);
    for (index, sample) in samples.iter().enumerate() {
        if let Some((first, last)) = options.samples
            && !(first..=last).contains(&index)
        {
            continue;
        }
        let dir = tempfile::TempDir::new()
            .map_err(|e| Error::Failed(format!("cannot make a temporary directory: {e}")))?;
        let store = store(options, index, &dir)?;
        let mut memory = MemoryService::new(store, Arc::new(SystemClock));
        if let Some((context, weight)) = options.context {
            memory = memory.with_message_context(context, weight);
        }
        if let Some(embedder) = &embedder {
            memory = memory
                .with_embedder(embedder.clone())
                .map_err(|e| Error::Failed(format!("embedder: {e}")))?;
        }
        let first_speaker = sample
            .get("conversation")
            .and_then(|c| c.get("speaker_a"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // (episode, turn) → dia id, and dia id → the session's date.
        let mut dia: HashMap<(String, usize), String> = HashMap::new();
        let mut dated: HashMap<String, String> = HashMap::new();
        // The observations of every session, added in one batch: `speaker said …` facts
        // share their key, and a later batch would supersede the earlier sessions' ones
        // (the fact protocol, `eval.rs`, adds a sample's facts in one batch too).
        let mut observations: Vec<SessionFact> = Vec::new();
        for session in sessions(sample) {
            let text = transcript(&session, &first_speaker);
            let title = format!("session {}", session.number);
            let start = Instant::now();
            let report = memory
                .archive(
                    ArchiveRequest::new(&text)
                        .with_title(&title)
                        .with_session_time(Some(session.at)),
                )
                .map_err(|e| Error::Failed(format!("archive: {e}")))?;
            archive_us.push(start.elapsed().as_secs_f64() * 1e6);
            messages += report.messages;
            if options.facts.facts {
                observations.extend(observation_facts(sample, session.number, session.at));
            }
            let day = session
                .at
                .to_string()
                .get(..10)
                .unwrap_or_default()
                .to_owned();
            for (turn, (_, _, id)) in session.turns.iter().enumerate() {
                dia.insert((report.episode_id.clone(), turn), id.clone());
                dated.insert(id.clone(), day.clone());
            }
        }
        if !observations.is_empty() {
            facts_added += observations.len();
            memory
                .store()
                .add(observations)
                .map_err(|e| Error::Failed(format!("add the observations: {e}")))?;
        }
        for qa in sample["qa"].as_array().into_iter().flatten() {
            let gold: HashSet<String> = qa["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect();
            let category = qa["category"].as_i64();
            if category == Some(5) || gold.is_empty() {
                continue;
            }
            let question = qa["question"].as_str().unwrap_or_default();
            let start = Instant::now();
            let found = memory
                .recall(question, MAX_K, 1_000_000, &read)
                .map_err(|e| Error::Failed(format!("recall: {e}")))?;
            latencies_us.push(start.elapsed().as_secs_f64() * 1e6);
            questions += 1;
            if options.facts.facts {
                let ranked = || found.facts.iter().map(|s| &s.fact);
                for (slot, k) in facts_recall.iter_mut().zip(KS) {
                    *slot += share(&gold, ranked().take(k));
                }
                let entry = categories.entry(category.unwrap_or(0)).or_default();
                entry.questions += 1;
                entry.at10 += share(&gold, ranked().take(10));
                entry.at20 += share(&gold, ranked().take(20));
                if options.facts.expand {
                    let expanded = memory
                        .recall(question, 10, 1_000_000, &read.clone().with_expand(1))
                        .map_err(|e| Error::Failed(format!("recall: {e}")))?;
                    let facts = expanded.facts.iter().map(|s| &s.fact);
                    let neighbours = expanded.expanded.iter().map(|n| &n.fact);
                    entry.expanded10 += share(&gold, facts.chain(neighbours));
                }
            }
            let mut hits: Vec<(&str, &MessageHit)> = found
                .episodes
                .iter()
                .flat_map(|e| e.messages.iter().map(move |m| (e.id.as_str(), m)))
                .collect();
            hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
            let ranked: Vec<(Option<&String>, &MessageHit)> = hits
                .iter()
                .map(|(episode, hit)| (dia.get(&((*episode).to_owned(), hit.turn)), *hit))
                .collect();
            for (slot, k) in recall.iter_mut().zip(KS) {
                let got: HashSet<&str> = ranked
                    .iter()
                    .take(k)
                    .filter_map(|(id, _)| id.map(String::as_str))
                    .collect();
                *slot += gold.iter().filter(|g| got.contains(g.as_str())).count() as f64
                    / gold.len() as f64;
            }
            if category == Some(2) {
                for (id, hit) in ranked.iter().take(10) {
                    let Some(id) = id else { continue };
                    if !gold.contains(*id) {
                        continue;
                    }
                    temporal.1 += 1;
                    let line = recall_message_line(hit);
                    if dated
                        .get(*id)
                        .is_some_and(|day| line.contains(&format!("[{day}]")))
                        && found.text.contains(&line)
                    {
                        temporal.0 += 1;
                    }
                }
            }
        }
    }
    if questions == 0 || messages == 0 {
        return Err(Error::Failed(
            "the data has no answerable questions or no turns".into(),
        ));
    }
    latencies_us.sort_by(f64::total_cmp);
    archive_us.sort_by(f64::total_cmp);
    let at = |list: &[f64], q: f64| {
        list.get(((list.len() as f64) * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let round = |x: f64, digits: i32| (x * 10f64.powi(digits)).round() / 10f64.powi(digits);
    let mut out = serde_json::Map::new();
    let backend = match (&options.backend, options.search_cache) {
        (Backend::Memory, _) => "",
        (Backend::Sqlite, true) => "-sqlite",
        (Backend::Sqlite, false) => "-sqlite-fts5",
        (Backend::Postgres(_), true) => "-postgres",
        (Backend::Postgres(_), false) => "-postgres-gin",
    };
    let model = if options.model.is_some() {
        "-hybrid"
    } else {
        ""
    };
    out.insert(
        "system".into(),
        format!("factmem-memory{backend}{model}").into(),
    );
    out.insert("corpus".into(), "turns".into());
    if let Some((context, weight)) = options.context {
        out.insert("context".into(), context.into());
        out.insert("context_weight".into(), weight.into());
    }
    out.insert("questions".into(), questions.into());
    out.insert("messages".into(), messages.into());
    for (k, total) in KS.iter().zip(recall) {
        out.insert(
            format!("recall@{k}"),
            round(total / questions as f64, 4).into(),
        );
    }
    if let Some((first, last)) = options.samples {
        out.insert("samples".into(), format!("{first}-{last}").into());
    }
    if temporal.1 > 0 {
        out.insert(
            "temporal_dated".into(),
            round(temporal.0 as f64 / temporal.1 as f64, 4).into(),
        );
    }
    if options.facts.facts {
        out.insert("facts".into(), facts_added.into());
        for (k, total) in KS.iter().zip(facts_recall) {
            out.insert(
                format!("facts_recall@{k}"),
                round(total / questions as f64, 4).into(),
            );
        }
        let mut by_category = serde_json::Map::new();
        for (category, c) in &categories {
            let n = c.questions.max(1) as f64;
            let mut entry = serde_json::Map::new();
            entry.insert("questions".into(), c.questions.into());
            entry.insert("recall@10".into(), round(c.at10 / n, 4).into());
            entry.insert("recall@20".into(), round(c.at20 / n, 4).into());
            if options.facts.expand {
                entry.insert("expanded@10".into(), round(c.expanded10 / n, 4).into());
            }
            by_category.insert(category.to_string(), Value::Object(entry));
        }
        out.insert("facts_by_category".into(), Value::Object(by_category));
        if let Some(half_life) = options.facts.recency_half_life {
            out.insert("recency_half_life_secs".into(), half_life.as_secs().into());
        }
    }
    out.insert("p50_us".into(), round(at(&latencies_us, 0.5), 1).into());
    out.insert("p95_us".into(), round(at(&latencies_us, 0.95), 1).into());
    out.insert(
        "archive_p50_us".into(),
        round(at(&archive_us, 0.5), 1).into(),
    );
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn session_dates_parse() {
        for (text, want) in [
            ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
            ("12:48 am on 1 February, 2023", "2023-02-01T00:48:00Z"),
            ("12:05 pm on 30 June, 2022", "2022-06-30T12:05:00Z"),
        ] {
            assert_eq!(session_time(text).unwrap().to_string(), want, "{text}");
        }
        for bad in [
            "",
            "8 May 2023",
            "25:00 pm on 8 May, 2023",
            "1:56 pm on 8 Mai, 2023",
        ] {
            assert!(session_time(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_memory_protocol_finds_turns_with_their_dates() {
        let sample = json!({
            "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog, Pixel!"},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice. I am training for a marathon."}
                ],
                "session_2_date_time": "9:00 am on 1 June, 2023",
                "session_2": [
                    {"speaker": "Ann", "dia_id": "D2:1", "text": "Pixel learned to fetch."}
                ]},
            "qa": [
                {"question": "What is the name of Ann's dog?", "evidence": ["D1:1"], "category": 1},
                {"question": "When did Bob train for a marathon?", "evidence": ["D1:2"], "category": 2},
                {"question": "Unanswerable?", "evidence": ["D1:2"], "category": 5}
            ]
        });
        let options = MemoryOptions {
            backend: Backend::Memory,
            samples: None,
            model: None,
            context: None,
            search_cache: true,
            facts: FactOptions::default(),
        };
        let report = evaluate(std::slice::from_ref(&sample), &options).unwrap();
        assert_eq!(report["questions"], 2);
        assert_eq!(report["messages"], 3);
        assert_eq!(report["recall@20"], 1.0);
        assert_eq!(report["temporal_dated"], 1.0);
        let sqlite = MemoryOptions {
            backend: Backend::Sqlite,
            ..options
        };
        let on_sqlite = evaluate(std::slice::from_ref(&sample), &sqlite).unwrap();
        assert_eq!(on_sqlite["system"], "factmem-memory-sqlite");
        // Without the search cache: the same ranking, through the database alone.
        let through_fts5 = MemoryOptions {
            search_cache: false,
            ..sqlite
        };
        let on_fts5 = evaluate(std::slice::from_ref(&sample), &through_fts5).unwrap();
        assert_eq!(on_fts5["system"], "factmem-memory-sqlite-fts5");
        for k in ["recall@1", "recall@5", "recall@10", "recall@20"] {
            assert_eq!(on_sqlite[k], report[k], "{k}");
            assert_eq!(on_fts5[k], report[k], "{k}");
        }
        assert!(report.get("facts_by_category").is_none());
    }

    #[test]
    fn observations_become_dated_facts_whose_recall_is_measured_by_category() {
        let sample = json!({
            "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog, Pixel!"},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "I run marathons in Lisbon."}
                ],
                "session_2_date_time": "9:00 am on 1 June, 2023",
                "session_2": [
                    {"speaker": "Ann", "dia_id": "D2:1", "text": "Pixel learned to fetch."}
                ]},
            "observation": {
                "session_1_observation": {
                    "Ann": [["Ann adopted a dog named Pixel.", "D1:1"]],
                    "Bob": [["Bob runs marathons in Lisbon.", ["D1:2"]]]
                },
                "session_2_observation": {
                    "Ann": [["Ann's dog Pixel learned to fetch.", "D2:1"]]
                }
            },
            "qa": [
                {"question": "What is the name of Ann's dog?", "evidence": ["D1:1"], "category": 1},
                {"question": "What did Ann's dog learn, and where does Bob run?",
                 "evidence": ["D2:1", "D1:2"], "category": 3}
            ]
        });
        let options = MemoryOptions {
            backend: Backend::Memory,
            samples: None,
            model: None,
            context: None,
            search_cache: true,
            facts: FactOptions {
                facts: true,
                expand: true,
                recency_half_life: Some(Duration::from_secs(30 * 86_400)),
            },
        };
        let report = evaluate(&[sample], &options).unwrap();
        // Three observations, one batch: none supersedes another.
        assert_eq!(report["facts"], 3);
        assert_eq!(report["recency_half_life_secs"], 30 * 86_400);
        let by_category = &report["facts_by_category"];
        assert_eq!(by_category["1"]["questions"], 1);
        assert_eq!(by_category["1"]["recall@10"], 1.0);
        assert_eq!(by_category["3"]["recall@20"], 1.0);
        assert!(by_category["3"]["expanded@10"].as_f64().unwrap() >= 0.5);
        assert_eq!(report["facts_recall@20"], 1.0);
    }
}
