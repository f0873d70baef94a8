//! Rust errors as the package's Python exceptions.
//!
//! The classes live in Python (`factmem/_errors.py`): `Error` (with `code`), and under it
//! `StoreError`, `NotFound` (also a `LookupError`), `InvalidInput` (also a `ValueError`)
//! and `ExtractionError` (with `episode_id`). This module looks them up when it raises,
//! so a Python `except factmem.NotFound` catches what Rust raised, and the classes are
//! defined once.

use dispatch_runtime::MemoryError;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Python module that defines the exception classes.
const ERRORS_MODULE: &str = "factmem._errors";

/// The exception classes of `factmem._errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `factmem.Error`: the base, for what fits no subclass (a closed memory).
    Error,
    /// `factmem.StoreError`: the store could not read or write.
    Store,
    /// `factmem.NotFound`: no fact, episode or subject by that id or name.
    NotFound,
    /// `factmem.InvalidInput`: an argument of the right type with a wrong value.
    InvalidInput,
    /// `factmem.ExtractionError`: the `llm` failed (raised, timed out, returned no text).
    Extraction,
}

impl Kind {
    /// The class name in `factmem._errors`.
    #[must_use]
    pub fn class_name(self) -> &'static str {
        match self {
            Kind::Error => "Error",
            Kind::Store => "StoreError",
            Kind::NotFound => "NotFound",
            Kind::InvalidInput => "InvalidInput",
            Kind::Extraction => "ExtractionError",
        }
    }
}

/// An exception of class `kind` with `message` and `code`; `extra` keyword arguments are
/// passed to the constructor (`episode_id`). When the classes cannot be imported (the
/// native module loaded without its package), a `RuntimeError` with the message.
pub fn raise(
    py: Python<'_>,
    kind: Kind,
    code: &str,
    message: &str,
    extra: &[(&str, &str)],
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import(ERRORS_MODULE)?.getattr(kind.class_name())?;
        let kwargs = PyDict::new(py);
        for (key, value) in extra {
            kwargs.set_item(*key, *value)?;
        }
        let value = class.call((message, code), Some(&kwargs))?;
        Ok(PyErr::from_value(value))
    })();
    made.unwrap_or_else(|_| PyRuntimeError::new_err(format!("{code}: {message}")))
}

/// `InvalidInput` naming the parameter: `"{param}: {message}"`.
pub fn invalid(py: Python<'_>, param: &str, message: &str) -> PyErr {
    raise(
        py,
        Kind::InvalidInput,
        "invalid_input",
        &format!("{param}: {message}"),
        &[],
    )
}

/// `TypeError` naming the parameter and the type it expects.
pub fn wrong_type(param: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let name = got
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    PyTypeError::new_err(format!("{param}: expected {expected}, got {name}"))
}

/// The class of a memory error: a store failure is a `StoreError`, except the refusals of
/// a value (an invalid update, an alias cycle), which are `InvalidInput`.
#[must_use]
pub fn kind_of(error: &MemoryError) -> Kind {
    match error {
        MemoryError::NotFound { .. } => Kind::NotFound,
        MemoryError::Store(_) => match error.code() {
            "not_found" => Kind::NotFound,
            "invalid_update"
            | "duplicate_statement"
            | "alias_cycle"
            | "invalid_alias"
            | "invalid_export"
            | "export_version" => Kind::InvalidInput,
            _ => Kind::Store,
        },
        MemoryError::Extraction { .. } => Kind::Extraction,
        MemoryError::Embedding(_) => Kind::Store,
        _ => Kind::InvalidInput,
    }
}

/// A memory error as the package's exception, with its code.
pub fn memory_error(py: Python<'_>, error: &MemoryError) -> PyErr {
    let kind = kind_of(error);
    let message = error.to_string();
    match error {
        MemoryError::Extraction { episode_id, .. } => raise(
            py,
            kind,
            error.code(),
            &message,
            &[("episode_id", episode_id.as_str())],
        ),
        _ => raise(py, kind, error.code(), &message, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dispatch_runtime::reexports::StoreError;

    #[test]
    fn every_memory_error_has_a_class() {
        let cases = [
            (MemoryError::NotFound { id: "x".into() }, Kind::NotFound),
            (
                MemoryError::InvalidId { id: "x".into() },
                Kind::InvalidInput,
            ),
            (MemoryError::NoExtractor, Kind::InvalidInput),
            (
                MemoryError::Store(StoreError::Busy {
                    message: "locked".into(),
                }),
                Kind::Store,
            ),
        ];
        for (error, kind) in cases {
            assert_eq!(kind_of(&error), kind, "{error}");
        }
    }
}
