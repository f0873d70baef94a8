//! `facts schema [ACTION]`: the protocol's actions with the JSON Schemas of their requests
//! and responses, and whether each only reads, as `protocol::actions()` describes them.

use std::io::Write;

use dispatch_runtime::protocol::{self, Action};
use serde_json::{Value, json};

use crate::failure::Failure;

/// What `facts schema --help` adds after the options.
pub(crate) const AFTER_HELP: &str = "\
Without ACTION, a JSON array of every action; with one, that action's object:
{name, description, read_only, input_schema, output_schema}. input_schema describes the
request's fields (without \"action\" and \"id\"), output_schema the response. The protocol:
docs/protocol.md.

`facts schema export` prints the JSON Schema of one line of `facts mem export`'s files
(docs/export-format.md).

Exit codes:
  0  the schemas were printed
  3  no action has that name (stderr lists the names)";

/// The name `facts schema` takes for the export format's schema instead of an action's.
const EXPORT: &str = "export";

fn describe(action: &Action) -> Value {
    json!({
        "name": action.name,
        "description": action.description,
        "read_only": action.read_only,
        "input_schema": action.input_schema,
        "output_schema": action.output_schema,
    })
}

/// Runs `facts schema`.
pub(crate) fn run(name: Option<&str>) -> Result<(), Failure> {
    let actions = protocol::actions();
    let document = match name {
        Some(EXPORT) => serde_json::from_str(dispatch_runtime::EXPORT_SCHEMA)
            .map_err(|e| Failure::failed(format!("the export schema is not JSON: {e}")))?,
        None => Value::Array(actions.iter().map(describe).collect()),
        Some(name) => match actions.iter().find(|action| action.name == name) {
            Some(action) => describe(action),
            None => {
                let names: Vec<&str> = actions.iter().map(|action| action.name).collect();
                return Err(Failure::not_found(format!(
                    "unknown action {name:?}; the actions are: {} (and `{EXPORT}`, the export \
                     format)",
                    names.join(", ")
                )));
            }
        },
    };
    writeln!(std::io::stdout().lock(), "{document:#}")
        .map_err(|e| Failure::failed(format!("cannot write: {e}")))
}
