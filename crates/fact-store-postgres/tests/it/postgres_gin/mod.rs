//! The conformance suite against `PgFactStore` without its search cache: every search is
//! answered by the GIN index over the valid facts' `tsvector`s and their stored term
//! documents.

use crate::postgres::{Postgres, options};

fact_store::conformance_suite!(Postgres(options().with_search_cache(false)));
