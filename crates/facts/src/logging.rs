//! Logs: a `tracing` subscriber that writes to stderr only (stdout is the protocol), with
//! the level from `--log-level`, else `RUST_LOG`, else warnings only.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How much is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    // Nothing.
    Off,
    // Errors only.
    Error,
    // Errors and warnings (the default).
    Warn,
    // What each command does, once.
    Info,
    // Each request too.
    Debug,
    // Everything.
    Trace,
}

impl LogLevel {
    /// The level as a filter directive for every target.
    fn directive(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Installs the subscriber: `level` when given (it wins over `RUST_LOG`), else the
/// `RUST_LOG` directives, else warnings only. A `RUST_LOG` that does not parse is reported
/// as a warning and replaced by the default.
pub(crate) fn init(level: Option<LogLevel>) {
    let (filter, bad_env) = match level {
        Some(level) => (EnvFilter::new(level.directive()), None),
        None => match EnvFilter::try_from_default_env() {
            Ok(filter) => (filter, None),
            Err(e) => {
                let bad = std::env::var_os(EnvFilter::DEFAULT_ENV).map(|_| e.to_string());
                (EnvFilter::new(LogLevel::Warn.directive()), bad)
            }
        },
    };
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    if let (Ok(()), Some(error)) = (installed, bad_env) {
        tracing::warn!("ignoring RUST_LOG: {error}");
    }
}
