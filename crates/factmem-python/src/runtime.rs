//! `factmem._factmem.Runtime`: the dispatch runtime of one project for Python, answering
//! the JSON protocol of `docs/protocol.md` (`dispatch_runtime::protocol::handle`).
//!
//! Requests and answers cross as JSON text: the Python half serializes the request dict
//! and parses the answer, so the wire format stays decided in `dispatch-runtime` alone
//! and this crate spells no action, field or error code. The GIL is released while the
//! runtime answers; runs and specs have locks of their own, so threads share a `Runtime`.

use std::path::PathBuf;

use dispatch_runtime::DispatchRuntimeManager;
use dispatch_runtime::durable::{self, Database};
use dispatch_runtime::protocol;
use pyo3::prelude::*;

use crate::convert;
use crate::errors;

/// The dispatch runtime of one project. See the module documentation.
#[pyclass(name = "Runtime", module = "factmem._factmem", frozen)]
pub struct PyRuntime {
    runtime: DispatchRuntimeManager,
    project: PathBuf,
}

#[pymethods]
impl PyRuntime {
    /// A runtime over the project at `project` (its `.spec-context/specs/`), with each
    /// spec's facts in `db` (a SQLite path or a PostgreSQL URL) or in process memory.
    #[new]
    #[pyo3(signature = (project, db))]
    fn new(py: Python<'_>, project: &Bound<'_, PyAny>, db: &Bound<'_, PyAny>) -> PyResult<Self> {
        crate::logging::install();
        let project = PathBuf::from(convert::text("project", project)?);
        let db = convert::optional_text("db", db)?;
        let mut builder = DispatchRuntimeManager::builder().project_root(&project);
        if let Some(db) = db {
            let database: Database = db
                .parse()
                .map_err(|e| errors::invalid(py, "db", &format!("{e}")))?;
            builder = builder.stores(durable::stores(&database, durable::retained(None, None)));
        }
        Ok(PyRuntime {
            runtime: builder.build(),
            project,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "factmem.Runtime(project={:?})",
            self.project.display().to_string()
        )
    }

    /// Answers one request, given and answered as JSON text (`{"ok": …}`); a request that
    /// is not JSON is an `invalid_json` answer, as on every other front end.
    fn handle(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<String> {
        let request = convert::text("request", request)?;
        Ok(py.detach(|| {
            let answer =
                protocol::handle_line(&self.runtime, request.as_bytes()).unwrap_or_else(|| {
                    protocol::error(
                        protocol::code::INVALID_REQUEST,
                        "the request is blank: give a JSON object",
                    )
                });
            answer.to_string()
        }))
    }
}
