//! [`KnownBudget`]: how much of what memory holds an extraction prompt lists.

/// The default number of known facts listed in an extraction prompt.
pub const DEFAULT_KNOWN_FACTS: usize = 30;
/// The default token budget of the known facts listed in an extraction prompt.
pub const DEFAULT_KNOWN_TOKENS: usize = 1_500;

/// How much of what memory holds an extraction prompt lists.
///
/// ```
/// use dispatch_runtime::KnownBudget;
///
/// let budget = KnownBudget::default().with_facts(10);
/// assert_eq!((budget.facts, budget.tokens), (10, 1_500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KnownBudget {
    /// The most facts listed (default [`DEFAULT_KNOWN_FACTS`]).
    pub facts: usize,
    /// The most tokens their lines may cost (default [`DEFAULT_KNOWN_TOKENS`]).
    pub tokens: usize,
}

impl Default for KnownBudget {
    fn default() -> Self {
        KnownBudget {
            facts: DEFAULT_KNOWN_FACTS,
            tokens: DEFAULT_KNOWN_TOKENS,
        }
    }
}

impl KnownBudget {
    /// Lists at most `facts` facts.
    #[must_use]
    pub fn with_facts(mut self, facts: usize) -> Self {
        self.facts = facts;
        self
    }

    /// Lets their lines cost at most `tokens` tokens.
    #[must_use]
    pub fn with_tokens(mut self, tokens: usize) -> Self {
        self.tokens = tokens;
        self
    }
}
