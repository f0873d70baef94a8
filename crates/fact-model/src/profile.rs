//! What memory knows about its user besides facts (seed 002): the [`UserContext`] and the
//! [`MemoryHistory`], each a few short texts, addressed field by field as a
//! [`ProfileField`].

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the user is about: the `User Context:` section of a formatted memory.
///
/// Empty fields are unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserContext {
    /// Work context: role, team, projects.
    pub work: String,
    /// Personal context: family, place, interests.
    pub personal: String,
    /// What is on the user's mind now.
    pub top_of_mind: String,
}

/// Summaries of the user's past: the `History:` section of a formatted memory.
///
/// Empty fields are unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryHistory {
    /// The recent months.
    pub recent_months: String,
    /// Earlier context.
    pub earlier_context: String,
    /// Long-term background.
    pub long_term_background: String,
}

/// One field of the user context or the history; snake_case on the wire.
///
/// ```
/// use fact_model::ProfileField;
///
/// assert_eq!("top_of_mind".parse::<ProfileField>(), Ok(ProfileField::TopOfMind));
/// assert_eq!(ProfileField::RecentMonths.to_string(), "recent_months");
/// assert!("mood".parse::<ProfileField>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileField {
    /// [`UserContext::work`].
    Work,
    /// [`UserContext::personal`].
    Personal,
    /// [`UserContext::top_of_mind`].
    TopOfMind,
    /// [`MemoryHistory::recent_months`].
    RecentMonths,
    /// [`MemoryHistory::earlier_context`].
    EarlierContext,
    /// [`MemoryHistory::long_term_background`].
    LongTermBackground,
}

impl ProfileField {
    /// Every field, in the order they are rendered.
    pub const ALL: [ProfileField; 6] = [
        ProfileField::Work,
        ProfileField::Personal,
        ProfileField::TopOfMind,
        ProfileField::RecentMonths,
        ProfileField::EarlierContext,
        ProfileField::LongTermBackground,
    ];

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileField::Work => "work",
            ProfileField::Personal => "personal",
            ProfileField::TopOfMind => "top_of_mind",
            ProfileField::RecentMonths => "recent_months",
            ProfileField::EarlierContext => "earlier_context",
            ProfileField::LongTermBackground => "long_term_background",
        }
    }

    /// The field's text in `context` or `history`.
    #[must_use]
    pub fn get<'a>(self, context: &'a UserContext, history: &'a MemoryHistory) -> &'a str {
        match self {
            ProfileField::Work => &context.work,
            ProfileField::Personal => &context.personal,
            ProfileField::TopOfMind => &context.top_of_mind,
            ProfileField::RecentMonths => &history.recent_months,
            ProfileField::EarlierContext => &history.earlier_context,
            ProfileField::LongTermBackground => &history.long_term_background,
        }
    }

    /// Sets the field's text in `context` or `history`.
    pub fn set(self, context: &mut UserContext, history: &mut MemoryHistory, text: String) {
        let slot = match self {
            ProfileField::Work => &mut context.work,
            ProfileField::Personal => &mut context.personal,
            ProfileField::TopOfMind => &mut context.top_of_mind,
            ProfileField::RecentMonths => &mut history.recent_months,
            ProfileField::EarlierContext => &mut history.earlier_context,
            ProfileField::LongTermBackground => &mut history.long_term_background,
        };
        *slot = text;
    }
}

impl fmt::Display for ProfileField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ProfileField {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ProfileField::ALL
            .into_iter()
            .find(|field| field.as_str() == text)
            .ok_or_else(|| {
                let allowed: Vec<&str> = ProfileField::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown profile field {:?}; allowed: {}",
                    crate::clip(text, 32),
                    allowed.join(", ")
                )
            })
    }
}
