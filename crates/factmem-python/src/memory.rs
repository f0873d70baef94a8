//! `factmem._factmem.Memory`: one scope of long-term memory (`dispatch_runtime`'s
//! [`MemoryService`]) for Python, on a SQLite file, a PostgreSQL server or in process
//! memory.
//!
//! Every method checks its arguments first (a `TypeError` or `InvalidInput` naming the
//! parameter), then releases the GIL for the store and model work. The service sits
//! behind a lock that is held only to clone its `Arc`: threads share one `Memory`, and
//! `close` takes the service out, so later calls raise `factmem.Error` (code `closed`)
//! while calls already running finish on their own reference.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use dispatch_runtime::durable::{self, Database};
use dispatch_runtime::memory_protocol::{MAX_SEARCH_LIMIT, add_status, client_extractor};
use dispatch_runtime::reexports::{
    Clock, ExportFile, ExportOptions, ExportText, FactId, InMemoryLongTermStore, ModelFiles,
    SessionFact, StoreError, SystemClock,
};
use dispatch_runtime::{
    AddOutcome, ArchiveReport, ArchiveRequest, MAX_NEIGHBOUR_DEPTH, MemoryChange, MemoryError,
    MemoryService, NewMemory, ReadOptions, mem0_export, write_whole,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};

use crate::convert;
use crate::errors::{self, Kind};
use crate::llm::{self, PyLlm};

/// The most tokens `recall` and `format` may be asked to fit (a million).
const MAX_TOKENS: usize = 1_000_000;
/// The longest `timeout` of the `llm`, in seconds (a day).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// The source of facts added through `add_fact`.
const SOURCE: &str = "python";

/// What `add_fact` answers: the status (`added`, `already_current`, `duplicate`,
/// `arrived_superseded`, `skipped`), the fact, the ids it superseded, and for a duplicate
/// the id of the fact that already states it.
type AddFactAnswer<'py> = (&'static str, Bound<'py, PyAny>, Vec<String>, Option<String>);
/// What `add` answers: the episode's id, title, message count and start (µs), whether a
/// model extracted, the facts added, and the ids refreshed, superseded, removed, arrived
/// superseded; the skipped count, and the diagnostics.
type AddAnswer<'py> = (
    String,
    String,
    usize,
    i64,
    bool,
    Bound<'py, PyAny>,
    (Vec<String>, Vec<String>, Vec<String>, Vec<String>),
    usize,
    Vec<String>,
);
/// A message that answered a recall: its turn, role, content, time (µs) and score.
type MessageTuple = (usize, &'static str, String, Option<i64>, f64);
/// An episode that answered a recall: id, title, time (µs), summary, messages.
type EpisodeTuple = (String, String, i64, String, Vec<MessageTuple>);
/// What `recall` answers: the text, its tokens, the facts and the episodes.
/// A recall: its text, tokens, scored facts, episodes, and the neighbours an `expand`
/// added, as `(score, via, fact)`.
type RecallAnswer<'py> = (
    String,
    usize,
    Bound<'py, PyAny>,
    Vec<EpisodeTuple>,
    Bound<'py, PyAny>,
);

/// One scope of long-term memory. See the module documentation and the package's stubs.
#[pyclass(name = "Memory", module = "factmem._factmem", frozen)]
pub struct PyMemory {
    service: RwLock<Option<Arc<MemoryService>>>,
    /// Where it lives, for `repr` (a PostgreSQL URL without its password).
    label: String,
    /// Whether an embedder makes `search(hybrid=True)` and recall semantic.
    semantic: bool,
    /// The scope, which an export's header names.
    scope: String,
}

