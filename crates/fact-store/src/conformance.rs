//! The conformance kit (feature `conformance`): the behaviour every store must have,
//! written once as plain functions over a [`Fixture`] that each backend's tests call.
//!
//! A backend passes the suite by implementing [`Fixture`] (fresh stores of its kind, each
//! owning its temporary state) and expanding
//! [`conformance_suite!`](crate::conformance_suite) in a test module, which makes one
//! `#[test]` of each function of the suite, in modules named like the suite's
//! (`crud::update_errors_are_typed`):
//!
//! - [`compaction`]: capacity and compaction policies;
//! - [`crud`]: get, update, delete, tags and statement dedup;
//! - [`export`]: exporting a scope to a file and importing it, exactly or merged;
//! - [`filters`]: the filter language inside every read that takes one;
//! - [`long_term`](mod@long_term): episodes, message search, aliases, the profile and
//!   commits;
//! - [`search`](mod@search): the term index, its filters and order;
//! - [`snapshot`]: snapshot export and import;
//! - [`temporal`]: newer batches end older facts, nothing is overwritten;
//! - [`token_vectors`]: token vectors kept exactly and following their facts;
//! - [`transaction`]: several steps that commit together;
//! - [`vectors`]: embeddings, the nearest-neighbour search and its filters.
//!
//! Beside the suite, for a backend's own tests:
//!
//! - [`properties`]: the differential property test, random operation sequences applied
//!   to the in-memory store and to the backend's, which must give the same answers;
//! - [`memories`]: random memories of every kind of record, and a store's export;
//! - [`durable`]: what every durable store passes with stores it opened itself (several
//!   store objects on one scope, reopening, caches following other writers);
//! - [`stress`]: the lock stress loop, threads racing on one store;
//! - [`token_properties`]: the token-vector property test.
//!
//! The functions can be called directly too, one at a time
//! (`crud::update_errors_are_typed(&fixture)`), and the helpers they share ([`store`],
//! [`fact`], [`valid_lines`], ...) are public, for a backend's own tests of what only it
//! has.
//!
//! ```
//! use std::sync::Arc;
//!
//! use fact_model::Clock;
//! use fact_store::conformance::Fixture;
//! use fact_store::{
//!     InMemoryLongTermStore, InMemorySessionFactStore, LongTermStore, SessionFactStore,
//!     StoreConfig,
//! };
//!
//! /// The in-memory stores, which need no temporary state.
//! struct InMemory;
//!
//! impl Fixture for InMemory {
//!     fn store(
//!         &self,
//!         config: StoreConfig,
//!         clock: Arc<dyn Clock>,
//!     ) -> Option<Arc<dyn SessionFactStore>> {
//!         Some(Arc::new(InMemorySessionFactStore::new(config, clock)))
//!     }
//!
//!     fn long_term(
//!         &self,
//!         config: StoreConfig,
//!         clock: Arc<dyn Clock>,
//!     ) -> Option<Arc<dyn LongTermStore>> {
//!         Some(Arc::new(InMemoryLongTermStore::new(config, clock)))
//!     }
//! }
//!
//! // Under `cargo test`, one test per function of the suite.
//! fact_store::conformance_suite!(InMemory);
//! # fn main() {}
//! ```

// The kit is test code shipped as a library: each function asserts what a store must do,
// and a failed assertion (a panic) is the kit's output. The workspace denies panics in
// library code, which is right for the stores and wrong here.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
// `[fact.clone()]` reads better in an assertion than `std::slice::from_ref(&fact)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

pub mod compaction;
pub mod crud;
pub mod durable;
pub mod export;
pub mod filters;
mod fixture;
pub mod long_term;
pub mod memories;
pub mod metadata;
pub mod properties;
pub mod search;
pub mod snapshot;
pub mod stress;
pub mod temporal;
#[cfg(test)]
mod tests;
pub mod token_properties;
pub mod token_vectors;
pub mod transaction;
pub mod vectors;

pub use fixture::{
    Fixture, Overlap, fact, long_term, memory, search, store, store_with, t, valid_lines,
};

