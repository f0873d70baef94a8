//! `facts completions SHELL` and `facts man --out DIR`: shell completions and man pages,
//! generated from the same clap definition as the parser, so they cannot drift from it.

use std::io::Write;
use std::path::Path;

use clap_complete::Shell;

use crate::Failure;

/// Writes the completion script for `shell` to stdout.
pub(crate) fn completions(shell: Shell) -> Result<(), Failure> {
    let mut command = crate::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "facts", &mut script);
    std::io::stdout()
        .lock()
        .write_all(&script)
        .map_err(|e| Failure::failed(format!("cannot write: {e}")))
}

/// Writes one man page per command into `out` (created if needed): `facts.1`,
/// `facts-replay.1`, `facts-mem-add.1`, …
pub(crate) fn man(out: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", out.display())))?;
    clap_mangen::generate_to(crate::command(), out).map_err(|e| {
        Failure::failed(format!("cannot write man pages to {}: {e}", out.display()))
    })?;
    tracing::info!(dir = %out.display(), "man pages written");
    Ok(())
}
