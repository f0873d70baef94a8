//! `factmem._factmem.cli_main`: the `facts` command, run in-process by the wheel's `facts`
//! console script and `python -m factmem` (`factmem/_cli.py`).
//!
//! The command line is the native binary's own ([`facts::run_with`]): every subcommand,
//! flag, output and exit code. What the host adds is where named models come from:
//! `--embedder minilm` (and `$FACTMEM_EMBEDDER=minilm`) asks the Python callable
//! `resolve_model` (`factmem._models.resolve`) for the files that the packages of the
//! `factmem[embed]` extra installed.
//!
//! The GIL is released for the whole run, so the command's threads (the MCP server's
//! workers, the log writer) never wait on Python; the resolver takes it back only for its
//! call. Signals are the command's: the Python half restores SIGINT to its default before
//! it calls in, so Ctrl-C ends the command as it ends the binary, and SIGHUP (which Python
//! leaves alone) reaches the command's own handler (`facts mcp --http --tokens` reloads).

use std::ffi::OsString;
use std::path::PathBuf;

use dispatch_runtime::reexports::ModelFiles;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors;

/// The longest message of a resolver's exception that is passed on, in bytes (cut at a
/// character boundary).
const MAX_MESSAGE_BYTES: usize = 4096;

/// Runs the `facts` command line `argv` (with the program name first, as `sys.argv`) to its
/// exit code, with `resolve_model(name) -> (name, model, tokenizer, runtime)` as the
/// source of named models. Arguments are taken as the OS gives them (a `str` with
/// surrogate escapes, as `sys.argv` holds for bytes that are not UTF-8, becomes those
/// bytes).
///
/// # Errors
///
/// `TypeError` when `argv` is not a list of `str` or `resolve_model` is not callable; the
/// command's own failures are its exit code and its stderr, never an exception.
#[pyfunction]
#[pyo3(signature = (argv, resolve_model))]
pub fn cli_main(py: Python<'_>, argv: Vec<OsString>, resolve_model: Py<PyAny>) -> PyResult<u8> {
    if !resolve_model.bind(py).is_callable() {
        return Err(errors::wrong_type(
            "resolve_model",
            "a callable str -> (name, model, tokenizer, runtime)",
            resolve_model.bind(py),
        ));
    }
    let host = facts::Host::default().with_models(move |name| resolve(&resolve_model, name));
    Ok(py.detach(move || facts::run_with(argv, &host)))
}

/// `resolve_model(name)` with the GIL taken back: its files, or its exception's message.
fn resolve(resolve_model: &Py<PyAny>, name: &str) -> Result<ModelFiles, String> {
    Python::attach(|py| {
        resolve_model
            .bind(py)
            .call1((name,))
            .and_then(|answer| model_files(&answer))
            .map_err(|error| message(py, &error))
    })
}

/// The resolver's answer, a tuple `(name, model, tokenizer, runtime)` of `str`
/// (`runtime` may be `None`), as [`ModelFiles`].
fn model_files(answer: &Bound<'_, PyAny>) -> PyResult<ModelFiles> {
    const EXPECTED: &str = "a (name, model, tokenizer, runtime) tuple";
    let tuple = answer
        .cast::<PyTuple>()
        .map_err(|_| errors::wrong_type("resolve_model's answer", EXPECTED, answer))?;
    if tuple.len() != 4 {
        return Err(errors::wrong_type(
            "resolve_model's answer",
            EXPECTED,
            answer,
        ));
    }
    let name: String = tuple.get_item(0)?.extract()?;
    let model: PathBuf = tuple.get_item(1)?.extract()?;
    let tokenizer: PathBuf = tuple.get_item(2)?.extract()?;
    let runtime: Option<PathBuf> = tuple.get_item(3)?.extract()?;
    Ok(ModelFiles::new(name, model, tokenizer, runtime))
}

/// An exception as the command's error text: its message (`str(error)`), else its
/// class name, at most [`MAX_MESSAGE_BYTES`].
fn message(py: Python<'_>, error: &PyErr) -> String {
    let value = error.value(py);
    let text = value.str().map(|text| text.to_string()).unwrap_or_default();
    let text = if text.is_empty() {
        value
            .get_type()
            .name()
            .map(|name| name.to_string())
            .unwrap_or_else(|_| "the model could not be resolved".to_owned())
    } else {
        text
    };
    clip(text, MAX_MESSAGE_BYTES)
}

/// `text` cut to at most `max` bytes at a character boundary.
fn clip(mut text: String, max: usize) -> String {
    let end = text.floor_char_boundary(max);
    text.truncate(end);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_characters_whole() {
        assert_eq!(clip("héllo".to_owned(), 2), "h");
        assert_eq!(clip("héllo".to_owned(), 3), "hé");
        assert_eq!(clip("abc".to_owned(), 10), "abc");
    }
}
