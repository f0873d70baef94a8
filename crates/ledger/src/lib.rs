//! Ledgers for dispatch orchestration (seed 003): the progress ledger compiled from a
//! spec's tasks.md, the task ledger that dispatch outcomes update, and stall detection.
//!
//! - [`parse_tasks`] reads tasks.md in one pass: [`Task`]s with their metadata and whole
//!   prompts, and [`Diagnostic`]s for lines it could not use.
//! - [`ProgressLedger`] is a compiled tasks.md: tasks, [`Totals`], the active task and a
//!   [`Fingerprint`]; [`LedgerCache`] recompiles only when the file changed, and never
//!   hides a failure behind a stale ledger.
//! - [`TaskLedger`] holds `ledger.*` [`StateSnapshotFact`]s, last write wins per key, with
//!   every change kept in a revision history; implementer and reviewer results update it.
//! - [`set_task_status`] sets a task's checkbox in tasks.md in place, atomically, changing
//!   that one character and nothing else.
//! - [`StallDetector`] counts non-progress outcomes and spots review loops.
//!
//! ```
//! use ledger::{Fingerprint, ProgressLedger, TaskStatus};
//!
//! let text = "# Tasks\n\
//!             - [x] 1. Parse tasks.md\n\
//!             - [ ] 2. Index the tasks\n  - _Requirements: 1.2_\n\
//!             - [ ] 3. Search\n";
//! let ledger = ProgressLedger::from_text("demo", "tasks.md", text, Fingerprint::of(text.as_bytes(), None))?;
//! let active = ledger.active_task().ok_or("no active task")?;
//! assert_eq!((active.id(), active.status()), ("2", TaskStatus::Pending));
//! assert_eq!(active.requirements(), ["1.2"]);
//! assert_eq!((ledger.totals().completed, ledger.totals().pending), (1, 2));
//! assert!(ledger.diagnostics().is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//!
//! None: every user gets the same parser, ledgers and stall detection.

#![forbid(unsafe_code)]

mod edit;
mod parse;
mod progress;
mod prompt;
mod stall;
mod task;
mod task_ledger;

pub use crate::edit::{SetStatusOutcome, set_task_status, set_task_status_in_text};
pub use crate::parse::parse_tasks;
pub use crate::progress::{
    Fingerprint, Freshness, LedgerCache, LedgerError, ProgressLedger, StaleLedger, Totals,
};
pub use crate::stall::{IssueFingerprint, Outcome, StallConfig, StallDetector, StallState};
pub use crate::task::{Diagnostic, Task, TaskStatus, UnknownTaskStatus};
pub use crate::task_ledger::{LedgerChange, StateSnapshotFact, TaskLedger, keys};