/// Expands, in the invoking module, to one `#[test]` per function of the conformance
/// suite, each calling that function with the fixture `$fixture`.
///
/// `$fixture` is an expression of a type that implements
/// [`Fixture`](crate::conformance::Fixture), evaluated afresh for each test (a unit struct,
/// usually). The tests are grouped in modules named like the suite's
/// (`compaction`, `crud`, `long_term`, `metadata`, `search`, `snapshot`, `temporal`, `token_vectors`,
/// `transaction`, `vectors`), so a backend's test names read
/// `sqlite::crud::update_errors_are_typed`; the expansion also defines a private function
/// `conformance_fixture` in the invoking module.
///
/// ```
/// # use std::sync::Arc;
/// # use fact_model::Clock;
/// # use fact_store::{InMemoryLongTermStore, InMemorySessionFactStore, LongTermStore, SessionFactStore, StoreConfig};
/// # struct InMemory;
/// # impl fact_store::conformance::Fixture for InMemory {
/// #     fn store(&self, config: StoreConfig, clock: Arc<dyn Clock>) -> Option<Arc<dyn SessionFactStore>> {
/// #         Some(Arc::new(InMemorySessionFactStore::new(config, clock)))
/// #     }
/// #     fn long_term(&self, config: StoreConfig, clock: Arc<dyn Clock>) -> Option<Arc<dyn LongTermStore>> {
/// #         Some(Arc::new(InMemoryLongTermStore::new(config, clock)))
/// #     }
/// # }
/// // In `tests/it/in_memory.rs`, with `InMemory` a `Fixture`:
/// fact_store::conformance_suite!(InMemory);
/// # fn main() {}
/// ```
///
/// A unit test of the kit fails when a public function of a conformance module is missing
/// from the list below, so a new function of the suite cannot go unrun.
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
macro_rules! conformance_suite {
    // The expansion: one module of tests per conformance module.
    (@tests $fixture:expr; $($module:ident: [$($name:ident),* $(,)?];)*) => {
        /// The fixture each conformance test of this module runs on, made afresh per test.
        fn conformance_fixture() -> impl $crate::conformance::Fixture {
            $fixture
        }

        $(
            mod $module {
                $(
                    #[test]
                    fn $name() {
                        $crate::conformance::$module::$name(&super::conformance_fixture());
                    }
                )*
            }
        )*
    };
    ($fixture:expr $(,)?) => {
        $crate::conformance_suite!(@tests $fixture;
                compaction: [
                    six_hundred_results_compacted_to_five_hundred_keep_the_newest_verbatim,
                    merge_by_subject_writes_one_summary_per_subject,
                    lowest_confidence_first_drops_the_least_certain,
                    history_beyond_its_limit_is_dropped_oldest_first,
                    without_auto_compaction_the_store_grows,
                ];
                filters: [
                    filtered_reads_match_brute_force,
                    a_selective_filter_still_fills_the_limit,
                ];
                metadata: [
                    each_version_keeps_its_own_metadata,
                    update_replaces_and_clears_metadata,
                    snapshots_carry_metadata,
                    an_episode_keeps_its_metadata,
                ];
                crud: [
                    statements_equal_after_case_and_whitespace_folding_are_one_fact,
                    update_changes_only_the_given_fields,
                    update_errors_are_typed,
                    delete_removes_every_version_and_unknown_ids_are_not_found,
                    tags_filter_is_any_of,
                    the_store_is_shared_between_threads,
                ];
                export: [
                    an_export_imported_into_an_empty_scope_exports_the_same_bytes,
                    importing_a_file_twice_changes_nothing,
                    a_bad_file_imports_nothing_and_names_its_line,
                    an_import_into_a_scope_with_memory_merges,
                    an_alias_cycle_with_the_scope_refuses_the_file_naming_its_line,
                    as_of_exports_the_memory_as_it_was,
                ];
                long_term: [
                    an_episode_is_its_messages_kept_once_with_their_times,
                    every_message_is_searchable_and_ranked_as_in_memory,
                    message_search_honours_its_limit_and_as_of,
                    a_deleted_or_replaced_episode_leaves_no_trace_in_search,
                    aliases_are_set_listed_replaced_and_removed_and_cycles_refused,
                    the_profile_keeps_every_version_with_its_time,
                    a_commit_applies_facts_episode_and_profile_together_or_not_at_all,
                    an_episode_is_marked_extracted_in_the_commit_of_its_facts,
                    a_subjects_newest_valid_facts_and_its_relations,
                    a_keyed_commit_applies_at_most_once,
                    erasing_leaves_the_scope_empty_and_usable,
                ];
                search: [
                    ranks_by_score_then_recency_then_id,
                    filters_by_tag_and_source_task_and_limits,
                    invalidated_facts_leave_the_index_and_as_of_finds_them,
                    heavy_churn_rebuilds_the_index_without_changing_answers,
                ];
                snapshot: [
                    export_then_import_yields_an_equal_store,
                    bad_records_are_skipped_with_diagnostics_and_the_rest_imported,
                    documents_that_are_not_snapshots_are_errors_and_import_nothing,
                    importing_into_a_non_empty_store_lets_the_snapshot_win_its_keys,
                    an_ended_version_imported_while_the_fact_is_valid_goes_into_history,
                ];
                temporal: [
                    a_later_batch_invalidates_the_same_subject_and_relation,
                    facts_of_one_batch_never_invalidate_each_other,
                    re_adding_a_valid_triple_refreshes_it,
                    re_adding_an_invalidated_triple_starts_a_new_version,
                    a_batch_that_re_adds_one_of_several_facts_keeps_it_whatever_the_order,
                    a_fact_older_than_the_current_truth_arrives_superseded,
                    a_newer_fact_supersedes_and_names_its_successor,
                    explicit_invalidation_uses_the_injected_clock,
                    valid_at_answers_for_any_instant,
                    arriving_invalidated_and_repeated_facts_are_skipped_with_reasons,
                ];
                token_vectors: [
                    token_vectors_round_trip_in_the_order_asked_each_once,
                    token_vectors_of_ids_the_store_does_not_hold_are_skipped,
                    models_are_kept_apart_and_a_new_value_replaces_the_old_one,
                    stats_count_facts_and_their_bytes,
                    untokenized_lists_exactly_the_valid_facts_without_token_vectors_oldest_first,
                    deleting_a_fact_deletes_its_token_vectors_and_a_superseded_fact_keeps_them,
                    history_eviction_removes_the_token_vectors_of_the_versions_it_drops,
                    an_invalid_model_identity_is_refused_and_nothing_of_the_call_is_stored,
                ];
                transaction: [
                    batches_of_one_transaction_supersede_in_step_order,
                    turns_said_at_the_same_time_still_supersede_in_step_order,
                    facts_of_one_batch_in_a_transaction_stay_together,
                    an_old_conversation_archived_late_arrives_superseded,
                    an_end_with_a_successor_crosses_predicates,
                    an_end_that_cannot_apply_changes_nothing_and_says_why,
                    settling_and_adding_is_one_write,
                    a_delete_step_removes_every_version_and_an_unknown_id_none,
                    compaction_runs_once_after_the_last_step,
                    recorded_at_is_kept_as_given_and_never_confused_with_valid_from,
                    a_keyed_transaction_applies_at_most_once,
                ];
                vectors: [
                    the_same_vector_is_found_first_with_cosine_one,
                    vectors_are_normalized,
                    invalid_embeddings_are_rejected_and_nothing_of_the_call_is_stored,
                    the_first_vector_of_a_new_model_fixes_its_dimension_within_a_call,
                    embeddings_of_ids_the_store_does_not_hold_are_skipped,
                    models_are_kept_apart,
                    superseded_and_invalidated_facts_are_not_found_until_valid_again,
                    deleting_a_fact_deletes_its_embeddings,
                    tags_and_the_source_task_filter_the_search,
                    limits_and_unusable_queries_find_nothing,
                    unembedded_lists_exactly_the_valid_facts_without_a_vector_oldest_first,
                    a_new_vector_replaces_the_old_one,
                    compaction_and_history_eviction_remove_the_embeddings_of_the_ids_they_drop,
                ];
        );
    };
}
