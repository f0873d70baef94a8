//! [`ProgressLedger`]: a spec's tasks.md compiled once, and [`LedgerCache`], which compiles
//! it again only when the file changed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use fact_model::{Clock, SystemClock, Timestamp};
use serde::Serialize;

use crate::{Diagnostic, Task, TaskStatus, parse_tasks};

/// Why a progress ledger could not be built. Every variant names the file.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// There is no tasks.md at the path.
    #[error("no tasks.md at {path}")]
    MissingTasksFile {
        /// The path looked at.
        path: PathBuf,
    },
    /// The file is not UTF-8.
    #[error("{path} is not UTF-8 (first invalid byte at offset {valid_up_to})")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// How many bytes are valid UTF-8.
        valid_up_to: usize,
    },
    /// The file has no task line (`- [ ] 1. Title`).
    #[error("{path} has no tasks (a task line looks like `- [ ] 1. Title`)")]
    NoTasks {
        /// The file.
        path: PathBuf,
        /// The problems found while looking, with line numbers.
        diagnostics: Vec<Diagnostic>,
    },
    /// No task line of the file has the id asked for.
    #[error("no task {task_id} in {path}")]
    TaskNotFound {
        /// The id asked for.
        task_id: String,
        /// The file.
        path: PathBuf,
    },
    /// Replacing the file with an edited version failed; the file is as it was.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: Arc<std::io::Error>,
    },
    /// Reading the file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: Arc<std::io::Error>,
    },
}

impl LedgerError {
    /// A stable code for the failure, for JSON answers: `missing_tasks_file`, `not_utf8`,
    /// `no_tasks`, `task_not_found`, `write_failed` or `io`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            LedgerError::MissingTasksFile { .. } => "missing_tasks_file",
            LedgerError::NotUtf8 { .. } => "not_utf8",
            LedgerError::NoTasks { .. } => "no_tasks",
            LedgerError::TaskNotFound { .. } => "task_not_found",
            LedgerError::Write { .. } => "write_failed",
            LedgerError::Io { .. } => "io",
        }
    }
}

/// What a tasks.md was when a ledger was built from it: the BLAKE3 hash of its content,
/// its size and its modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fingerprint {
    /// BLAKE3 of the content, 64 lowercase hex characters.
    pub hash: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, when the file system reports one.
    pub mtime: Option<Timestamp>,
}

impl Fingerprint {
    /// The fingerprint of `content`, with the file's size and modification time.
    #[must_use]
    pub fn of(content: &[u8], mtime: Option<Timestamp>) -> Fingerprint {
        Fingerprint {
            hash: blake3::hash(content).to_hex().to_string(),
            size: content.len() as u64,
            mtime,
        }
    }
}

/// How many tasks stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// All tasks.
    pub total: usize,
    /// `[x]`
    pub completed: usize,
    /// `[-]`
    pub in_progress: usize,
    /// `[ ]`
    pub pending: usize,
}