impl PyMemory {
    /// The `limit`, read options and `hybrid` flag of `search` and `search_many`, from
    /// their arguments `limit`, `as_of`, `hybrid`, `filter`, `recency_half_life` and
    /// `reference_date`; `hybrid` without a model is `InvalidInput`.
    fn search_options(
        &self,
        py: Python<'_>,
        [
            limit,
            as_of,
            hybrid,
            filter,
            recency_half_life,
            reference_date,
        ]: [&Bound<'_, PyAny>; 6],
    ) -> PyResult<(usize, ReadOptions, bool)> {
        let limit = convert::count(py, "limit", limit, 0, MAX_SEARCH_LIMIT)?;
        let read = convert::read(py, as_of, filter)?.with_recency(
            convert::half_life(py, recency_half_life)?,
            convert::instant(py, "reference_date", reference_date)?,
        );
        let hybrid = flag("hybrid", hybrid)?;
        if hybrid && !self.semantic {
            return Err(errors::invalid(
                py,
                "hybrid",
                "needs a sentence-embedding model: Memory(embedder=\"minilm\" or DIR)",
            ));
        }
        Ok((limit, read, hybrid))
    }

    /// The open service, or `factmem.Error` (code `closed`).
    fn service(&self, py: Python<'_>) -> PyResult<Arc<MemoryService>> {
        self.service
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| raise_closed(py))
    }

    /// Runs `work` on the open service with the GIL released; its error as the
    /// package's exception.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&MemoryService) -> Result<T, MemoryError> + Send,
    ) -> PyResult<T> {
        let service = self.service(py)?;
        py.detach(move || work(&service))
            .map_err(|error| memory_error(py, &error))
    }
}

impl Drop for PyMemory {
    /// The store goes without the GIL, as in `close`: dropping a SQLite connection or a
    /// PostgreSQL pool can wait, and a log event on another thread may want the GIL.
    fn drop(&mut self) {
        let taken = self
            .service
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if taken.is_some() {
            let _ = Python::try_attach(|py| py.detach(move || drop(taken)));
        }
    }
}

fn raise_closed(py: Python<'_>) -> PyErr {
    errors::raise(py, Kind::Error, "closed", "this Memory is closed", &[])
}

/// A memory error as the package's exception; an extraction that failed because the
/// `llm` raised chains that exception as `__cause__`.
fn memory_error(py: Python<'_>, error: &MemoryError) -> PyErr {
    let raised = errors::memory_error(py, error);
    if matches!(error, MemoryError::Extraction { .. }) {
        raised.set_cause(py, llm::take_cause());
    }
    raised
}

/// The sentence-embedding model a `Memory` opens: a model directory, or the files of a
/// named model wherever its packages put them (`factmem._models.resolve`).
#[derive(Debug)]
enum EmbedderArg {
    /// A directory with `model.onnx`, `tokenizer.json` and ONNX Runtime.
    Dir(PathBuf),
    /// A named model's files: `(name, model, tokenizer, runtime)`.
    Files(ModelFiles),
}

impl EmbedderArg {
    /// The `embedder` argument: `None`, a `str` (a directory) or a tuple of four `str`
    /// (`runtime` may be `None`); `TypeError` naming the parameter otherwise.
    fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        const EXPECTED: &str = "str or a (name, model, tokenizer, runtime) tuple";
        if value.is_none() {
            return Ok(None);
        }
        if value.is_instance_of::<PyString>() {
            return Ok(Some(EmbedderArg::Dir(PathBuf::from(convert::text(
                "embedder", value,
            )?))));
        }
        let Ok(tuple) = value.cast::<PyTuple>() else {
            return Err(errors::wrong_type("embedder", EXPECTED, value));
        };
        if tuple.len() != 4 {
            return Err(errors::wrong_type("embedder", EXPECTED, value));
        }
        let name = convert::text("embedder[0] (name)", &tuple.get_item(0)?)?;
        let model = convert::text("embedder[1] (model)", &tuple.get_item(1)?)?;
        let tokenizer = convert::text("embedder[2] (tokenizer)", &tuple.get_item(2)?)?;
        let runtime = convert::optional_text("embedder[3] (runtime)", &tuple.get_item(3)?)?;
        Ok(Some(EmbedderArg::Files(ModelFiles::new(
            name,
            model,
            tokenizer,
            runtime.map(PathBuf::from),
        ))))
    }

    /// What the error messages call it: the directory, or the model's name.
    #[cfg(not(feature = "onnx"))]
    fn label(&self) -> String {
        match self {
            EmbedderArg::Dir(dir) => dir.display().to_string(),
            EmbedderArg::Files(files) => files.name.clone(),
        }
    }
}

