//! Rust log events into Python's `logging`: a `tracing` layer that hands each event at
//! INFO or above to the `factmem` logger (`logging.getLogger("factmem")`), with the
//! event's target in the record's message, so an application configures this package's
//! logs as it configures any other library's.

use std::fmt::{self, Write as _};
use std::sync::Once;

use pyo3::prelude::*;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The Python logger every event goes to.
pub const LOGGER: &str = "factmem";

/// Installs the bridge as the process's `tracing` subscriber, unless the process already
/// has one (an embedding Rust program chose its own, or the `facts` command ran in this
/// process and installed its stderr writer). Called by every `Memory` and `Runtime` that
/// opens; only the first call does anything.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(PythonLogging);
        // An error means a subscriber is already set: that one stays.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// The `tracing` layer that forwards events to Python's `logging`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PythonLogging;

/// Python's level number for a `tracing` level, `None` below INFO (not forwarded).
#[must_use]
pub fn python_level(level: &Level) -> Option<u8> {
    match *level {
        Level::ERROR => Some(40),
        Level::WARN => Some(30),
        Level::INFO => Some(20),
        _ => None,
    }
}

impl<S: Subscriber> Layer<S> for PythonLogging {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(level) = python_level(event.metadata().level()) else {
            return;
        };
        let mut text = Text::default();
        event.record(&mut text);
        let message = format!("{}: {}", event.metadata().target(), text.0);
        // `try_attach`: an event while the interpreter shuts down is dropped, never a panic.
        let _ = Python::try_attach(|py| {
            let logged = py
                .import("logging")
                .and_then(|logging| logging.call_method1("getLogger", (LOGGER,)))
                .and_then(|logger| logger.call_method1("log", (level, message)));
            // Logging must never fail the operation that logged.
            if let Err(error) = logged {
                error.write_unraisable(py, None);
            }
        });
    }
}

/// An event's message and fields as one line: `message key=value …`.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let separator = if self.0.is_empty() { "" } else { " " };
        let _ = if field.name() == "message" {
            write!(self.0, "{separator}{value:?}")
        } else {
            write!(self.0, "{separator}{}={value:?}", field.name())
        };
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let separator = if self.0.is_empty() { "" } else { " " };
        let _ = if field.name() == "message" {
            write!(self.0, "{separator}{value}")
        } else {
            write!(self.0, "{separator}{}={value:?}", field.name())
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_info_and_above_are_forwarded() {
        assert_eq!(python_level(&Level::WARN), Some(30));
        assert_eq!(python_level(&Level::DEBUG), None);
    }
}
