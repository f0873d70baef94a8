//! `replay_line`: `dispatch_runtime::protocol::handle_line`, one request line at a time, on
//! one runtime per input (in memory, a manual clock, a fixture project whose spec `s` has
//! two tasks): a sequence of requests built from the protocol's actions and fields
//! (with the run id of the last `init_run` at hand), or a raw script's lines.
//!
//! Checks: no panic; every answer is an object with a boolean `ok`, and a request's `id`
//! comes back in its answer.
//!
//! `project_path` always names the fixture project: a request may rewrite the tasks.md it
//! names, and a fuzzer must not write into a real project.

#![no_main]

use arbitrary::Arbitrary;
use dispatch_runtime::protocol;
use factmem_fuzz::{
    Json, Key, OUTPUT_TEXT, REQUEST_KEYS, REQUEST_STRINGS, Vocab, fixture_project, fresh_runtime,
    names_other_project, push_string,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const ACTIONS: &[&str] = &[
    "init_run",
    "compile_prompt",
    "ingest_output",
    "set_task_status",
    "end_run",
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
];

const VOCAB: Vocab = Vocab {
    keys: REQUEST_KEYS,
    strings: REQUEST_STRINGS,
    text: OUTPUT_TEXT,
};

#[derive(Arbitrary, Debug)]
enum Action {
    Known(u8),
    Other(Json),
    Missing,
}

#[derive(Arbitrary, Debug)]
enum Field {
    Json(Key, Json),
    /// `run_id` of the last successful `init_run`.
    LastRunId,
    /// `project_path`: the fixture project.
    Project,
}

#[derive(Arbitrary, Debug)]
enum Line {
    Request {
        action: Action,
        fields: Vec<Field>,
        id: Option<Json>,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Input {
    /// Lines of a script, as `facts replay` reads them.
    Raw(Vec<u8>),
    Built(Vec<Line>),
}

fuzz_target!(|input: Input| {
    let lines = match input {
        Input::Raw(script) => script
            .split(|&b| b == b'\n')
            .map(|line| Line::Raw(line.to_vec()))
            .collect(),
        Input::Built(lines) => lines,
    };
    let runtime = fresh_runtime();
    let project = fixture_project().display().to_string();
    let mut last_run = String::from("s:1");
    for line in lines.iter().take(32) {
        let text = match line {
            Line::Raw(bytes) => {
                if names_other_project(bytes) {
                    continue;
                }
                bytes.clone()
            }
            Line::Request { action, fields, id } => {
                let mut out = String::from("{");
                match action {
                    Action::Known(i) => out.push_str(&format!(
                        "\"action\":\"{}\",",
                        ACTIONS[usize::from(*i) % ACTIONS.len()]
                    )),
                    Action::Other(json) => {
                        out.push_str("\"action\":");
                        json.render_into(&VOCAB, &mut out);
                        out.push(',');
                    }
                    Action::Missing => {}
                }
                if let Some(id) = id {
                    out.push_str("\"id\":");
                    id.render_into(&VOCAB, &mut out);
                    out.push(',');
                }
                for field in fields {
                    match field {
                        Field::Json(key, value) => {
                            let key = key.text(&VOCAB);
                            push_string(&mut out, &key);
                            out.push(':');
                            if key == "project_path" {
                                push_string(&mut out, &project);
                            } else {
                                value.render_into(&VOCAB, &mut out);
                            }
                        }
                        Field::LastRunId => {
                            out.push_str("\"run_id\":");
                            push_string(&mut out, &last_run);
                        }
                        Field::Project => {
                            out.push_str("\"project_path\":");
                            push_string(&mut out, &project);
                        }
                    }
                    out.push(',');
                }
                let mut out = out.trim_end_matches(',').to_owned();
                out.push('}');
                if names_other_project(out.as_bytes()) {
                    continue;
                }
                out.into_bytes()
            }
        };
        let Some(answer) = protocol::handle_line(&runtime, &text) else {
            continue;
        };
        let ok = answer.get("ok").and_then(Value::as_bool);
        assert!(ok.is_some(), "an answer without a boolean ok: {answer}");
        if let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&text) {
            if let Some(id) = request.get("id") {
                assert_eq!(answer.get("id"), Some(id), "the id did not come back");
            }
        }
        if let Some(run_id) = answer.pointer("/result/run_id").and_then(Value::as_str) {
            last_run = run_id.to_owned();
        }
    }
});
