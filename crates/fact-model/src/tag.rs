//! [`Tag`]: the one closed vocabulary that classifies facts, and [`SourceRole`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! closed_vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident, $error:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The snake_case wire name.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = $error;

            fn from_str(input: &str) -> Result<Self, Self::Err> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|value| value.as_str() == input)
                    .ok_or_else(|| $error { input: crate::clip(input, 64).into_owned() })
            }
        }

        #[doc = concat!("An unknown ", $what, " name; the message lists the allowed values.")]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $error {
            /// The rejected text, clipped to 64 characters.
            pub input: String,
        }

        impl fmt::Display for $error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!("unknown ", $what, " {:?}; allowed: "), self.input)?;
                for (i, value) in $name::ALL.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(value.as_str())?;
                }
                Ok(())
            }
        }

        impl std::error::Error for $error {}
    };
}

closed_vocabulary! {
    /// What a fact is about. One closed vocabulary for every kind of fact, snake_case on
    /// the wire.
    ///
    /// - Dispatch tags, from extraction rules: `file_change`, `convention`, `decision`,
    ///   `error`, `dependency`, `test`.
    /// - Memory categories, for conversational facts: `preference`, `knowledge`,
    ///   `context`, `behavior`, `goal`, `correction`.
    /// - Archive fact types: `relationship`, `technical`, `observation`.
    ///
    /// ```
    /// use fact_model::Tag;
    ///
    /// assert_eq!("file_change".parse::<Tag>()?, Tag::FileChange);
    /// let err = "filechange".parse::<Tag>().unwrap_err();
    /// assert!(err.to_string().contains("allowed: file_change, convention"));
    /// # Ok::<(), fact_model::ParseTagError>(())
    /// ```
    Tag, ParseTagError, "tag" {
        /// A file was created, modified or mentioned.
        FileChange => "file_change",
        /// A convention was established or enforced.
        Convention => "convention",
        /// A decision: a status, a summary, an assessment.
        Decision => "decision",
        /// An error, an issue or a blocker.
        Error => "error",
        /// Something a task requires.
        Dependency => "dependency",
        /// A test run or failure.
        Test => "test",
        /// Memory: what the user prefers.
        Preference => "preference",
        /// Memory: something the user knows or told.
        Knowledge => "knowledge",
        /// Memory: the user's situation.
        Context => "context",
        /// Memory: how the user behaves.
        Behavior => "behavior",
        /// Memory: what the user wants to achieve.
        Goal => "goal",
        /// Memory: a correction of an earlier fact.
        Correction => "correction",
        /// Archive: a relationship between entities.
        Relationship => "relationship",
        /// Archive: a technical fact.
        Technical => "technical",
        /// Archive: an observation.
        Observation => "observation",
    }
}

closed_vocabulary! {
    /// Who produced a fact, snake_case on the wire.
    ///
    /// `implementer` and `reviewer` are dispatch agents; `user`, `assistant`, `system`
    /// and `extractor` produce conversational memory facts.
    ///
    /// ```
    /// use fact_model::SourceRole;
    /// assert_eq!("reviewer".parse::<SourceRole>()?, SourceRole::Reviewer);
    /// # Ok::<(), fact_model::ParseSourceRoleError>(())
    /// ```
    SourceRole, ParseSourceRoleError, "source role" {
        /// The implementer agent of a dispatch.
        Implementer => "implementer",
        /// The reviewer agent of a dispatch.
        Reviewer => "reviewer",
        /// A person, in a conversation.
        User => "user",
        /// An assistant, in a conversation.
        Assistant => "assistant",
        /// A system message.
        System => "system",
        /// An automatic fact extractor.
        Extractor => "extractor",
    }
}

impl SourceRole {
    /// The roles that run dispatch tasks and report dispatch results.
    pub const DISPATCH_AGENTS: &'static [SourceRole] =
        &[SourceRole::Implementer, SourceRole::Reviewer];

    /// Whether the role is a dispatch agent (an implementer or a reviewer), the only roles a
    /// dispatch prompt is compiled for and a dispatch result is read from.
    ///
    /// ```
    /// use fact_model::SourceRole;
    /// assert!(SourceRole::Reviewer.is_dispatch_agent());
    /// assert!(!SourceRole::User.is_dispatch_agent());
    /// ```
    #[must_use]
    pub fn is_dispatch_agent(self) -> bool {
        matches!(self, SourceRole::Implementer | SourceRole::Reviewer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_roundtrip_through_serde_and_fromstr() {
        for tag in Tag::ALL {
            let json = serde_json::to_string(tag).unwrap();
            assert_eq!(json, format!("\"{}\"", tag.as_str()));
            assert_eq!(serde_json::from_str::<Tag>(&json).unwrap(), *tag);
            assert_eq!(tag.as_str().parse::<Tag>().unwrap(), *tag);
        }
        for role in SourceRole::ALL {
            assert_eq!(role.as_str().parse::<SourceRole>().unwrap(), *role);
            let json = serde_json::to_string(role).unwrap();
            assert_eq!(serde_json::from_str::<SourceRole>(&json).unwrap(), *role);
        }
        assert_eq!(Tag::ALL.len(), 15);
        assert_eq!(SourceRole::ALL.len(), 6);
    }

    #[test]
    fn parse_errors_list_allowed_values() {
        let err = "File_Change".parse::<Tag>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown tag \"File_Change\"; allowed: file_change, convention, decision, error, \
             dependency, test, preference, knowledge, context, behavior, goal, correction, \
             relationship, technical, observation"
        );
        let err = "bot".parse::<SourceRole>().unwrap_err();
        assert!(
            err.to_string()
                .ends_with("implementer, reviewer, user, assistant, system, extractor")
        );
    }
}