/// Why a memory could not be opened: the exception's class, code and message.
struct OpenError {
    kind: Kind,
    code: &'static str,
    message: String,
}

impl OpenError {
    fn new(kind: Kind, code: &'static str, message: impl Into<String>) -> Self {
        OpenError {
            kind,
            code,
            message: message.into(),
        }
    }
}

/// The service over `db` (`None`: process memory), scope `scope`.
fn open(db: Option<&str>, scope: &str, clock: Arc<dyn Clock>) -> Result<MemoryService, OpenError> {
    let Some(db) = db else {
        return Ok(MemoryService::new(
            Arc::new(InMemoryLongTermStore::default()),
            clock,
        ));
    };
    let database: Database = db
        .parse()
        .map_err(|e| OpenError::new(Kind::InvalidInput, "invalid_input", format!("db: {e}")))?;
    #[allow(irrefutable_let_patterns)] // Both backends are compiled in.
    if let Database::Sqlite(path) = &database {
        create_parent(path)?;
    }
    durable::open_memory_on(&database, scope, clock)
        .map_err(|e| OpenError::new(Kind::Store, e.code(), e.to_string()))
}

/// Creates the directory of a SQLite file when it is missing.
fn create_parent(path: &Path) -> Result<(), OpenError> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() && !parent.exists() => {
            std::fs::create_dir_all(parent).map_err(|e| {
                OpenError::new(
                    Kind::Store,
                    "io",
                    format!("cannot create {}: {e}", parent.display()),
                )
            })
        }
        _ => Ok(()),
    }
}

/// The label of `db` for `repr`: a PostgreSQL URL without its password.
fn label(db: Option<&str>) -> String {
    match db.map(str::parse::<Database>) {
        None => ":memory:".to_owned(),
        Some(Ok(database)) => database.to_string(),
        Some(Err(_)) => "?".to_owned(),
    }
}

/// A timeout argument in seconds: a positive real number up to a day.
fn timeout(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if !(value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>())
        || value.is_instance_of::<PyBool>()
    {
        return Err(errors::wrong_type("timeout", "float", value));
    }
    let seconds: f64 = value
        .extract()
        .map_err(|_| errors::invalid(py, "timeout", "out of range"))?;
    if seconds > 0.0 && seconds <= MAX_TIMEOUT_SECS {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(errors::invalid(
            py,
            "timeout",
            &format!("must be above 0 and at most {MAX_TIMEOUT_SECS} seconds"),
        ))
    }
}

