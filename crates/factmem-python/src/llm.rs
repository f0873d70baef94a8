//! A Python callable as the extractor's language model: `llm(prompt: str) -> str`.
//!
//! Each call runs on a thread of its own, which takes the GIL to call the callable, while
//! the calling thread waits at most the timeout for its answer. A callable that hangs
//! costs a `Timeout` (the extraction fails and nothing of it is stored; the thread is left
//! to finish and its answer is dropped); one that raises costs an error whose Python
//! exception is kept ([`take_cause`]) so the package's `ExtractionError` chains it
//! (`__cause__`); one that returns anything but `str` is an `InvalidReply`.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use dispatch_runtime::reexports::{LlmClient, LlmError};
use pyo3::prelude::*;
use pyo3::types::PyString;

thread_local! {
    /// The exception the callable last raised on behalf of this thread's extraction.
    static CAUSE: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// The exception the `llm` callable raised during this thread's last extraction, if any
/// (taken: a second call answers `None`).
pub(crate) fn take_cause() -> Option<PyErr> {
    CAUSE.with(|cause| cause.borrow_mut().take())
}

/// A Python callable `str -> str` as an [`LlmClient`], with a timeout per call.
pub(crate) struct PyLlm {
    callable: Arc<Py<PyAny>>,
    timeout: Duration,
}

impl PyLlm {
    /// The client calling `callable`, waiting at most `timeout` for each reply.
    pub(crate) fn new(callable: Py<PyAny>, timeout: Duration) -> Self {
        PyLlm {
            callable: Arc::new(callable),
            timeout,
        }
    }
}

impl fmt::Debug for PyLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PyLlm")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// What the callable gave: text, or why not (with the exception it raised).
enum Reply {
    Text(String),
    Raised(PyErr, String),
    NotText(String),
    /// The interpreter cannot run Python now (it is shutting down).
    Unavailable,
}

fn call(callable: &Py<PyAny>, prompt: &str) -> Reply {
    // `try_attach`: an interpreter shutting down answers nothing rather than panic.
    Python::try_attach(|py| match callable.bind(py).call1((prompt,)) {
        Ok(value) => match value.cast::<PyString>() {
            Ok(text) => match text.to_cow() {
                Ok(text) => Reply::Text(text.into_owned()),
                Err(error) => Reply::Raised(error, "the reply is not valid UTF-8".to_owned()),
            },
            Err(_) => Reply::NotText(
                value
                    .get_type()
                    .name()
                    .map(|name| name.to_string())
                    .unwrap_or_else(|_| "?".to_owned()),
            ),
        },
        Err(error) => {
            let described = describe(py, &error);
            Reply::Raised(error, described)
        }
    })
    .unwrap_or(Reply::Unavailable)
}

/// `TypeName: message` of an exception.
fn describe(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let message = error
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}

impl LlmClient for PyLlm {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        let (send, receive) = mpsc::sync_channel(1);
        let callable = self.callable.clone();
        let prompt = prompt.to_owned();
        let spawned = std::thread::Builder::new()
            .name("factmem-llm".into())
            .spawn(move || {
                // The receiver is gone after a timeout: the reply is dropped then.
                let _ = send.send(call(&callable, &prompt));
            });
        if let Err(error) = spawned {
            return Err(LlmError::Transport(format!(
                "could not start a thread for the llm callable: {error}"
            )));
        }
        match receive.recv_timeout(self.timeout) {
            Ok(Reply::Text(text)) => Ok(text),
            Ok(Reply::Raised(error, described)) => {
                CAUSE.with(|cause| *cause.borrow_mut() = Some(error));
                Err(LlmError::Transport(format!(
                    "the llm callable raised {described}"
                )))
            }
            Ok(Reply::NotText(type_name)) => Err(LlmError::InvalidReply(format!(
                "the llm callable returned {type_name}, not str"
            ))),
            Ok(Reply::Unavailable) => Err(LlmError::Transport(
                "the Python interpreter is shutting down: the llm callable was not called"
                    .to_owned(),
            )),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(LlmError::Timeout {
                after: self.timeout,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(LlmError::Transport(
                "the llm callable's thread ended without a reply".to_owned(),
            )),
        }
    }
}
