//! Logs: a `tracing` subscriber that writes to stderr only (stdout is the protocol), with
//! the level from `--log-level`, else `RUST_LOG`, else warnings only; and, with `facts mcp
//! --otlp-endpoint`, a second layer that exports spans as traces (`otlp.rs`), whatever the
//! log level.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::otlp;

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
/// as a warning and replaced by the default. With `otlp` (`--otlp-endpoint`), spans are
/// exported there too, through the exporter returned, which sends what is left when it is
/// dropped; an endpoint that cannot be used is the error, and nothing is installed then.
pub(crate) fn init(
    level: Option<LogLevel>,
    otlp: Option<&str>,
) -> Result<Option<otlp::Exporter>, String> {
    let (traces, exporter) = match otlp {
        Some(endpoint) => {
            let (layer, exporter) = otlp::layer(endpoint)?;
            (Some(layer), Some(exporter))
        }
        None => (None, None),
    };
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
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let installed = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init();
    if let (Ok(()), Some(error)) = (installed, bad_env) {
        tracing::warn!("ignoring RUST_LOG: {error}");
    }
    Ok(exporter)
}