#[pymethods]
impl PyMemory {
    /// Opens the memory of `scope` in `db` (see the package's stubs).
    #[new]
    #[pyo3(signature = (db, scope, embedder, llm, timeout))]
    fn new(
        py: Python<'_>,
        db: &Bound<'_, PyAny>,
        scope: &Bound<'_, PyAny>,
        embedder: &Bound<'_, PyAny>,
        llm: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        crate::logging::install();
        let db = convert::optional_text("db", db)?;
        let scope = convert::text("scope", scope)?;
        if scope.trim().is_empty() {
            return Err(errors::invalid(py, "scope", "must not be empty"));
        }
        let embedder = EmbedderArg::from_py(embedder)?;
        let llm = if llm.is_none() {
            None
        } else if llm.is_callable() {
            Some(llm.clone().unbind())
        } else {
            return Err(errors::wrong_type("llm", "a callable str -> str", llm));
        };
        let timeout = self::timeout(py, timeout)?;
        if db.as_deref().is_some_and(|db| db.trim().is_empty()) {
            return Err(errors::invalid(py, "db", "must not be empty"));
        }
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let label = label(db.as_deref());
        let semantic = embedder.is_some();
        let opened = py.detach(|| -> Result<MemoryService, OpenError> {
            let mut service = open(db.as_deref(), &scope, clock.clone())?;
            if let Some(llm) = llm {
                let client = Arc::new(PyLlm::new(llm, timeout));
                service = service.with_extractor(client_extractor(client, clock));
            }
            if let Some(embedder) = embedder {
                service = with_embedder(service, &embedder)?;
            }
            Ok(service)
        });
        match opened {
            Ok(service) => Ok(PyMemory {
                service: RwLock::new(Some(Arc::new(service))),
                label,
                semantic,
                scope,
            }),
            Err(error) => Err(errors::raise(
                py,
                error.kind,
                error.code,
                &error.message,
                &[],
            )),
        }
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.service
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Closes the store (the last call running keeps it until it returns); later calls
    /// raise `factmem.Error`. Closing twice is allowed.
    fn close(&self, py: Python<'_>) {
        let taken = self
            .service
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // Dropping a SQLite connection or a PostgreSQL pool can block: without the GIL.
        py.detach(move || drop(taken));
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { ", closed" } else { "" };
        format!("factmem.Memory({}{state})", self.label)
    }

    /// Remembers one fact; see the stubs for the answer.
    #[pyo3(signature = (subject, relation, object, statement, category, confidence, valid_from, metadata))]
    #[allow(clippy::too_many_arguments)] // One per Python keyword.
    fn add_fact<'py>(
        &self,
        py: Python<'py>,
        subject: &Bound<'_, PyAny>,
        relation: &Bound<'_, PyAny>,
        object: &Bound<'_, PyAny>,
        statement: &Bound<'_, PyAny>,
        category: &Bound<'_, PyAny>,
        confidence: &Bound<'_, PyAny>,
        valid_from: &Bound<'_, PyAny>,
        metadata: &Bound<'_, PyAny>,
    ) -> PyResult<AddFactAnswer<'py>> {
        let new = new_memory(
            py,
            [
                subject, relation, object, statement, category, confidence, valid_from, metadata,
            ],
        )?;
        let outcome = self.run(py, move |memory| memory.add(new))?;
        add_answer(py, &outcome)
    }

    /// Remembers many facts in one transaction, each a tuple of `add_fact`'s arguments
    /// in its order; one answer per fact, as `add_fact` answers.
    fn add_facts<'py>(
        &self,
        py: Python<'py>,
        facts: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<AddFactAnswer<'py>>> {
        let mut news = Vec::new();
        for item in facts.try_iter()? {
            let item = item?;
            let fields: [Bound<'_, PyAny>; 8] = item
                .extract()
                .map_err(|_| errors::wrong_type("facts", "a sequence of 8-tuples", &item))?;
            news.push(new_memory(py, fields.each_ref())?);
        }
        let outcomes = self.run(py, move |memory| memory.add_many(news))?;
        outcomes.iter().map(|o| add_answer(py, o)).collect()
    }

    /// Archives a conversation (JSON Lines) and extracts its facts with the `llm`.
    #[pyo3(signature = (transcript, title, session_time, metadata))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        transcript: &Bound<'_, PyAny>,
        title: &Bound<'_, PyAny>,
        session_time: &Bound<'_, PyAny>,
        metadata: &Bound<'_, PyAny>,
    ) -> PyResult<AddAnswer<'py>> {
        let transcript = convert::text("messages", transcript)?;
        let title = convert::optional_text("title", title)?;
        let session_time = convert::instant(py, "session_time", session_time)?;
        let metadata = convert::metadata(py, "metadata", metadata)?;
        let (report, added) = self.run(py, move |memory| {
            let mut request = ArchiveRequest::new(&transcript).with_session_time(session_time);
            if let Some(title) = title.as_deref() {
                request = request.with_title(title);
            }
            if let Some(metadata) = metadata {
                request = request.with_metadata(metadata);
            }
            let report = memory.archive(request)?;
            let added = added_facts(memory, &report)?;
            Ok((report, added))
        })?;
        let extracted = report.changes.is_some();
        let changes = report.changes.unwrap_or_default();
        Ok((
            report.episode_id,
            report.title,
            report.messages,
            report.started_at.unix_micros(),
            extracted,
            convert::facts(py, &added)?,
            (
                convert::ids(&changes.refreshed),
                convert::ids(&changes.superseded),
                convert::ids(&changes.removed),
                convert::ids(&changes.arrived_superseded),
            ),
            changes.skipped,
            report.diagnostics,
        ))
    }

    /// The current facts (or those valid at `as_of`) that match `query`, best first.
    #[pyo3(signature = (query, limit, as_of, hybrid, filter, recency_half_life, reference_date))]
    #[allow(clippy::too_many_arguments)] // One per Python keyword.
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        hybrid: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
        recency_half_life: &Bound<'_, PyAny>,
        reference_date: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let query = convert::text("query", query)?;
        let (limit, read, hybrid) = self.search_options(
            py,
            [
                limit,
                as_of,
                hybrid,
                filter,
                recency_half_life,
                reference_date,
            ],
        )?;
        let found = self.run(py, move |memory| {
            if hybrid {
                memory.search_hybrid(&query, limit, &read)
            } else {
                memory.search(&query, limit, &read)
            }
        })?;
        convert::scored(py, &found)
    }

    /// Answers many searches in one call, with the GIL released once, as `search`
    /// answers each.
    #[pyo3(signature = (queries, limit, as_of, hybrid, filter, recency_half_life, reference_date))]
    #[allow(clippy::too_many_arguments)] // One per Python keyword.
    fn search_many<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        hybrid: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
        recency_half_life: &Bound<'_, PyAny>,
        reference_date: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let mut texts: Vec<String> = Vec::new();
        for query in queries.try_iter()? {
            texts.push(convert::text("queries", &query?)?);
        }
        let (limit, read, hybrid) = self.search_options(
            py,
            [
                limit,
                as_of,
                hybrid,
                filter,
                recency_half_life,
                reference_date,
            ],
        )?;
        let found = self.run(py, move |memory| {
            if hybrid {
                texts
                    .iter()
                    .map(|query| memory.search_hybrid(query, limit, &read))
                    .collect()
            } else {
                memory.search_many(&texts, limit, &read)
            }
        })?;
        // A fact several searches found crosses into Python once: its row is shared.
        let mut rows: HashMap<FactId, Bound<'py, PyAny>> = HashMap::new();
        let mut answers = Vec::with_capacity(found.len());
        for found in &found {
            let mut scored = Vec::with_capacity(found.len());
            for hit in found {
                let row = match rows.get(&hit.fact.id()) {
                    Some(row) => row.clone(),
                    None => {
                        let row = convert::fact_tuple(&hit.fact).into_pyobject(py)?.into_any();
                        rows.insert(hit.fact.id(), row.clone());
                        row
                    }
                };
                scored.push((hit.score, row));
            }
            answers.push(scored.into_pyobject(py)?.into_any());
        }
        Ok(answers)
    }

    /// The facts and episode messages that answer `query`, rendered within `max_tokens`.
    #[pyo3(signature = (query, max_tokens, limit, as_of, filter, recency_half_life, reference_date, expand))]
    #[allow(clippy::too_many_arguments)] // One per Python keyword.
    fn recall<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'_, PyAny>,
        max_tokens: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
        recency_half_life: &Bound<'_, PyAny>,
        reference_date: &Bound<'_, PyAny>,
        expand: &Bound<'_, PyAny>,
    ) -> PyResult<RecallAnswer<'py>> {
        let query = convert::text("query", query)?;
        let max_tokens = convert::count(py, "max_tokens", max_tokens, 0, MAX_TOKENS)?;
        let limit = convert::count(py, "limit", limit, 0, MAX_SEARCH_LIMIT)?;
        let expand = convert::count(py, "expand", expand, 0, 1)?;
        let read = convert::read(py, as_of, filter)?
            .with_recency(
                convert::half_life(py, recency_half_life)?,
                convert::instant(py, "reference_date", reference_date)?,
            )
            .with_expand(expand);
        let recall = self.run(py, move |memory| {
            memory.recall(&query, limit, max_tokens, &read)
        })?;
        let episodes = recall
            .episodes
            .iter()
            .map(|episode| {
                let messages = episode
                    .messages
                    .iter()
                    .map(|hit| {
                        (
                            hit.turn,
                            hit.message.role.as_str(),
                            hit.message.content.clone(),
                            hit.message.timestamp.map(|at| at.unix_micros()),
                            hit.score,
                        )
                    })
                    .collect();
                (
                    episode.id.clone(),
                    episode.title.clone(),
                    episode.at.unix_micros(),
                    episode.summary.clone(),
                    messages,
                )
            })
            .collect();
        let expanded = recall
            .expanded
            .iter()
            .map(|n| (n.score, n.via.to_string(), convert::fact_tuple(&n.fact)))
            .collect::<Vec<_>>()
            .into_pyobject(py)?
            .into_any();
        Ok((
            recall.text,
            recall.tokens,
            convert::scored(py, &recall.facts)?,
            episodes,
            expanded,
        ))
    }

    /// The latest version of a fact, current or not.
    fn get<'py>(&self, py: Python<'py>, id: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let id = convert::text("id", id)?;
        let fact = self.run(py, move |memory| memory.get(&id))?;
        convert::fact(py, &fact)
    }

    /// Every current fact (or every fact valid at `as_of`), oldest first.
    #[pyo3(signature = (as_of, filter))]
    fn get_all<'py>(
        &self,
        py: Python<'py>,
        as_of: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let read = convert::read(py, as_of, filter)?;
        let facts = self.run(py, move |memory| memory.list(&read))?;
        convert::facts(py, &facts)
    }

    /// Changes a fact; answers the fact after the change and the id it superseded (a new
    /// object makes a new fact).
    #[pyo3(signature = (id, statement, object, category, confidence, metadata))]
    #[allow(clippy::too_many_arguments)] // One per Python keyword.
    fn update<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'_, PyAny>,
        statement: &Bound<'_, PyAny>,
        object: &Bound<'_, PyAny>,
        category: &Bound<'_, PyAny>,
        confidence: &Bound<'_, PyAny>,
        metadata: &Bound<'_, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Option<String>)> {
        let id = convert::text("id", id)?;
        let change = MemoryChange {
            statement: convert::optional_text("statement", statement)?,
            object: convert::optional_text("object", object)?,
            category: if category.is_none() {
                None
            } else {
                Some(convert::category(py, "category", category)?)
            },
            confidence: if confidence.is_none() {
                None
            } else {
                Some(convert::confidence(py, "confidence", confidence)?)
            },
            metadata: convert::metadata(py, "metadata", metadata)?,
        };
        if change == MemoryChange::default() {
            return Err(errors::invalid(
                py,
                "update",
                "give at least one of statement, object, category, confidence, metadata",
            ));
        }
        let (fact, old) = self.run(py, move |memory| {
            let old = memory.get(&id)?;
            let fact = memory.update(&id, change)?;
            Ok((fact, old.id()))
        })?;
        let superseded = (fact.id() != old).then(|| old.to_string());
        Ok((convert::fact(py, &fact)?, superseded))
    }

    /// Deletes every version of a fact; answers how many.
    fn delete(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<usize> {
        let id = convert::text("id", id)?;
        self.run(py, move |memory| memory.delete(&id))
    }

    /// Erases the whole scope in one transaction; what it deleted, by part.
    fn erase<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let erased = self.run(py, MemoryService::erase)?;
        let counts = PyDict::new(py);
        for (part, n) in [
            ("versions", erased.versions),
            ("embeddings", erased.embeddings),
            ("token_vectors", erased.token_vectors),
            ("episodes", erased.episodes),
            ("messages", erased.messages),
            ("aliases", erased.aliases),
            ("profile_versions", erased.profile_versions),
            ("keys", erased.keys),
        ] {
            counts.set_item(part, n)?;
        }
        Ok(counts)
    }

    /// Writes the scope's memory to the file at `path` (docs/export-format.md), made whole
    /// beside it and renamed into place; the records written and the digest.
    #[pyo3(signature = (path, as_of))]
    fn export<'py>(
        &self,
        py: Python<'py>,
        path: &Bound<'py, PyAny>,
        as_of: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let path = PathBuf::from(convert::text("path", path)?);
        let mut options = ExportOptions::default();
        options.as_of = convert::instant(py, "as_of", as_of)?;
        let scope = self.scope.clone();
        let end = self.run(py, move |memory| {
            write_whole(&path, |out| memory.export(&scope, &options, out))
        })?;
        let answer = PyDict::new(py);
        answer.set_item("records", end.records)?;
        answer.set_item("digest", end.digest)?;
        Ok(answer)
    }

    /// Imports the export (or, with `source="mem0"`, the Mem0 `get_all` answer) at `path`,
    /// whole or not at all; what it did, as the JSON of the CLI's `--json` report.
    #[pyo3(signature = (path, source))]
    fn import_(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<String> {
        let path = PathBuf::from(convert::text("path", path)?);
        let source = convert::text("source", source)?;
        let mem0 = match source.as_str() {
            "factmem" => false,
            "mem0" => true,
            _ => {
                return Err(errors::invalid(
                    py,
                    "source",
                    "must be \"factmem\" or \"mem0\"",
                ));
            }
        };
        let scope = self.scope.clone();
        let report = self.run(py, move |memory| {
            if !mem0 {
                let report = memory.import(&ExportFile::new(path))?;
                return Ok(serde_json::json!({ "report": report }));
            }
            let json = std::fs::read_to_string(&path).map_err(|e| {
                MemoryError::Store(StoreError::Io {
                    message: format!("reading {}: {e}", path.display()),
                })
            })?;
            let now = memory.clock().now();
            let (bytes, conversion) = mem0_export(&json, &scope, now)?;
            let report = memory.import(&ExportText::new(bytes))?;
            Ok(serde_json::json!({ "report": report, "mem0": conversion }))
        })?;
        Ok(report.to_string())
    }

    /// Every version of the facts about `subject`, by the time they became true.
    #[pyo3(signature = (subject, as_of, filter))]
    fn history<'py>(
        &self,
        py: Python<'py>,
        subject: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let subject = convert::text("subject", subject)?;
        let read = convert::read(py, as_of, filter)?;
        let versions = self.run(py, move |memory| memory.history(&subject, &read))?;
        convert::facts(py, &versions)
    }

    /// The facts around `entity`, one or two hops out: `(depth, path, via, FactRow)`.
    #[pyo3(signature = (entity, depth, limit, as_of, filter))]
    fn neighbours<'py>(
        &self,
        py: Python<'py>,
        entity: &Bound<'_, PyAny>,
        depth: &Bound<'_, PyAny>,
        limit: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let entity = convert::text("entity", entity)?;
        let depth = convert::count(py, "depth", depth, 1, MAX_NEIGHBOUR_DEPTH)?;
        let limit = convert::count(py, "limit", limit, 0, MAX_SEARCH_LIMIT)?;
        let read = convert::read(py, as_of, filter)?;
        let found = self.run(py, move |memory| {
            memory.neighbours(&entity, depth, limit, &read)
        })?;
        found
            .iter()
            .map(|n| {
                (
                    n.depth,
                    n.path.clone(),
                    n.via.map(|id| id.to_string()),
                    convert::fact_tuple(&n.fact),
                )
            })
            .collect::<Vec<_>>()
            .into_pyobject(py)
    }

    /// For the timing script (`bench/bench.py`): runs `search(query, limit)` for every
    /// query of `queries`, `rounds` times over, with the GIL released, and answers the
    /// microseconds it took by the system clock: the Rust call alone, which the script
    /// compares with the same searches through `Memory.search`.
    fn _bench_search(
        &self,
        py: Python<'_>,
        queries: Vec<String>,
        limit: &Bound<'_, PyAny>,
        rounds: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        let limit = convert::count(py, "limit", limit, 0, MAX_SEARCH_LIMIT)?;
        let rounds = convert::count(py, "rounds", rounds, 0, 1_000_000)?;
        let clock = SystemClock;
        self.run(py, move |memory| {
            let started = clock.now();
            for _ in 0..rounds {
                for query in &queries {
                    memory.search(query, limit, &ReadOptions::default())?;
                }
            }
            Ok(clock.now().unix_micros() - started.unix_micros())
        })
    }

    /// The memory as a system-prompt block within `max_tokens`.
    #[pyo3(signature = (max_tokens, as_of, filter))]
    fn format(
        &self,
        py: Python<'_>,
        max_tokens: &Bound<'_, PyAny>,
        as_of: &Bound<'_, PyAny>,
        filter: &Bound<'_, PyAny>,
    ) -> PyResult<String> {
        let max_tokens = convert::count(py, "max_tokens", max_tokens, 0, MAX_TOKENS)?;
        let read = convert::read(py, as_of, filter)?;
        self.run(py, move |memory| memory.format(max_tokens, &read))
    }
}

