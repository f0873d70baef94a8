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
//! On SQLite and PostgreSQL, messages are always searched through the database's own index
//! (FTS5, or PostgreSQL's GIN index): the stores keep no message index in process. What
//! `--search-cache off` changes is the fact search inside `recall` (the store's in-process
//! term index, or the database's); the report's `system` then ends in `-fts5` or `-gin`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use dispatch_runtime::{ArchiveRequest, MemoryService, ReadOptions};
use fact_model::{SystemClock, Timestamp};
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
                .recall(question, MAX_K, 1_000_000, &ReadOptions::default())
                .map_err(|e| Error::Failed(format!("recall: {e}")))?;
            latencies_us.push(start.elapsed().as_secs_f64() * 1e6);
            questions += 1;
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
        let on_fts5 = evaluate(&[sample], &through_fts5).unwrap();
        assert_eq!(on_fts5["system"], "factmem-memory-sqlite-fts5");
        for k in ["recall@1", "recall@5", "recall@10", "recall@20"] {
            assert_eq!(on_sqlite[k], report[k], "{k}");
            assert_eq!(on_fts5[k], report[k], "{k}");
        }
    }
}
