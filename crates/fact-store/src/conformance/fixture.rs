//! The [`Fixture`] a backend implements to run the conformance suite, and the helpers the
//! suite's functions share: stores over a manual clock at [`t(0)`](t), fact builders, and
//! readers that turn a store's answers into lines an assertion compares.

use std::sync::Arc;

use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag, Timestamp};

use crate::{LongTermStore, SessionFactStore, StoreConfig, TermQuery, TermWeighting};

/// What a backend gives the conformance suite: fresh, empty stores of its kind.
///
/// Every function of the suite takes a `&dyn Fixture` and asks it for one or more stores,
/// each configured with the given [`StoreConfig`] and reading time from the given clock
/// (a [`ManualClock`] the test moves). A store a fixture returns must be new and empty,
/// and must share no facts with any other store it returned: the suite's tests run in
/// parallel, and a test may open two stores and compare them.
///
/// # Temporary state
///
/// The store owns whatever it needs to exist (a temporary directory for a file, a scope
/// of its own on a shared server, a database created for it) and removes it when it is
/// dropped, so a fixture itself holds nothing and a test leaves nothing behind. A
/// backend whose store does not clean up after itself returns a small wrapper that holds
/// the store and its state (the store declared first, so it closes before its directory
/// goes) and forwards the store's traits to it.
///
/// # Backends that cannot run here
///
/// A method returns `None` when the backend cannot run in this environment: a server
/// backend outside CI with no server configured. Each function of the suite then returns
/// at once and passes, so a plain `cargo test` on a laptop stays green; a fixture that
/// must not skip (under `CI=true`) panics instead of returning `None`.
///
/// # Example
///
/// The in-memory stores need no temporary state:
///
/// ```
/// use std::sync::Arc;
///
/// use fact_model::Clock;
/// use fact_store::conformance::Fixture;
/// use fact_store::{
///     InMemoryLongTermStore, InMemorySessionFactStore, LongTermStore, SessionFactStore,
///     StoreConfig,
/// };
///
/// /// The conformance suite's view of the in-memory stores.
/// struct InMemory;
///
/// impl Fixture for InMemory {
///     fn store(
///         &self,
///         config: StoreConfig,
///         clock: Arc<dyn Clock>,
///     ) -> Option<Arc<dyn SessionFactStore>> {
///         Some(Arc::new(InMemorySessionFactStore::new(config, clock)))
///     }
///
///     fn long_term(
///         &self,
///         config: StoreConfig,
///         clock: Arc<dyn Clock>,
///     ) -> Option<Arc<dyn LongTermStore>> {
///         Some(Arc::new(InMemoryLongTermStore::new(config, clock)))
///     }
/// }
///
/// // One function of the suite, called directly; in a test module,
/// // `fact_store::conformance_suite!(InMemory);` makes a test of each.
/// fact_store::conformance::temporal::valid_at_answers_for_any_instant(&InMemory);
/// ```
pub trait Fixture {
    /// A new, empty session fact store configured with `config`, reading time from
    /// `clock`; `None` when the backend cannot run here.
    fn store(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn SessionFactStore>>;

    /// A new, empty long-term store (facts, episodes, aliases and the profile) configured
    /// with `config`, reading time from `clock`; `None` when the backend cannot run here.
    fn long_term(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn LongTermStore>>;
}

/// Keyword overlap, the simplest weighting: each distinct query term a fact holds counts
/// `1 / query terms`, whatever its frequency.
#[derive(Debug)]
pub struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, query_terms: usize) -> f64 {
        1.0 / query_terms as f64
    }

    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

/// The suite's instant `secs` seconds after its epoch (`t(0)`, where every test's clock
/// starts: 2027-01-15 08:00:00 UTC).
///
/// # Panics
///
/// When the instant is out of [`Timestamp`]'s range (never for the seconds the suite
/// uses).
pub fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap()
}

/// A dispatch fact `subject relation object` from task `task` (an implementer's result,
/// tagged a decision), valid from [`t(secs)`](t).
///
/// # Panics
///
/// When the fact is invalid (an empty subject, relation or object).
pub fn fact(subject: &str, relation: &str, object: &str, task: u32, secs: i64) -> SessionFact {
    SessionFact::builder(subject, relation, object)
        .tag(Tag::Decision)
        .source(task.to_string(), SourceRole::Implementer)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// A memory fact `user prefers object` with a statement and a confidence, extracted from
/// `chat-1` and valid from [`t(0)`](t).
///
/// # Panics
///
/// When the fact is invalid (an empty object or statement, a confidence outside 0..=1).
pub fn memory(object: &str, statement: &str, confidence: f64) -> SessionFact {
    SessionFact::builder("user", "prefers", object)
        .tag(Tag::Preference)
        .source("chat-1", SourceRole::Extractor)
        .valid_from(t(0))
        .statement(statement)
        .confidence(confidence)
        .build()
        .unwrap()
}

/// A store of `fixture` with the default configuration, over a manual clock at
/// [`t(0)`](t), with that clock; `None` when the backend cannot run here.
pub fn store(fixture: &dyn Fixture) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(fixture, StoreConfig::default())
}

/// A store of `fixture` configured with `config`, over a manual clock at [`t(0)`](t), with
/// that clock; `None` when the backend cannot run here.
pub fn store_with(
    fixture: &dyn Fixture,
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    let clock = Arc::new(ManualClock::new(t(0)));
    let store = fixture.store(config, clock.clone())?;
    Some((store, clock))
}

/// A long-term store of `fixture` with the default configuration, over a manual clock at
/// [`t(0)`](t), with that clock; `None` when the backend cannot run here.
pub fn long_term(fixture: &dyn Fixture) -> Option<(Arc<dyn LongTermStore>, Arc<ManualClock>)> {
    let clock = Arc::new(ManualClock::new(t(0)));
    let store = fixture.long_term(StoreConfig::default(), clock.clone())?;
    Some((store, clock))
}

/// The valid facts as `subject relation object` lines, oldest first.
///
/// # Panics
///
/// When the store fails to read.
pub fn valid_lines(store: &dyn SessionFactStore) -> Vec<String> {
    store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect()
}

/// The facts a search with [`Overlap`] finds for `text` (the rest of `query` as given), as
/// `subject relation object` lines with their scores, best first.
///
/// # Panics
///
/// When the search fails.
pub fn search(
    store: &dyn SessionFactStore,
    text: &str,
    query: TermQuery<'_>,
) -> Vec<(String, f64)> {
    let mut query = query;
    query.text = text;
    store
        .search(&query, &Overlap)
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                format!(
                    "{} {} {}",
                    s.fact.subject(),
                    s.fact.relation(),
                    s.fact.object()
                ),
                s.score,
            )
        })
        .collect()
}