/// A `bool` argument (only `True` or `False`).
fn flag(param: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    match value.cast::<PyBool>() {
        Ok(flag) => Ok(flag.is_true()),
        Err(_) => Err(errors::wrong_type(param, "bool", value)),
    }
}

/// The fact `add_fact`'s arguments describe: subject, relation, object, statement,
/// category, confidence, valid_from and metadata, in that order.
fn new_memory(py: Python<'_>, fields: [&Bound<'_, PyAny>; 8]) -> PyResult<NewMemory> {
    let [
        subject,
        relation,
        object,
        statement,
        category,
        confidence,
        valid_from,
        metadata,
    ] = fields;
    let mut new = NewMemory::new(
        convert::text("subject", subject)?,
        convert::text("relation", relation)?,
        convert::text("object", object)?,
    )
    .with_category(convert::category(py, "category", category)?)
    .with_confidence(convert::confidence(py, "confidence", confidence)?)
    .with_source(SOURCE);
    new.statement = convert::optional_text("statement", statement)?;
    new.valid_from = convert::instant(py, "valid_from", valid_from)?;
    if let Some(metadata) = convert::metadata(py, "metadata", metadata)? {
        new.metadata = metadata;
    }
    Ok(new)
}

/// `add_fact`'s answer: the status, the fact, the facts it superseded and, for a
/// duplicate, the current fact that holds the statement.
fn add_answer<'py>(py: Python<'py>, outcome: &AddOutcome) -> PyResult<AddFactAnswer<'py>> {
    let (status, existing) = add_status(outcome);
    Ok((
        status,
        convert::fact(py, &outcome.fact)?,
        convert::ids(&outcome.report.invalidated),
        existing.map(|id| id.to_string()),
    ))
}

