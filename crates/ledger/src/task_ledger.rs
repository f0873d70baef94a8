//! [`TaskLedger`]: the state of one task's dispatch run as `ledger.*` facts, last write
//! wins per key, every change kept.

use fact_model::{
    Assessment, DispatchResult, ImplementerResult, ImplementerStatus, ReviewerResult, Timestamp,
};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::{Outcome, ProgressLedger, StallConfig, StallDetector, StallState};

/// The stable keys of the task ledger, the same the TypeScript server uses, so snapshots
/// of both compare. List values are JSON strings.
pub mod keys {
    /// The last implementer summary.
    pub const TASK_SUMMARY: &str = "ledger.task.summary";
    /// The last reviewer assessment.
    pub const TASK_REVIEWER_ASSESSMENT: &str = "ledger.task.reviewer_assessment";
    /// The last reviewer's issues, a JSON array of `{severity, file?, message, fix}`.
    pub const TASK_REVIEWER_ISSUES: &str = "ledger.task.reviewer_issues";
    /// What blocks the task, a JSON array of strings.
    pub const TASK_BLOCKERS: &str = "ledger.task.blockers";
    /// Fixes the implementer must make, a JSON array of strings.
    pub const TASK_REQUIRED_FIXES: &str = "ledger.task.required_fixes";
    /// The failed tests of the last implementer result that did not complete, a JSON array
    /// of `{command}: {failure line}` strings (empty after a completed one). Not a key of
    /// the TypeScript server: it carries a failed attempt's evidence to the retry.
    pub const TASK_TEST_FAILURES: &str = "ledger.task.test_failures";
    /// Non-progress outcomes in a row.
    pub const TASK_STALLED_COUNT: &str = "ledger.task.stalled_count";
    /// The stall threshold.
    pub const TASK_STALLED_THRESHOLD: &str = "ledger.task.stalled_threshold";
    /// `true` when the task is stalled.
    pub const TASK_STALLED_FLAGGED: &str = "ledger.task.stalled_flagged";
    /// What to do about a stall or review loop; empty when nothing.
    pub const TASK_REPLAN_HINT: &str = "ledger.task.replan_hint";
    /// How many outcomes updated the plan.
    pub const TASK_PLAN_VERSION: &str = "ledger.task.plan_version";
    /// The active task of the progress ledger.
    pub const PROGRESS_ACTIVE_TASK_ID: &str = "ledger.progress.active_task_id";
    /// The progress totals, a JSON object.
    pub const PROGRESS_TOTALS: &str = "ledger.progress.totals";
    /// The tasks.md content hash.
    pub const PROGRESS_SOURCE_FINGERPRINT: &str = "ledger.progress.source_fingerprint";
    /// The tasks.md path.
    pub const PROGRESS_SOURCE_PATH: &str = "ledger.progress.source_path";
    /// The current task, `{id} {title}`.
    pub const PROGRESS_CURRENT_TASK: &str = "ledger.progress.current_task";
    /// The spec's name.
    pub const PROGRESS_SPEC_NAME: &str = "ledger.progress.spec_name";
    /// The task this ledger is about.
    pub const PROGRESS_TASK_ID: &str = "ledger.progress.task_id";
}

/// One fact of a state snapshot: a key, a value and a confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSnapshotFact {
    /// The key, e.g. `ledger.task.summary`.
    pub k: String,
    /// The value; lists and objects are JSON strings.
    pub v: String,
    /// How sure, in `0..=1`.
    pub confidence: f64,
}

impl StateSnapshotFact {
    /// A fact with confidence 1.
    #[must_use]
    pub fn new(k: impl Into<String>, v: impl Into<String>) -> Self {
        StateSnapshotFact {
            k: k.into(),
            v: v.into(),
            confidence: 1.0,
        }
    }
}

/// One change of the ledger: which key, from what, to what, when.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerChange {
    /// The ledger's revision after this change.
    pub revision: u64,
    /// The key.
    pub key: String,
    /// The value before, if the key existed.
    pub old: Option<String>,
    /// The value after.
    pub new: String,
    /// When.
    pub at: Timestamp,
}

