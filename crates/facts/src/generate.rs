//! `facts completions SHELL` and `facts man --out DIR`: shell completions and man pages,
//! generated from the same clap definition as the parser, so they cannot drift from it.

use std::io::Write;
use std::path::Path;

use clap_complete::Shell;

use crate::failure::Failure;

/// Writes the completion script of `command` (the parser's definition) for `shell` to
/// stdout.
pub(crate) fn completions(mut command: clap::Command, shell: Shell) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "facts", &mut script);
    std::io::stdout()
        .lock()
        .write_all(&script)
        .map_err(|e| Failure::failed(format!("cannot write: {e}")))
}

/// Writes one man page per command of `command` (the parser's definition) into `out`
/// (created if needed): `facts.1`, `facts-replay.1`, `facts-mem-add.1`, …
pub(crate) fn man(command: clap::Command, out: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", out.display())))?;
    clap_mangen::generate_to(command, out).map_err(|e| {
        Failure::failed(format!("cannot write man pages to {}: {e}", out.display()))
    })?;
    tracing::info!(dir = %out.display(), "man pages written");
    Ok(())
}