/// The facts an archive added, as stored.
fn added_facts(
    memory: &MemoryService,
    report: &ArchiveReport,
) -> Result<Vec<SessionFact>, MemoryError> {
    let Some(changes) = &report.changes else {
        return Ok(Vec::new());
    };
    changes
        .added
        .iter()
        .map(|id| memory.get(&id.to_string()))
        .collect()
}

/// `service` with the sentence-embedding model `embedder` (a directory or a named model's
/// files).
fn with_embedder(
    service: MemoryService,
    embedder: &EmbedderArg,
) -> Result<MemoryService, OpenError> {
    #[cfg(feature = "onnx")]
    {
        let opened = match embedder {
            EmbedderArg::Dir(dir) => durable::open_embedder(dir),
            EmbedderArg::Files(files) => durable::open_embedder_files(files),
        };
        let embedder = opened.map_err(|error| {
            let kind = if error.code() == "missing" {
                Kind::InvalidInput
            } else {
                Kind::Store
            };
            OpenError::new(kind, error.code(), format!("embedder: {error}"))
        })?;
        service.with_embedder(embedder).map_err(|error| {
            OpenError::new(errors::kind_of(&error), error.code(), error.to_string())
        })
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = service;
        Err(OpenError::new(
            Kind::InvalidInput,
            "no_onnx",
            format!(
                "embedder {}: this build of factmem has no onnx feature",
                embedder.label()
            ),
        ))
    }
}
