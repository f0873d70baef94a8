//! The PostgreSQL server of the tests that need one (`tests/postgres.rs`,
//! `tests/hybrid.rs`), which include this file with `#[path]`.

use std::io::Write;
use std::sync::Once;

/// The server `FACTMEM_PG_URL` names. When it is unset: a failure under `CI=true`, else
/// `None` and one note on stderr saying that `skipped` is not tested and how to start a
/// throwaway server (`eval "$(.ci/pg-server start)"`).
pub(crate) fn pg_server(skipped: &str) -> Option<String> {
    if let Ok(url) = std::env::var("FACTMEM_PG_URL")
        && !url.is_empty()
    {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_URL is not set under CI=true: start a server with \
         `eval \"$(.ci/pg-server start)\"` (.ci/run does)"
    );
    static SKIPPED: Once = Once::new();
    SKIPPED.call_once(|| {
        // Straight to stderr: the test harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "FACTMEM_PG_URL is not set: {skipped} not tested; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
    });
    None
}
