//! The `rust-version` check: the crates that declare the workspace's `rust-version`
//! (1.89) build with what that toolchain's cargo would accept.
//!
//! A rust-version holds for every feature of a package, and cargo refuses to build a
//! package (or one of its dependencies) that declares a newer one than the toolchain. Only
//! one toolchain (1.95) is installed here, so the step makes cargo believe it runs 1.89:
//! it sets `RUSTC_WRAPPER` to this very binary, which, asked for `rustc -vV`, reports the
//! declared version, and otherwise runs the real `rustc` unchanged. `cargo check` of the
//! core crates with their default features then fails on any package of their graph that
//! needs a newer toolchain (as `fact-store` did when it declared 1.95 for PostgreSQL's
//! pool). That newer *language and library* features stay out is clippy's
//! `incompatible_msrv` lint, which reads the same `rust-version`.

use std::ffi::OsString;
use std::process::{Command, ExitCode, Stdio};

use crate::cargo;
use crate::error::Error;

/// The environment variable that makes this binary a rustc wrapper reporting its value as
/// the compiler's version.
pub(crate) const WRAPPER_ENV: &str = "XTASK_RUSTC_AS";

/// The workspace's `rust-version`, which these crates declare (the workspace manifest's).
pub(crate) const WORKSPACE_RUST_VERSION: &str = "1.89.0";

/// The crates that must build with [`WORKSPACE_RUST_VERSION`], with their default
/// features: the domain crates, the runtime, the SQL core and the SQLite backend.
/// `fact-store-postgres` declares 1.95, and so do the front ends, whose default features
/// enable it.
pub(crate) const CRATES: &[&str] = &[
    "fact-model",
    "fact-store",
    "fact-extract",
    "fact-retrieve",
    "factmem-ledger",
    "fact-store-sql",
    "fact-store-sqlite",
    "dispatch-runtime",
];

/// The `cargo xtask check` step: `cargo check` of [`CRATES`] as a toolchain of
/// [`WORKSPACE_RUST_VERSION`] would run it (its own target directory, so the main one's
/// fingerprints stay valid).
pub(crate) fn check() -> Result<(), Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Failed(format!("cannot find the xtask binary: {e}")))?;
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let mut args = vec!["check", "--locked"];
    for krate in CRATES {
        args.extend(["-p", krate]);
    }
    let status = cargo::command(&args)
        .map_err(Error::Failed)?
        .env("RUSTC_WRAPPER", &exe)
        .env(WRAPPER_ENV, WORKSPACE_RUST_VERSION)
        .env("CARGO_TARGET_DIR", root.join("target").join("msrv"))
        .status()
        .map_err(|e| Error::Failed(format!("`cargo check` could not start: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Failed(format!(
            "{} do not build as Rust {WORKSPACE_RUST_VERSION} would ({status}): a dependency \
             declares a newer rust-version; cargo's message above names it",
            CRATES.join(", ")
        )))
    }
}

/// Runs as the rustc wrapper (`$RUSTC_WRAPPER rustc ARGS…`): `rustc -vV` reports `version`
/// as the release; anything else runs the real rustc, whose exit code is returned.
pub(crate) fn wrap(version: &str, args: &[OsString]) -> ExitCode {
    let Some((rustc, rest)) = args.split_first() else {
        eprintln!("xtask as rustc wrapper: no rustc to run");
        return ExitCode::from(2);
    };
    if rest.iter().any(|arg| arg == "-vV") {
        let output = Command::new(rustc)
            .args(rest)
            .stderr(Stdio::inherit())
            .output();
        let Ok(output) = output else {
            eprintln!(
                "xtask as rustc wrapper: cannot run {}",
                rustc.to_string_lossy()
            );
            return ExitCode::from(2);
        };
        let reported = as_version(&String::from_utf8_lossy(&output.stdout), version);
        // Cargo reads the version from the wrapper's standard output.
        if std::io::Write::write_all(&mut std::io::stdout(), reported.as_bytes()).is_err() {
            return ExitCode::FAILURE;
        }
        return if output.status.success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    match Command::new(rustc).args(rest).status() {
        Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        Err(err) => {
            eprintln!(
                "xtask as rustc wrapper: cannot run {}: {err}",
                rustc.to_string_lossy()
            );
            ExitCode::from(2)
        }
    }
}

/// `rustc -vV` output with `version` as its release (the first line and `release:`).
fn as_version(verbose: &str, version: &str) -> String {
    verbose
        .lines()
        .map(|line| {
            if let Some(rest) = line.strip_prefix("rustc ") {
                let tail = rest.split_once(' ').map_or("", |(_, tail)| tail);
                format!("rustc {version} {tail}")
            } else if line.starts_with("release: ") {
                format!("release: {version}")
            } else {
                line.to_owned()
            }
        })
        .map(|line| line + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::as_version;

    #[test]
    fn the_reported_version_is_the_declared_one_and_the_rest_is_kept() {
        let real = "rustc 1.95.0 (59807616e 2026-09-01)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\nLLVM version: 21.1\n";
        assert_eq!(
            as_version(real, "1.89.0"),
            "rustc 1.89.0 (59807616e 2026-09-01)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.89.0\nLLVM version: 21.1\n"
        );
    }

    #[test]
    fn the_crates_checked_declare_the_workspace_version() {
        // Each listed crate inherits the workspace's rust-version, which is the one checked.
        let root = crate::cargo::workspace_root().unwrap();
        let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let declared = format!(
            "rust-version = \"{}\"",
            super::WORKSPACE_RUST_VERSION.trim_end_matches(".0")
        );
        assert!(
            workspace.contains(&declared),
            "the workspace declares another rust-version than {declared}"
        );
        for dir in [
            "fact-model",
            "fact-store",
            "fact-extract",
            "fact-retrieve",
            "ledger",
            "fact-store-sql",
            "fact-store-sqlite",
            "dispatch-runtime",
        ] {
            let manifest =
                std::fs::read_to_string(root.join("crates").join(dir).join("Cargo.toml")).unwrap();
            assert!(
                manifest.contains("rust-version.workspace = true"),
                "{dir} declares its own rust-version"
            );
        }
    }
}