/// A spec's tasks.md, compiled: tasks in file order with their metadata, totals, the active
/// task, and where it came from.
///
/// ```
/// use ledger::{Fingerprint, ProgressLedger};
///
/// let text = "# Tasks\n- [x] 1. Parse\n- [-] 2. Index\n- [ ] 3. Search\n";
/// let ledger = ProgressLedger::from_text("demo", "tasks.md", text, Fingerprint::of(text.as_bytes(), None))?;
/// assert_eq!(ledger.totals().completed, 1);
/// assert_eq!(ledger.active_task().map(|t| t.id()), Some("2"));
/// assert_eq!(ledger.task("3").map(|t| t.title()), Some("Search"));
/// # Ok::<(), ledger::LedgerError>(())
/// ```
///
/// # JSON
///
/// Serialized (with serde) as one object, keys in this order:
///
/// ```json
/// {
///   "spec_name": "demo",
///   "source_path": "specs/demo/tasks.md",
///   "fingerprint": { "hash": "5d41…(64 hex)", "size": 62, "mtime": "2025-01-02T03:04:05Z" },
///   "active_task_id": "2",
///   "totals": { "total": 3, "completed": 1, "in_progress": 1, "pending": 1 },
///   "tasks": [
///     { "id": "1", "title": "Parse", "status": "completed", "depth": 0, "line": 2,
///       "requirements": [], "leverage": null, "files": [], "purpose": null,
///       "details": [], "prompt": null },
///     …
///   ],
///   "diagnostics": [ { "line": 7, "message": "…" } ]
/// }
/// ```
///
/// - `source_path`: the path as given, converted to UTF-8 lossily;
/// - `fingerprint`: a [`Fingerprint`] (`mtime` is RFC 3339 or `null`);
/// - `active_task_id`: the id of [`ProgressLedger::active_task`], `null` when every task
///   is completed;
/// - `totals`: [`Totals`];
/// - `tasks`: each [`Task`] in file order, in its own serde form; statuses are the
///   [`TaskStatus`] names;
/// - `diagnostics`: each [`Diagnostic`] (1-based `line`, `message`).
///
/// The form is for output only: there is no `Deserialize`, since a ledger is compiled
/// from its tasks.md, never read back.
///
/// ```
/// use ledger::{Fingerprint, ProgressLedger};
///
/// let text = "- [x] 1. Parse\n- [-] 2. Index\n";
/// let ledger = ProgressLedger::from_text("demo", "tasks.md", text, Fingerprint::of(text.as_bytes(), None))?;
/// let json = serde_json::to_value(&ledger).expect("a ledger always serializes");
/// assert_eq!(json["active_task_id"], "2");
/// assert_eq!(json["totals"]["in_progress"], 1);
/// assert_eq!(json["tasks"][1]["status"], "in_progress");
/// # Ok::<(), ledger::LedgerError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressLedger {
    spec_name: String,
    source_path: PathBuf,
    fingerprint: Fingerprint,
    tasks: Vec<Task>,
    totals: Totals,
    /// Index into `tasks`; never serialized (the JSON names the task by id).
    active: Option<usize>,
    diagnostics: Vec<Diagnostic>,
}

impl Serialize for ProgressLedger {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ProgressLedger", 7)?;
        s.serialize_field("spec_name", &self.spec_name)?;
        s.serialize_field("source_path", &self.source_path.to_string_lossy())?;
        s.serialize_field("fingerprint", &self.fingerprint)?;
        s.serialize_field("active_task_id", &self.active_task().map(Task::id))?;
        s.serialize_field("totals", &self.totals)?;
        s.serialize_field("tasks", &self.tasks)?;
        s.serialize_field("diagnostics", &self.diagnostics)?;
        s.end()
    }
}

impl ProgressLedger {
    /// Compiles tasks.md text.
    ///
    /// # Errors
    ///
    /// [`LedgerError::NoTasks`] when the text has no task line.
    pub fn from_text(
        spec_name: impl Into<String>,
        source_path: impl Into<PathBuf>,
        text: &str,
        fingerprint: Fingerprint,
    ) -> Result<ProgressLedger, LedgerError> {
        let (tasks, diagnostics) = parse_tasks(text);
        let source_path = source_path.into();
        if tasks.is_empty() {
            return Err(LedgerError::NoTasks {
                path: source_path,
                diagnostics,
            });
        }
        let mut totals = Totals {
            total: tasks.len(),
            ..Totals::default()
        };
        for task in &tasks {
            match task.status() {
                TaskStatus::Completed => totals.completed += 1,
                TaskStatus::InProgress => totals.in_progress += 1,
                TaskStatus::Pending => totals.pending += 1,
            }
        }
        let active = tasks
            .iter()
            .position(|t| t.status() == TaskStatus::InProgress)
            .or_else(|| tasks.iter().position(|t| t.status() == TaskStatus::Pending));
        Ok(ProgressLedger {
            spec_name: spec_name.into(),
            source_path,
            fingerprint,
            tasks,
            totals,
            active,
            diagnostics,
        })
    }

    /// Reads and compiles the tasks.md at `path`.
    ///
    /// # Errors
    ///
    /// [`LedgerError::MissingTasksFile`], [`LedgerError::NotUtf8`], [`LedgerError::NoTasks`]
    /// or [`LedgerError::Io`].
    pub fn load(spec_name: impl Into<String>, path: &Path) -> Result<ProgressLedger, LedgerError> {
        let (bytes, mtime) = read(path)?;
        let text = decode(path, &bytes)?;
        ProgressLedger::from_text(spec_name, path, text, Fingerprint::of(&bytes, mtime))
    }

    /// The spec's name.
    #[must_use]
    pub fn spec_name(&self) -> &str {
        &self.spec_name
    }

