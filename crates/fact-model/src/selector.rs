//! [`FactSelector`]: which valid facts an invalidation ends.

use serde::{Deserialize, Serialize};

use crate::SessionFact;

/// Picks valid facts by relation, and optionally by subject and source task.
///
/// What a dispatch result settles is said with selectors: an approval of task 3 settles
/// "every `issue` fact that task 3's reviews raised, whatever file it is about"
/// ([`FactSelector::from_task`]), a completed implementation settles `task:3 blocked_by`
/// ([`FactSelector::key`]). Extractors report them; stores apply them, so the decision
/// lives beside the rules that write the relations and survives a restart of the process.
///
/// ```
/// use fact_model::{FactSelector, SessionFact, SourceRole, Tag, Timestamp};
///
/// let issue = SessionFact::builder("src/a.rs", "issue", "camelCase names")
///     .tag(Tag::Error)
///     .source("3", SourceRole::Reviewer)
///     .valid_from(Timestamp::UNIX_EPOCH)
///     .build()?;
/// assert!(FactSelector::from_task("issue", "3").matches(&issue));
/// assert!(!FactSelector::from_task("issue", "4").matches(&issue));
/// assert!(FactSelector::key("src/a.rs", "issue").matches(&issue));
/// # Ok::<(), fact_model::FactError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FactSelector {
    /// Only facts about this subject; `None` for any subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Only facts with this relation.
    pub relation: String,
    /// Only facts produced by this task; `None` for any task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_task_id: Option<String>,
}

impl FactSelector {
    /// The valid facts of one `(subject, relation)` key, from any task.
    pub fn key(subject: impl Into<String>, relation: impl Into<String>) -> Self {
        FactSelector {
            subject: Some(subject.into()),
            relation: relation.into(),
            source_task_id: None,
        }
    }

    /// The valid facts with `relation` that task `source_task_id` produced, about any subject.
    pub fn from_task(relation: impl Into<String>, source_task_id: impl Into<String>) -> Self {
        FactSelector {
            subject: None,
            relation: relation.into(),
            source_task_id: Some(source_task_id.into()),
        }
    }

    /// Narrows the selector to the facts task `source_task_id` produced.
    #[must_use]
    pub fn with_source_task(mut self, source_task_id: impl Into<String>) -> Self {
        self.source_task_id = Some(source_task_id.into());
        self
    }

    /// Whether `fact` is one of the facts this selector picks (validity aside).
    #[must_use]
    pub fn matches(&self, fact: &SessionFact) -> bool {
        fact.relation() == self.relation
            && self.subject.as_deref().is_none_or(|s| s == fact.subject())
            && self
                .source_task_id
                .as_deref()
                .is_none_or(|t| t == fact.source_task_id())
    }
}
