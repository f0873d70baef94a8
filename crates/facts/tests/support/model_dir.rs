//! The sentence-embedding model of the tests that need one (`tests/hybrid.rs`,
//! `tests/models.rs`), which include this file with `#[path]`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Once;

/// The model directory `FACTMEM_MODEL_DIR` names. When it is unset: a failure under
/// `CI=true`, else `None` and one note on stderr saying that `skipped` is not tested and
/// how to assemble the directory (`eval "$(.ci/models)"`).
pub(crate) fn model_dir(skipped: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FACTMEM_MODEL_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_MODEL_DIR is not set under CI=true: assemble the model directory with \
         `eval \"$(.ci/models)\"` (.ci/run does)"
    );
    static SKIPPED: Once = Once::new();
    SKIPPED.call_once(|| {
        // Straight to stderr: the test harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "FACTMEM_MODEL_DIR is not set: {skipped} are skipped; `eval \"$(.ci/models)\"` \
             assembles the model directory and sets it"
        );
    });
    None
}