/// The state of one task's dispatch run.
///
/// Facts merge last-write-wins per key, each key keeping the position where it first
/// appeared; every change (a new key, or a new value or confidence) increments the
/// revision and appends a [`LedgerChange`], so the latest value serves the prompt and every
/// earlier value stays inspectable.
///
/// ```
/// use fact_model::{ImplementerResult, Timestamp};
/// use ledger::{StallConfig, TaskLedger, keys};
///
/// let mut ledger = TaskLedger::new("3", StallConfig::default());
/// let result: ImplementerResult = serde_json::from_str(
///     r#"{"task_id": "3", "status": "blocked", "summary": "Waiting on the schema",
///         "follow_up_actions": ["Decide the AST schema"]}"#,
/// )?;
/// ledger.apply(&result.into(), Timestamp::UNIX_EPOCH);
/// assert_eq!(ledger.get(keys::TASK_BLOCKERS), Some(r#"["Decide the AST schema"]"#));
/// assert_eq!(ledger.get(keys::TASK_PLAN_VERSION), Some("1"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TaskLedger {
    task_id: String,
    facts: IndexMap<String, StateSnapshotFact>,
    revision: u64,
    history: Vec<LedgerChange>,
    stall: StallDetector,
    plan_version: u64,
}

/// `{command}: {line}` for each failure line of each failed test run (`{command}: failed`
/// when it gave none), blank lines skipped.
fn test_failures(result: &ImplementerResult) -> Vec<String> {
    let mut lines = Vec::new();
    for run in result.tests.iter().filter(|run| !run.passed) {
        let command = run.command.trim();
        let before = lines.len();
        for failure in run
            .failures
            .iter()
            .map(|f| f.trim())
            .filter(|f| !f.is_empty())
        {
            lines.push(format!("{command}: {failure}"));
        }
        if lines.len() == before {
            lines.push(format!("{command}: failed"));
        }
    }
    lines
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

impl TaskLedger {
    /// An empty ledger for task `task_id`.
    #[must_use]
    pub fn new(task_id: impl Into<String>, stall: StallConfig) -> Self {
        TaskLedger {
            task_id: task_id.into(),
            facts: IndexMap::new(),
            revision: 0,
            history: Vec::new(),
            stall: StallDetector::new(stall),
            plan_version: 0,
        }
    }

    /// The task this ledger is about.
    #[must_use]
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Merges facts, last write wins per key; returns how many changed something.
    pub fn merge(
        &mut self,
        facts: impl IntoIterator<Item = StateSnapshotFact>,
        at: Timestamp,
    ) -> usize {
        let mut changed = 0;
        for fact in facts {
            let old = self.facts.get(&fact.k);
            if old.is_some_and(|old| {
                old.v == fact.v && old.confidence.to_bits() == fact.confidence.to_bits()
            }) {
                continue;
            }
            self.revision += 1;
            changed += 1;
            self.history.push(LedgerChange {
                revision: self.revision,
                key: fact.k.clone(),
                old: old.map(|old| old.v.clone()),
                new: fact.v.clone(),
                at,
            });
            // `insert` on an existing key keeps its position.
            self.facts.insert(fact.k.clone(), fact);
        }
        changed
    }

    fn set(&mut self, key: &str, value: impl Into<String>, at: Timestamp) {
        self.merge([StateSnapshotFact::new(key, value)], at);
    }

    /// The current value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.facts.get(key).map(|f| f.v.as_str())
    }

    /// The current facts, each key where it first appeared.
    #[must_use]
    pub fn snapshot(&self) -> Vec<StateSnapshotFact> {
        self.facts.values().cloned().collect()
    }

    /// The revision: how many changes so far.
    #[must_use]
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Every change, oldest first.
    #[must_use]
    pub fn history(&self) -> &[LedgerChange] {
        &self.history
    }

    /// Every value `key` has had, oldest first.
    pub fn history_of<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a LedgerChange> {
        self.history.iter().filter(move |c| c.key == key)
    }

    /// The stall state.
    #[must_use]
    pub fn stall(&self) -> StallState {
        self.stall.state()
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }

    fn append(&mut self, key: &str, more: &[String], at: Timestamp) {
        let mut list = self.list(key);
        for item in more {
            let item = item.trim();
            if !item.is_empty() && !list.iter().any(|x| x == item) {
                list.push(item.to_owned());
            }
        }
        self.set(key, json_list(&list), at);
    }

    fn after_outcome(&mut self, outcome: &Outcome, at: Timestamp) {
        let state = self.stall.record(outcome);
        self.plan_version += 1;
        let hint = self.stall.replan_hint(&self.task_id).unwrap_or_default();
        self.merge(
            [
                StateSnapshotFact::new(keys::TASK_STALLED_COUNT, state.count.to_string()),
                StateSnapshotFact::new(keys::TASK_STALLED_THRESHOLD, state.threshold.to_string()),
                StateSnapshotFact::new(keys::TASK_STALLED_FLAGGED, state.stalled.to_string()),
                StateSnapshotFact::new(keys::TASK_REPLAN_HINT, hint),
                StateSnapshotFact::new(keys::TASK_PLAN_VERSION, self.plan_version.to_string()),
            ],
            at,
        );
    }

    /// Records a dispatch result of either agent; stall state and plan version follow.
    ///
    /// An implementer's result records the summary; `completed` clears the blockers,
    /// `blocked` and `failed` add the follow-up actions to them. A reviewer's records the
    /// assessment, issues and required fixes; `approved` clears blockers and fixes, `blocked`
    /// adds the required fixes to the blockers.
    pub fn apply(&mut self, result: &DispatchResult, at: Timestamp) {
        match result {
            DispatchResult::Implementer(result) => self.apply_implementer(result, at),
            DispatchResult::Reviewer(result) => self.apply_reviewer(result, at),
        }
    }

    fn apply_implementer(&mut self, result: &ImplementerResult, at: Timestamp) {
        self.set(keys::TASK_SUMMARY, result.summary.trim(), at);
        match result.status {
            ImplementerStatus::Completed => {
                self.set(keys::TASK_BLOCKERS, "[]", at);
                self.set(keys::TASK_TEST_FAILURES, "[]", at);
            }
            ImplementerStatus::Blocked | ImplementerStatus::Failed => {
                self.append(keys::TASK_BLOCKERS, &result.follow_up_actions, at);
                self.set(
                    keys::TASK_TEST_FAILURES,
                    json_list(&test_failures(result)),
                    at,
                );
            }
        }
        self.after_outcome(&Outcome::Implementer(result.status), at);
    }

    fn apply_reviewer(&mut self, result: &ReviewerResult, at: Timestamp) {
        let issues = serde_json::to_string(&result.issues).unwrap_or_else(|_| "[]".to_owned());
        self.set(
            keys::TASK_REVIEWER_ASSESSMENT,
            result.assessment.as_str(),
            at,
        );
        self.set(keys::TASK_REVIEWER_ISSUES, issues, at);
        match result.assessment {
            Assessment::Approved => {
                self.set(keys::TASK_BLOCKERS, "[]", at);
                self.set(keys::TASK_REQUIRED_FIXES, "[]", at);
            }
            Assessment::NeedsChanges => {
                self.set(
                    keys::TASK_REQUIRED_FIXES,
                    json_list(&result.required_fixes),
                    at,
                );
            }
            Assessment::Blocked => {
                self.set(
                    keys::TASK_REQUIRED_FIXES,
                    json_list(&result.required_fixes),
                    at,
                );
                self.append(keys::TASK_BLOCKERS, &result.required_fixes, at);
            }
        }
        self.after_outcome(&Outcome::review(result), at);
    }

    /// Records where the spec stands: `ledger.progress.*` from the progress ledger.
    pub fn apply_progress(&mut self, progress: &ProgressLedger, at: Timestamp) {
        let totals = serde_json::to_string(&progress.totals()).unwrap_or_default();
        let active = progress.active_task();
        let current = progress
            .task(&self.task_id)
            .map(|t| format!("{} {}", t.id(), t.title()))
            .unwrap_or_default();
        let facts = [
            StateSnapshotFact::new(keys::PROGRESS_SPEC_NAME, progress.spec_name()),
            StateSnapshotFact::new(keys::PROGRESS_TASK_ID, self.task_id.clone()),
            StateSnapshotFact::new(
                keys::PROGRESS_ACTIVE_TASK_ID,
                active.map(|t| t.id()).unwrap_or_default(),
            ),
            StateSnapshotFact::new(keys::PROGRESS_CURRENT_TASK, current),
            StateSnapshotFact::new(keys::PROGRESS_TOTALS, totals),
            StateSnapshotFact::new(
                keys::PROGRESS_SOURCE_PATH,
                progress.source_path().display().to_string(),
            ),
            StateSnapshotFact::new(
                keys::PROGRESS_SOURCE_FINGERPRINT,
                progress.fingerprint().hash.clone(),
            ),
        ];
        self.merge(facts, at);
    }

    /// The evidence a retry needs, `None` when there is none: after a rejection (the last
    /// review asked for changes or blocked), `Rejection reasons:` with one
    /// `[severity] file: message` line per issue, then `Required fixes:` with one `- fix`
    /// line each; after an implementer result that did not complete with failed tests,
    /// `Failed tests:` with one `- command: failure` line each.
    ///
    /// ```
    /// use fact_model::{ReviewerResult, Timestamp};
    /// use ledger::{StallConfig, TaskLedger};
    ///
    /// let mut ledger = TaskLedger::new("2", StallConfig::default());
    /// let review: ReviewerResult = serde_json::from_str(r#"{"task_id": "2", "assessment": "needs_changes",
    ///     "issues": [{"severity": "critical", "file": "src/api.ts", "message": "Missing validation", "fix": "Validate"}],
    ///     "required_fixes": ["Validate the request body"]}"#)?;
    /// ledger.apply(&review.into(), Timestamp::UNIX_EPOCH);
    /// assert_eq!(
    ///     ledger.failure_evidence().as_deref(),
    ///     Some("Rejection reasons:\n[critical] src/api.ts: Missing validation\nRequired fixes:\n- Validate the request body")
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn failure_evidence(&self) -> Option<String> {
        let rejection = self.rejection_evidence();
        let failed = self.list(keys::TASK_TEST_FAILURES);
        if failed.is_empty() {
            return rejection;
        }
        let mut out = rejection.map(|r| r + "\n").unwrap_or_default();
        out.push_str("Failed tests:");
        for line in failed {
            out.push_str("\n- ");
            out.push_str(&line);
        }
        Some(out)
    }

    /// The rejection part of [`failure_evidence`](Self::failure_evidence).
    fn rejection_evidence(&self) -> Option<String> {
        let assessment = self.get(keys::TASK_REVIEWER_ASSESSMENT)?;
        if assessment == Assessment::Approved.as_str() {
            return None;
        }
        let issues: Vec<fact_model::ReviewIssue> = self
            .get(keys::TASK_REVIEWER_ISSUES)
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default();
        let mut out = String::from("Rejection reasons:");
        for issue in &issues {
            out.push('\n');
            out.push_str(&format!("[{}] ", issue.severity.as_str()));
            if let Some(file) = issue.file.as_deref().filter(|f| !f.trim().is_empty()) {
                out.push_str(file);
                out.push_str(": ");
            }
            out.push_str(issue.message.trim());
        }
        let fixes = self.list(keys::TASK_REQUIRED_FIXES);
        if !fixes.is_empty() {
            out.push_str("\nRequired fixes:");
            for fix in fixes {
                out.push_str("\n- ");
                out.push_str(&fix);
            }
        }
        Some(out)
    }
}