    /// The file the ledger was compiled from.
    #[must_use]
    pub fn source_path(&self) -> &Path {
        &self.source_path
    }

    /// What the file was when compiled.
    #[must_use]
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The tasks, in file order.
    #[must_use]
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The task with this id, as written in the file.
    #[must_use]
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id() == id)
    }

    /// How many tasks stand where.
    #[must_use]
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// The first task in progress, else the first pending one, else none.
    #[must_use]
    pub fn active_task(&self) -> Option<&Task> {
        self.tasks.get(self.active?)
    }

    /// Problems in the file that did not stop compiling it, with line numbers.
    #[must_use]
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

fn mtime_of(metadata: &std::fs::Metadata) -> Option<Timestamp> {
    let since = metadata.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Timestamp::from_unix_micros(i64::try_from(since.as_micros()).ok()?).ok()
}

pub(crate) fn io_error(path: &Path, error: std::io::Error) -> LedgerError {
    if error.kind() == std::io::ErrorKind::NotFound {
        LedgerError::MissingTasksFile {
            path: path.to_owned(),
        }
    } else {
        LedgerError::Io {
            path: path.to_owned(),
            source: Arc::new(error),
        }
    }
}

fn read(path: &Path) -> Result<(Vec<u8>, Option<Timestamp>), LedgerError> {
    let metadata = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    Ok((bytes, mtime_of(&metadata)))
}

pub(crate) fn decode<'b>(path: &Path, bytes: &'b [u8]) -> Result<&'b str, LedgerError> {
    std::str::from_utf8(bytes).map_err(|e| LedgerError::NotUtf8 {
        path: path.to_owned(),
        valid_up_to: e.valid_up_to(),
    })
}

/// How a [`LedgerCache`] answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    /// Size and mtime unchanged: the cached ledger, without reading the file.
    Hit,
    /// The file was read and hashed, and its content is the one cached: the cached
    /// ledger. Happens when only the mtime changed, or when the file changed too recently
    /// for its size and mtime to be trusted.
    Rehashed,
    /// Compiled from the file (first load, or the content changed).
    Rebuilt,
}

/// A failed load: the error, and the last good ledger of that file, marked stale.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{error}{}", if self.stale.is_some() { " (the last good ledger is returned as stale)" } else { "" })]
pub struct StaleLedger {
    /// Why the file could not be compiled now.
    #[source]
    pub error: LedgerError,
    /// The last ledger compiled from the same path, if there was one. It no longer matches
    /// the file: use it knowingly, or not at all.
    pub stale: Option<Arc<ProgressLedger>>,
}

/// How long a file's modification time must lie before the moment it was read for its
/// size and mtime alone to vouch for its content: more than the coarsest timestamp
/// granularity of common file systems (a kernel tick on Linux, 1 s on HFS+, 2 s on FAT).
const RACY_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct CacheEntry {
    ledger: Arc<ProgressLedger>,
    /// The file's mtime was at least [`RACY_WINDOW`] before it was read: a later write
    /// gets a later mtime, so unchanged size and mtime mean unchanged content. Otherwise
    /// a write in the same clock tick could keep both (a status edit keeps the size), and
    /// the file is hashed again on every load until it settles.
    settled: bool,
}

#[derive(Debug, Default)]
struct CacheState {
    entries: indexmap::IndexMap<PathBuf, CacheEntry>,
    rebuilds: u64,
}

/// Whether a file modified at `mtime` and read from `read_at` on is settled (see
/// [`CacheEntry::settled`]); a missing or future mtime never is.
fn settled(mtime: Option<Timestamp>, read_at: Timestamp) -> bool {
    mtime
        .and_then(|mtime| mtime.checked_add(RACY_WINDOW))
        .is_some_and(|limit| limit <= read_at)
}

