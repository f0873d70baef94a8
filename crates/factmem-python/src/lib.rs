//! The extension module `factmem._factmem` of the Python package `factmem`: long-term
//! memory ([`memory::PyMemory`]) and the dispatch runtime's JSON protocol
//! ([`runtime::PyRuntime`]) in-process, on top of `dispatch-runtime`, and the `facts`
//! command itself ([`cli::cli_main`], the `facts` library crate) for the wheel's `facts`
//! console script and `python -m factmem`.
//!
//! This module is the thin native half; the package's Python half
//! (`python/factmem/__init__.py`) checks arguments, turns the tuples answered here into
//! dataclasses with timezone-aware datetimes, and is the API users import. The rules this
//! half keeps:
//!
//! - **The GIL is released** around every store, model and protocol call
//!   ([`Python::detach`]), so Python threads search and write in parallel.
//! - **No panic crosses the boundary**: the code below never unwraps or indexes (the
//!   workspace lints deny it), and errors are raised as the package's exception classes
//!   (`factmem.Error` and its subclasses, [`errors`]).
//! - **Logs go to Python's `logging`**: Rust `tracing` events at INFO and above are
//!   forwarded to the `factmem` logger ([`logging`]), from the first `Memory` or `Runtime`
//!   on. Not before: the `facts` command run by [`cli::cli_main`] installs its own
//!   subscriber (stderr, `--log-level`), as the native binary does.
//! - **Time is the system clock's**: an in-process memory is a user's memory, dated as its
//!   user lives it; tests that need fixed times pass `valid_from` or `session_time`.

pub mod cli;
mod convert;
pub mod errors;
mod llm;
pub mod logging;
pub mod memory;
pub mod runtime;

use pyo3::prelude::*;

/// The workspace version, which is `factmem.__version__`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The module `factmem._factmem`: the classes, the version, and the log bridge installed.
/// Public so a Rust test can load it into an embedded interpreter
/// (`pyo3::wrap_pymodule!`) without building the wheel.
#[pymodule]
#[pyo3(name = "_factmem")]
pub fn factmem_module(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", VERSION)?;
    module.add_class::<memory::PyMemory>()?;
    module.add_class::<runtime::PyRuntime>()?;
    module.add_function(wrap_pyfunction!(cli::cli_main, module)?)?;
    Ok(())
}
