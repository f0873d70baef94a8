//! [`Alias`] and [`ProfileEntry`]: the rows long-term memory keeps beside the facts and the
//! episodes of a scope.

use fact_model::{ProfileField, Timestamp};
use serde::{Deserialize, Serialize};

/// Another name of an entity: facts about `alias` are stored and found under `entity`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Alias {
    /// The other name, normalized (see `fact_model::normalize_entity`).
    pub alias: String,
    /// The entity it names.
    pub entity: String,
    /// When it was set.
    pub at: Timestamp,
}

/// One version of one field of the user's profile: its text from `at` on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// Which field.
    pub field: ProfileField,
    /// Its text (empty: cleared).
    pub text: String,
    /// When it took this text.
    pub at: Timestamp,
}
