//! `mcp`: the `facts mcp` server's request handling. Newline-delimited JSON-RPC frames go
//! into the server's handler (`facts::serve_mcp_io`, the stdio server on an in-process
//! duplex stream; one server and runtime per input, the fixture project of
//! `replay_line`): a raw script of lines, or by default an `initialize` request and the `initialized` notification,
//! then arbitrary frames — `tools/call` of the server's tools (or any name) with
//! arbitrary arguments, `tools/list`, `ping`, other methods, raw lines.
//!
//! Checks: no panic, the server stops when the client closes its side, and every line it
//! writes is a JSON object.

#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use factmem_fuzz::{
    Json, Key, OUTPUT_TEXT, REQUEST_KEYS, REQUEST_STRINGS, Str, Vocab, fixture_project,
    fresh_runtime, names_other_project, push_string, render_object,
};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOOLS: &[&str] = &[
    "init_run",
    "compile_prompt",
    "ingest_output",
    "set_task_status",
    "end_run",
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
    "memory_add",
    "fly",
];

const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "tools/list",
    "tools/call",
    "ping",
    "resources/list",
    "prompts/list",
    "notifications/cancelled",
    "logging/setLevel",
    "completion/complete",
    "",
];

const VOCAB: Vocab = Vocab {
    keys: REQUEST_KEYS,
    strings: REQUEST_STRINGS,
    text: OUTPUT_TEXT,
};

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Other(Str),
}

#[derive(Arbitrary, Debug)]
enum Arguments {
    Fields(Vec<(Key, Json)>),
    /// The fixture's spec and task, the last run, and more fields.
    Run {
        task: u8,
        fields: Vec<(Key, Json)>,
    },
    Other(Json),
    Missing,
}

#[derive(Arbitrary, Debug)]
enum Frame {
    Call {
        id: u32,
        name: Name,
        arguments: Arguments,
    },
    List {
        id: u32,
    },
    Ping {
        id: u32,
    },
    /// Any method, any params, an id or none (a notification).
    Method {
        method: Name,
        id: Option<Json>,
        params: Option<Json>,
    },
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Input {
    /// What the client writes, as is (handshake included, or not).
    Raw(String),
    Built {
        /// Leave out the handshake.
        no_handshake: bool,
        protocol_version: Option<Str>,
        frames: Vec<Frame>,
    },
}

fn name(name: &Name, vocab: &[&str]) -> String {
    match name {
        Name::Known(i) => vocab[usize::from(*i) % vocab.len()].to_owned(),
        Name::Other(s) => s.text(&VOCAB),
    }
}

fn frames(input: &Input) -> Vec<String> {
    let (no_handshake, protocol_version, frames) = match input {
        Input::Raw(text) => {
            return text
                .split('\n')
                .filter(|frame| !names_other_project(frame.as_bytes()))
                .map(str::to_owned)
                .collect();
        }
        Input::Built {
            no_handshake,
            protocol_version,
            frames,
        } => (no_handshake, protocol_version, frames),
    };
    let mut out = Vec::new();
    if !no_handshake {
        let version = protocol_version
            .as_ref()
            .map_or_else(|| "2025-06-18".to_owned(), |v| v.text(&VOCAB));
        let mut frame = String::from(
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":",
        );
        push_string(&mut frame, &version);
        frame.push_str(
            ",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"0\"}}}",
        );
        out.push(frame);
        out.push("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}".to_owned());
    }
    let project = fixture_project().display().to_string();
    for frame in frames.iter().take(12) {
        let mut text = String::from("{\"jsonrpc\":\"2.0\",");
        match frame {
            Frame::Call {
                id,
                name: tool,
                arguments,
            } => {
                text.push_str(&format!(
                    "\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":"
                ));
                push_string(&mut text, &name(tool, TOOLS));
                match arguments {
                    Arguments::Fields(fields) => {
                        text.push_str(",\"arguments\":");
                        render_object(fields, &VOCAB, &mut text);
                    }
                    Arguments::Run { task, fields } => {
                        text.push_str(&format!(
                            ",\"arguments\":{{\"spec_name\":\"s\",\"task_id\":\"{}\",\"run_id\":\"s:1\",\"project_path\":",
                            1 + task % 3
                        ));
                        push_string(&mut text, &project);
                        for (key, value) in fields {
                            text.push(',');
                            push_string(&mut text, &key.text(&VOCAB));
                            text.push(':');
                            value.render_into(&VOCAB, &mut text);
                        }
                        text.push('}');
                    }
                    Arguments::Other(json) => {
                        text.push_str(",\"arguments\":");
                        json.render_into(&VOCAB, &mut text);
                    }
                    Arguments::Missing => {}
                }
                text.push_str("}}");
            }
            Frame::List { id } => {
                text.push_str(&format!("\"id\":{id},\"method\":\"tools/list\"}}"))
            }
            Frame::Ping { id } => text.push_str(&format!("\"id\":{id},\"method\":\"ping\"}}")),
            Frame::Method { method, id, params } => {
                text.push_str("\"method\":");
                push_string(&mut text, &name(method, METHODS));
                if let Some(id) = id {
                    text.push_str(",\"id\":");
                    id.render_into(&VOCAB, &mut text);
                }
                if let Some(params) = params {
                    text.push_str(",\"params\":");
                    params.render_into(&VOCAB, &mut text);
                }
                text.push('}');
            }
            Frame::Raw(raw) => text = raw.clone(),
        }
        // One frame per line: a frame's own line breaks would split it.
        let text = text.replace(['\n', '\r'], " ");
        if !names_other_project(text.as_bytes()) {
            out.push(text);
        }
    }
    out
}

fn tokio() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

fuzz_target!(|input: Input| {
    let frames = frames(&input);
    let runtime = fresh_runtime();
    let output = tokio().block_on(async move {
        let (client, server) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(facts::serve_mcp_io(runtime, server));
        let (mut reader, mut writer) = tokio::io::split(client);
        let write = async move {
            for frame in &frames {
                if writer.write_all(frame.as_bytes()).await.is_err()
                    || writer.write_all(b"\n").await.is_err()
                {
                    break;
                }
            }
            // The client disconnects: the server must stop.
            let _ = writer.shutdown().await;
        };
        let read = async move {
            let mut output = Vec::new();
            let _ = reader.read_to_end(&mut output).await;
            output
        };
        let ((), output) = tokio::join!(write, read);
        // Stopping with an error (a failed handshake) is an answer; a panic is not.
        let stopped = serving.await;
        assert!(stopped.is_ok(), "the server task panicked: {stopped:?}");
        output
    });
    for line in output
        .split(|&b| b == b'\n')
        .filter(|line| !line.trim_ascii().is_empty())
    {
        let value: Result<serde_json::Value, _> = serde_json::from_slice(line);
        assert!(
            value.as_ref().is_ok_and(serde_json::Value::is_object),
            "the server wrote a line that is not a JSON object: {:?}",
            String::from_utf8_lossy(line)
        );
    }
});
