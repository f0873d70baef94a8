//! Helpers for invoking `cargo` on this workspace.
//!
//! Every subcommand runs cargo the same way: the binary named by the `CARGO`
//! environment variable (set by the `cargo` that launched us, so the
//! toolchain stays the same), with the workspace root as working directory.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root: the parent of this crate's manifest directory.
pub(crate) fn workspace_root() -> Result<PathBuf, String> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(Path::to_path_buf).ok_or_else(|| {
        format!(
            "cannot find the workspace root: `{}` has no parent directory",
            manifest_dir.display()
        )
    })
}

/// A `cargo` command with the given arguments, run from the workspace root.
///
/// Uses `$CARGO` when set (it is, under `cargo run` and `cargo test`) and
/// falls back to `cargo` on the `PATH`.
pub(crate) fn command(args: &[&str]) -> Result<Command, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(args).current_dir(workspace_root()?);
    Ok(command)
}

/// In a debug build of xtask, runs `cargo run --release -p xtask -- SUBCOMMAND ARGS…` and
/// answers its outcome; in a release build, `None`, and the caller does the work itself.
/// Timings and memory figures from a debug build would mean nothing.
pub(crate) fn rerun_in_release(
    subcommand: &str,
    args: &[String],
) -> Option<Result<(), crate::error::Error>> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let mut forwarded = vec![
        "run",
        "--quiet",
        "--release",
        "--package",
        "xtask",
        "--",
        subcommand,
    ];
    forwarded.extend(args.iter().map(String::as_str));
    let status = command(&forwarded)
        .map_err(crate::error::Error::Failed)
        .and_then(|mut c| {
            c.status().map_err(|e| {
                crate::error::Error::Failed(format!("could not start the release build: {e}"))
            })
        });
    Some(status.and_then(|status| {
        if status.success() {
            Ok(())
        } else {
            Err(crate::error::Error::Failed(format!(
                "release {subcommand} failed ({status})"
            )))
        }
    }))
}
