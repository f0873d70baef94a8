//! Repository automation for the workspace, run as `cargo xtask <subcommand>`.
//!
//! `cargo xtask` is an alias (see `.cargo/config.toml`) for running this
//! binary, so the only tool a contributor or CI needs is `cargo` itself.
//!
//! # Subcommands
//!
//! - `check`: the full CI gate (format, lint, test, docs, public API, benches,
//!   packaging, cargo deny); see [`check`].
//! - `eval locomo --data PATH`: the LoCoMo retrieval evaluation; see [`eval`]; with
//!   `--memory`, asked of the memory through `recall` ([`eval_memory`]).
//! - `bench-ref --facts N`: ours side by side with the TypeScript reference; see
//!   [`bench_ref`].
//! - `load [--clients N] [--secs S]`: the full load test of `facts mcp --http`; see
//!   [`load`].
//! - `man`: the `facts` man pages into `target/man`; see [`man`].
//! - `dist [--check-reproducible]`: this platform's release artifacts into `target/dist`;
//!   see [`dist`].
//! - `public-api [--bless]`: the committed public API snapshots; see [`public_api`].
//! - `fuzz --seconds N [NAME]`: the cargo-fuzz targets of `fuzz/` (nightly); see
//!   [`fuzz`].
//! - `help`: print usage.
//!
//! # Adding a subcommand
//!
//! Write a module with a `pub(crate) fn run(args: &[String]) -> Result<(), Error>`
//! that parses its own arguments, then add one row to [`COMMANDS`]. Usage
//! text and dispatch are generated from that table.
//!
//! Repository hygiene rules (file headers, whitespace, crate layering,
//! injected time) live in the test-only `tidy` module, so they run as part of
//! `cargo test --workspace`.

mod bench_export;
mod bench_ref;
mod cargo;
mod check;
mod dist;
mod error;
mod eval;
mod eval_frontier;
mod eval_memory;
mod fuzz;
mod load;
mod locomo;
mod man;
mod msrv;
mod public_api;
#[cfg(test)]
mod tidy;
mod tokens;

use std::io::Write as _;
use std::process::ExitCode;

use crate::error::Error;

/// One subcommand: its name, a one-line summary for the usage text, and the
/// function that runs it with the remaining arguments.
struct Subcommand {
    /// What the user types after `cargo xtask`.
    name: &'static str,
    /// Argument synopsis shown in the usage text, e.g. `locomo --data PATH`.
    synopsis: &'static str,
    /// One line for the usage text.
    summary: &'static str,
    /// Runs the subcommand with the arguments that follow its name.
    run: fn(&[String]) -> Result<(), Error>,
}

/// Every subcommand, in the order the usage text lists them.
const COMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "check",
        synopsis: "",
        summary: "run every CI check: fmt, clippy, tests, docs, public API, benches, packaging, deny",
        run: check::run,
    },
    Subcommand {
        name: "eval",
        synopsis: "locomo --data PATH [...] | tokens --corpus DIR",
        summary: "LoCoMo retrieval recall and latency; ledger-first prompt tokens vs full replay",
        run: eval::run,
    },
    Subcommand {
        name: "bench-ref",
        synopsis: "--facts N [--queries Q] [--runs R]",
        summary: "ingest, retrieval and RSS side by side with the TypeScript reference",
        run: bench_ref::run,
    },
    Subcommand {
        name: "bench-export",
        synopsis: "[--facts N,M...] [--runs R]",
        summary: "facts mem import and export: records/s and peak RSS on SQLite and PostgreSQL",
        run: bench_export::run,
    },
    Subcommand {
        name: "load",
        synopsis: "[--clients N] [--secs S] [--tenants T] [--rate R]",
        summary: "load facts mcp --http with many MCP clients and tenants, then across a PostgreSQL restart",
        run: load::run,
    },
    Subcommand {
        name: "man",
        synopsis: "",
        summary: "write the facts man pages (one per command) into target/man",
        run: man::run,
    },
    Subcommand {
        name: "dist",
        synopsis: "[--check-reproducible]",
        summary: "this platform's release artifacts into target/dist: archive, wheel, npm packages, SHA256SUMS",
        run: dist::run,
    },
    Subcommand {
        name: "public-api",
        synopsis: "[--bless] [CRATE...]",
        summary: "compare each library crate's public API with its snapshot; --bless rewrites",
        run: public_api::run,
    },
    Subcommand {
        name: "fuzz",
        synopsis: "--seconds N [NAME]",
        summary: "run the cargo-fuzz targets N seconds each (nightly): executions, corpus, RSS",
        run: fuzz::run,
    },
];

fn main() -> ExitCode {
    // Run by cargo as `RUSTC_WRAPPER` for the `rust-version` check (`msrv.rs`).
    if let Some(version) = std::env::var_os(msrv::WRAPPER_ENV) {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        return msrv::wrap(&version.to_string_lossy(), &args);
    }
    let args: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.into_string())
        .collect();
    let args = match args {
        Ok(args) => args,
        Err(arg) => {
            eprintln!("error: argument {arg:?} is not valid UTF-8");
            return ExitCode::from(2);
        }
    };
    let Some((name, rest)) = args.split_first() else {
        print_usage();
        return ExitCode::SUCCESS;
    };
    if matches!(name.as_str(), "help" | "-h" | "--help") {
        print_usage();
        return ExitCode::SUCCESS;
    }
    let result = match COMMANDS.iter().find(|command| command.name == name) {
        Some(command) => (command.run)(rest),
        None => Err(Error::Usage(format!("unknown subcommand `{name}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(message)) => {
            eprintln!("error: {message}\n\n{}", usage());
            ExitCode::from(2)
        }
        Err(Error::Failed(message)) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the usage text to stdout, where `--help` output conventionally goes.
fn print_usage() {
    // Unlike `println!`, this does not panic when stdout is closed (e.g. piped
    // into `head`); there is nobody left to tell, so the error is dropped.
    let _ = writeln!(std::io::stdout(), "{}", usage());
}

/// The usage text, generated from [`COMMANDS`].
fn usage() -> String {
    let mut text = String::from("Usage: cargo xtask <SUBCOMMAND> [ARGS]\n\nSubcommands:\n");
    let heads: Vec<String> = COMMANDS
        .iter()
        .map(|command| {
            format!("{} {}", command.name, command.synopsis)
                .trim_end()
                .to_owned()
        })
        .collect();
    // Summaries start two columns after the longest synopsis, so none runs into its own.
    let width = heads
        .iter()
        .map(|head| head.chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    for (head, command) in heads.iter().zip(COMMANDS) {
        text.push_str(&format!("  {head:<width$}{}\n", command.summary));
    }
    text.push_str(&format!("  {:<width$}{}", "help", "print this message"));
    text
}