/// Progress ledgers by path, compiled again only when their file changed.
///
/// A lookup stats the file: with size and mtime unchanged it returns the cached ledger
/// without reading ([`Freshness::Hit`]); when only the mtime changed it reads and hashes the
/// file, and keeps the ledger if the content is the same ([`Freshness::Rehashed`]);
/// otherwise it compiles the file again ([`Freshness::Rebuilt`]) and counts a rebuild.
///
/// Size and mtime are trusted only for a file read at least two seconds after its mtime:
/// two writes in one tick of the file system's clock can leave both unchanged (an edit by
/// [`set_task_status`](crate::set_task_status) keeps the size), so a file modified just
/// before it was read is hashed again on each lookup until it has settled.
/// A failed rebuild never falls back silently: the caller gets a [`StaleLedger`] holding the
/// error and the last good ledger.
///
/// The cache's lock is held only to look up or store an entry, never while a file is
/// stat'ed, read or compiled: lookups of different specs never wait for each other's I/O.
#[derive(Debug)]
pub struct LedgerCache {
    state: Mutex<CacheState>,
    /// The wall clock that file modification times are compared with.
    clock: Arc<dyn Clock>,
}

impl Default for LedgerCache {
    /// An empty cache on the [`SystemClock`].
    fn default() -> Self {
        LedgerCache::with_clock(Arc::new(SystemClock))
    }
}

impl LedgerCache {
    /// An empty cache that tells settled files from fresh ones with `clock`, which should
    /// be the wall clock that stamps the files' modification times ([`SystemClock`], as
    /// [`LedgerCache::default`] uses). A clock behind the files only makes the cache hash
    /// files it could have trusted; a clock ahead of them can make it trust a file written
    /// in the same tick as its last read.
    #[must_use]
    pub fn with_clock(clock: Arc<dyn Clock>) -> LedgerCache {
        LedgerCache {
            state: Mutex::default(),
            clock,
        }
    }

    /// The ledger of `spec_name`'s tasks.md at `path`, and how fresh it is.
    ///
    /// # Errors
    ///
    /// [`StaleLedger`] when the file cannot be compiled now.
    pub fn load(
        &self,
        spec_name: &str,
        path: &Path,
    ) -> Result<(Arc<ProgressLedger>, Freshness), StaleLedger> {
        // The file is read and compiled outside the cache's lock, so a slow disk or a large
        // tasks.md of one spec never holds up another spec's lookup.
        let cached = self
            .lock()
            .entries
            .get(path)
            .map(|entry| (entry.ledger.clone(), entry.settled));
        let fail = |error: LedgerError| StaleLedger {
            error,
            stale: cached.as_ref().map(|(ledger, _)| ledger.clone()),
        };
        let read_at = self.clock.now();
        let metadata = std::fs::metadata(path).map_err(|e| fail(io_error(path, e)))?;
        let (size, mtime) = (metadata.len(), mtime_of(&metadata));
        if let Some((ledger, true)) = &cached {
            let print = ledger.fingerprint();
            if print.size == size
                && print.mtime == mtime
                && mtime.is_some()
                && ledger.spec_name() == spec_name
            {
                return Ok((ledger.clone(), Freshness::Hit));
            }
        }
        let settled = settled(mtime, read_at);
        let bytes = std::fs::read(path).map_err(|e| fail(io_error(path, e)))?;
        let fingerprint = Fingerprint::of(&bytes, mtime);
        if let Some((ledger, _)) = &cached
            && ledger.fingerprint().hash == fingerprint.hash
            && ledger.spec_name() == spec_name
        {
            let mut refreshed = ProgressLedger::clone(ledger);
            refreshed.fingerprint = fingerprint;
            let refreshed = Arc::new(refreshed);
            self.lock().entries.insert(
                path.to_owned(),
                CacheEntry {
                    ledger: refreshed.clone(),
                    settled,
                },
            );
            return Ok((refreshed, Freshness::Rehashed));
        }
        self.lock().rebuilds += 1;
        let text = decode(path, &bytes).map_err(&fail)?;
        let ledger =
            Arc::new(ProgressLedger::from_text(spec_name, path, text, fingerprint).map_err(&fail)?);
        // Two lookups of one file at once may both compile it; the later insert wins, and
        // either ledger carries the fingerprint of the bytes it was compiled from, so a
        // later lookup compares the file with what the cache really holds.
        self.lock().entries.insert(
            path.to_owned(),
            CacheEntry {
                ledger: ledger.clone(),
                settled,
            },
        );
        Ok((ledger, Freshness::Rebuilt))
    }

    /// How many times a file was compiled (first loads included).
    #[must_use]
    pub fn rebuilds(&self) -> u64 {
        self.lock().rebuilds
    }

    /// The cache's state, held only to look up or insert an entry, never across I/O.
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
