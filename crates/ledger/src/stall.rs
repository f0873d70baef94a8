//! Stall detection: counting non-progress outcomes per task, and spotting review loops.

use fact_model::{Assessment, ImplementerStatus, ReviewerResult};
use serde::Serialize;

/// How many non-progress outcomes in a row flag a task as stalled (default 2).
///
/// ```
/// use ledger::StallConfig;
///
/// assert_eq!(StallConfig::default().with_threshold(3).threshold, 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct StallConfig {
    /// The threshold, at least 1.
    pub threshold: u32,
}

impl Default for StallConfig {
    fn default() -> Self {
        StallConfig { threshold: 2 }
    }
}

impl StallConfig {
    /// Flags a task after `threshold` non-progress outcomes in a row.
    #[must_use]
    pub fn with_threshold(mut self, threshold: u32) -> Self {
        self.threshold = threshold;
        self
    }
}

/// One dispatch outcome, as stall detection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// An implementer finished with this status.
    Implementer(ImplementerStatus),
    /// A reviewer assessed the work; `issues` identifies what it raised.
    Reviewer {
        /// The verdict.
        assessment: Assessment,
        /// The order-insensitive fingerprint of its issues and required fixes.
        issues: IssueFingerprint,
    },
}

impl Outcome {
    /// The outcome of a reviewer result, with its issue fingerprint.
    #[must_use]
    pub fn review(result: &ReviewerResult) -> Outcome {
        Outcome::Reviewer {
            assessment: result.assessment,
            issues: IssueFingerprint::of(result),
        }
    }
}

/// An order-insensitive fingerprint of a review's issues and required fixes: two reviews
/// raising the same things in another order have the same fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IssueFingerprint([u8; 16]);

impl IssueFingerprint {
    /// The fingerprint of `result`'s issues (severity, file, message) and required fixes.
    #[must_use]
    pub fn of(result: &ReviewerResult) -> IssueFingerprint {
        let mut items: Vec<String> = result
            .issues
            .iter()
            .map(|i| {
                format!(
                    "issue\u{1f}{}\u{1f}{}\u{1f}{}",
                    i.severity.as_str(),
                    i.file.as_deref().unwrap_or(""),
                    i.message.trim()
                )
            })
            .chain(
                result
                    .required_fixes
                    .iter()
                    .map(|f| format!("fix\u{1f}{}", f.trim())),
            )
            .collect();
        items.sort_unstable();
        let mut hasher = blake3::Hasher::new();
        for item in &items {
            hasher.update(&(item.len() as u64).to_le_bytes());
            hasher.update(item.as_bytes());
        }
        let mut out = [0u8; 16];
        hasher.finalize_xof().fill(&mut out);
        IssueFingerprint(out)
    }
}

/// Where a task stands after its outcomes so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StallState {
    /// Non-progress outcomes since the last progress.
    pub count: u32,
    /// The threshold in force.
    pub threshold: u32,
    /// Whether `count` has reached the threshold.
    pub stalled: bool,
    /// Whether the last two reviews asked for the same changes.
    pub review_loop: bool,
}

impl StallState {
    /// Whether the task needs a new plan: stalled or in a review loop.
    #[must_use]
    pub fn replan_required(&self) -> bool {
        self.stalled || self.review_loop
    }
}

/// Counts a task's outcomes: implementer `blocked`/`failed` and reviewer `blocked` are
/// non-progress; reviewer `needs_changes` is neutral; implementer `completed` and reviewer
/// `approved` are progress and reset the count. The task is stalled exactly while the count
/// is at or over the threshold. Two reviews in a row (implementer outcomes between them
/// do not matter) that ask for changes with the same [`IssueFingerprint`] make a review
/// loop, until a review asks for something else or approves.
///
/// ```
/// use fact_model::ImplementerStatus;
/// use ledger::{Outcome, StallConfig, StallDetector};
///
/// let mut stall = StallDetector::new(StallConfig::default());
/// stall.record(&Outcome::Implementer(ImplementerStatus::Blocked));
/// let state = stall.record(&Outcome::Implementer(ImplementerStatus::Failed));
/// assert!(state.stalled && state.count == 2);
/// assert!(!stall.record(&Outcome::Implementer(ImplementerStatus::Completed)).stalled);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallDetector {
    config: StallConfig,
    count: u32,
    last_review: Option<(Assessment, IssueFingerprint)>,
    review_loop: bool,
}

impl StallDetector {
    /// A detector with no outcomes yet; a threshold of 0 is treated as 1.
    #[must_use]
    pub fn new(config: StallConfig) -> Self {
        StallDetector {
            config: StallConfig {
                threshold: config.threshold.max(1),
            },
            count: 0,
            last_review: None,
            review_loop: false,
        }
    }

    /// Records one outcome and returns the new state.
    pub fn record(&mut self, outcome: &Outcome) -> StallState {
        match outcome {
            Outcome::Implementer(ImplementerStatus::Completed) => self.count = 0,
            Outcome::Implementer(ImplementerStatus::Blocked | ImplementerStatus::Failed) => {
                self.count = self.count.saturating_add(1);
            }
            Outcome::Reviewer { assessment, issues } => {
                match assessment {
                    Assessment::Approved => self.count = 0,
                    Assessment::Blocked => self.count = self.count.saturating_add(1),
                    Assessment::NeedsChanges => {}
                }
                let repeated = *assessment == Assessment::NeedsChanges
                    && self.last_review == Some((Assessment::NeedsChanges, *issues));
                self.review_loop = repeated;
                self.last_review = Some((*assessment, *issues));
            }
        }
        self.state()
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> StallState {
        StallState {
            count: self.count,
            threshold: self.config.threshold,
            stalled: self.count >= self.config.threshold,
            review_loop: self.review_loop,
        }
    }

    /// The replan hint for the current state, if the task needs a new plan.
    #[must_use]
    pub fn replan_hint(&self, task_id: &str) -> Option<String> {
        let state = self.state();
        if state.stalled {
            Some(format!(
                "Task {task_id} is stalled: {} non-progress outcomes in a row (threshold {}). \
                 Replan: split the task into smaller tasks, relax a constraint that cannot be met, \
                 or resolve the missing dependency first.",
                state.count, state.threshold
            ))
        } else if state.review_loop {
            Some(format!(
                "Task {task_id} is in a review loop: the reviewer asked for the same changes twice. \
                 Replan: split the task, relax the disputed constraint, or resolve the missing \
                 dependency behind the repeated issues."
            ))
        } else {
            None
        }
    }
}
