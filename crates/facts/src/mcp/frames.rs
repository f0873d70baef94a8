//! The frames of `facts mcp` over stdio, checked before rmcp reads them.
//!
//! rmcp drops a line it cannot parse and says so only at `debug` level, so a client that
//! sent a frame that is not UTF-8, not JSON or nested deeper than the JSON parser goes
//! (128 levels) waits for an answer that never comes. Here every line from the client is
//! parsed first: a good one goes on to rmcp unchanged, a bad one is answered with the
//! JSON-RPC parse error (`-32700`; its `id` is the request's when the line, read with
//! invalid bytes replaced, names one, else `null`) and logged as a warning. A request that
//! is JSON but no MCP request rmcp knows (`"jsonrpc": "1.0"`, params of the wrong shape) is
//! answered here with `-32600` under its own id, where rmcp would answer with a `null` id.
//! Answers and errors reach stdout whole, one line each, in the order they are ready.
//!
//! Bounds. A frame is at most `--max-request-bytes` long (16 MiB by default, the newline
//! not counted): a longer one is answered with `-32600` ("Request too large", the limit in
//! the message, the request's id when one is found in it) and skipped as it is read, never
//! held whole (`bounds::read_line`). Every queue between the client and rmcp has a fixed
//! capacity, and at most [`WINDOW`] requests are inside rmcp at a time: a request enters
//! when an earlier one's answer has been written to the client. A client that sends
//! without reading its answers fills the pipes and then waits: it is slowed, and the
//! server's memory stays bounded (at most [`WINDOW`] requests and answers, and
//! [`READ_QUEUE`] frames read ahead). A request leaves the window when its answer is
//! written or when the client cancels it (`notifications/cancelled`, after which rmcp may
//! send no answer); a second request with the id of one still running is answered here
//! with `-32600` (rmcp would answer only one of the two).
//!
//! A partial line at the end of the input (a client that disconnected mid-frame) is not
//! a request: it is logged and dropped, and rmcp sees the end of the input. So it does
//! when an answer cannot be written (the client closed its end of stdout): reading stops
//! too, rather than waiting for a client that keeps stdin open but no longer listens.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

use crate::bounds::{self, Line};

/// The JSON-RPC error code of a request that does not parse.
const PARSE_ERROR: i64 = -32700;

/// The JSON-RPC error code of a request that parses but cannot be served as it is (too
/// large, not an MCP request, an id already in use).
const INVALID_REQUEST: i64 = -32600;

/// The buffer between the relay and rmcp, each way.
const PIPE_BYTES: usize = 64 * 1024;

/// The most requests inside rmcp at a time: sent on, and not yet answered to the client.
pub(crate) const WINDOW: usize = 32;

/// The most frames read ahead of the one being forwarded.
pub(crate) const READ_QUEUE: usize = 4;

/// The most lines (answers, errors) waiting to be written to the client.
const WRITE_QUEUE: usize = WINDOW;

/// The most characters of a request (an id, a parser's message quoting it) an error
/// message echoes.
const ECHOED_CHARS: usize = 200;

/// The UTF-8 byte order mark, which rmcp skips at the start of a frame.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the reading thread saw.
enum Read {
    /// A whole line, `\n` included, and what it is.
    Line(Vec<u8>, Frame),
    /// A line past the limit, skipped: its length and the id found in it.
    TooLong(u64, Option<Value>),
    /// The end of the input in the middle of a line, after this many bytes.
    Partial(u64),
    /// The input could not be read.
    Failed(std::io::Error),
}

/// What a frame within the limit is, for the relay.
#[derive(Debug, PartialEq)]
enum Frame {
    /// On to rmcp, which answers nothing (a blank line, a notification, a response to
    /// the server) or answers with a `null` id (a message it does not know).
    Pass,
    /// A request rmcp answers under this id (its JSON text).
    Request(String),
    /// A notification that cancels the request of this id (its JSON text).
    Cancel(String),
    /// Answered here, not sent on: the id to answer, the code and the message.
    Refused(Value, i64, String),
}

/// A line for the client, and the request it answers when it is rmcp's answer to one.
struct Out {
    line: Vec<u8>,
    answers: Option<String>,
}

/// The requests inside rmcp: a permit each, and their ids.
struct Window {
    permits: Semaphore,
    running: Mutex<HashSet<String>>,
}

impl Window {
    fn new() -> Window {
        Window {
            permits: Semaphore::new(WINDOW),
            running: Mutex::new(HashSet::new()),
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a request with this id is inside rmcp.
    fn is_running(&self, id: &str) -> bool {
        self.running().contains(id)
    }

    /// Waits until the request `id` may enter; `false` once the window was closed (nobody
    /// writes answers any more).
    async fn enter(&self, id: String) -> bool {
        match self.permits.acquire().await {
            Ok(permit) => {
                permit.forget();
                self.running().insert(id);
                true
            }
            Err(_) => false,
        }
    }

    /// The request `id` left (answered or cancelled): its permit comes back, once.
    fn leave(&self, id: &str) {
        if self.running().remove(id) {
            self.permits.add_permits(1);
        }
    }
}

/// Puts a checking relay between the client (`input`, `output`) and the returned pair of
/// streams (what rmcp reads, where rmcp writes), refusing frames longer than `limit`
/// bytes. Await the handle after the service stopped: it ends once rmcp's last answer is
/// written.
///
/// `input` is read on a thread of its own, not on the runtime's blocking pool, so a read
/// that never returns (a client that keeps stdin open after it stopped reading) does not
/// keep the runtime from shutting down, while a tool call still running does.
pub(crate) fn relay<R, W>(
    input: R,
    output: W,
    limit: usize,
) -> ((DuplexStream, DuplexStream), JoinHandle<()>)
where
    R: std::io::Read + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    // `None`: rmcp closed its side, nothing more to write.
    let (lines, mut queue) = mpsc::channel::<Option<Out>>(WRITE_QUEUE);
    let window = Arc::new(Window::new());

    let (reads, requests) = mpsc::channel(READ_QUEUE);
    std::thread::spawn(move || read_lines(input, limit, &reads));
    let errors = lines.clone();
    let forward = tokio::spawn(forward_requests(
        requests,
        to_rmcp,
        errors,
        window.clone(),
        limit,
    ))
    .abort_handle();
    tokio::spawn(async move {
        let mut from_rmcp = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match from_rmcp.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let answers = answered_id(&line);
                    if lines.send(Some(Out { line, answers })).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = lines.send(None).await;
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(Some(out)) = queue.recv().await {
            let written = async {
                output.write_all(&out.line).await?;
                output.flush().await
            };
            if let Err(e) = written.await {
                tracing::warn!("cannot write to the client: {e}");
                // Nobody reads the answers: stop reading requests, so rmcp sees the end.
                forward.abort();
                break;
            }
            if let Some(id) = out.answers {
                window.leave(&id);
            }
        }
        // No answer will be written any more: a request waiting to enter never will.
        window.permits.close();
    });
    ((rmcp_reads, rmcp_writes), writer)
}

/// Reads `input` line by line until its end, an error, or nobody listens any more, each
/// line at most `limit` bytes held; sorts each line it reads. Waits while the queue to the
/// forwarder is full.
fn read_lines(input: impl std::io::Read, limit: usize, reads: &mpsc::Sender<Read>) {
    let mut input = std::io::BufReader::new(input);
    let mut line = Vec::new();
    loop {
        let read = match bounds::read_line(&mut input, &mut line, limit) {
            Ok(Line::End) => return,
            Ok(Line::Whole) => {
                let frame = check(&line);
                Read::Line(std::mem::take(&mut line), frame)
            }
            Ok(Line::Partial) => Read::Partial(line.len() as u64),
            Ok(Line::TooLong {
                bytes,
                ended: false,
                ..
            }) => Read::Partial(bytes),
            Ok(Line::TooLong { bytes, id, .. }) => Read::TooLong(bytes, id),
            Err(e) => Read::Failed(e),
        };
        let last = !matches!(read, Read::Line(..) | Read::TooLong(..));
        if reads.blocking_send(read).is_err() || last {
            return;
        }
    }
}

/// Takes the client's lines: requests go to rmcp as the window lets them in, the others
/// at once; bad and oversized ones are answered on `errors`.
async fn forward_requests(
    mut requests: mpsc::Receiver<Read>,
    mut to_rmcp: DuplexStream,
    errors: mpsc::Sender<Option<Out>>,
    window: Arc<Window>,
    limit: usize,
) {
    let mut number = 0_u64;
    while let Some(read) = requests.recv().await {
        number += 1;
        let refusal = match read {
            Read::Line(line, frame) => match frame {
                Frame::Refused(id, code, message) => Some((id, code, message)),
                Frame::Request(id) if window.is_running(&id) => Some((
                    serde_json::from_str(&id).unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: the id {} is in use by a request that has not been \
                         answered yet; give every request an id of its own",
                        bounds::clip(&id, ECHOED_CHARS)
                    ),
                )),
                Frame::Request(id) => {
                    if !window.enter(id).await || to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    None
                }
                Frame::Cancel(id) => {
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    window.leave(&id);
                    None
                }
                Frame::Pass => {
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                    None
                }
            },
            Read::TooLong(bytes, id) => Some((
                id.filter(|id| id.is_string() || id.is_number())
                    .unwrap_or(Value::Null),
                INVALID_REQUEST,
                format!(
                    "Request too large: the frame is {bytes} bytes, over this server's limit \
                     of {}, which facts mcp --max-request-bytes sets; it was skipped",
                    bounds::describe(limit)
                ),
            )),
            Read::Partial(bytes) => {
                tracing::warn!(
                    "the client closed its input in the middle of a frame (line {number}, \
                     {bytes} bytes): dropped"
                );
                break;
            }
            Read::Failed(e) => {
                tracing::warn!("cannot read from the client: {e}");
                break;
            }
        };
        if let Some((id, code, message)) = refusal {
            let kind = if code == PARSE_ERROR {
                "a parse error"
            } else {
                "an invalid request error"
            };
            tracing::warn!("line {number} answered with {kind}: {message}");
            let answer = json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": code, "message": message}});
            let out = Out {
                line: format!("{answer}\n").into_bytes(),
                answers: None,
            };
            if errors.send(Some(out)).await.is_err() {
                break;
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// What a whole line from the client is: a frame rmcp can parse (a request, a
/// cancellation, anything else) or one to answer here, with the id to answer and why.
fn check(line: &[u8]) -> Frame {
    let line = line.trim_ascii();
    let line = line.strip_prefix(BOM).unwrap_or(line);
    if line.is_empty() {
        return Frame::Pass;
    }
    if let Err(e) = std::str::from_utf8(line) {
        let lossy = String::from_utf8_lossy(line);
        return Frame::Refused(
            id_of(&lossy),
            PARSE_ERROR,
            format!("Parse error: the frame is not UTF-8: {e}"),
        );
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(JsonRpcMessage::Request(request)) => return Frame::Request(key(&request.id)),
        Ok(JsonRpcMessage::Notification(notification)) => {
            return match notification.notification {
                ClientNotification::CancelledNotification(cancel) => cancel
                    .params
                    .request_id
                    .map_or(Frame::Pass, |id| Frame::Cancel(key(&id))),
                _ => Frame::Pass,
            };
        }
        Ok(_) => return Frame::Pass,
        Err(e) => e,
    };
    if error.is_syntax() || error.is_eof() {
        return Frame::Refused(Value::Null, PARSE_ERROR, format!("Parse error: {error}"));
    }
    // JSON, but no message rmcp knows: the parse of the message stopped before the end,
    // so the rest may still not be JSON.
    match serde_json::from_slice::<Value>(line) {
        Err(e) => Frame::Refused(Value::Null, PARSE_ERROR, format!("Parse error: {e}")),
        // A request: rmcp would answer it with a `null` id, the client could not tell which.
        Ok(value) if value.get("method").is_some() && has_id(&value) => Frame::Refused(
            value.get("id").cloned().unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!(
                "Invalid Request: {}",
                bounds::clip(&error.to_string(), ECHOED_CHARS)
            ),
        ),
        // A notification rmcp ignores, or something it answers with a `null` id.
        Ok(_) => Frame::Pass,
    }
}

/// Whether `value` has an `id` that is not `null`.
fn has_id(value: &Value) -> bool {
    value.get("id").is_some_and(|id| !id.is_null())
}

/// A request id as the window knows it: its JSON text.
fn key(id: &impl serde::Serialize) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// The id of the request an rmcp line answers (a response or an error with an id), as
/// the window knows it.
fn answered_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    match (head.id, head.method) {
        (Some(id), None) if !id.is_null() => Some(key(&id)),
        _ => None,
    }
}

/// The request's `id`, when `text` is a JSON object with one (else `null`).
fn id_of(text: &str) -> Value {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| value.get("id").cloned())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    /// The next line `reader` gives within `wait`, if any.
    async fn next_line(reader: &mut BufReader<DuplexStream>, wait: Duration) -> Option<Value> {
        let mut line = String::new();
        match tokio::time::timeout(wait, reader.read_line(&mut line)).await {
            Ok(Ok(n)) if n > 0 => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    /// The next `n` lines of `reader` (each within 10 s), then nothing for 300 ms.
    async fn lines(reader: &mut BufReader<DuplexStream>, n: usize) -> Vec<Value> {
        let mut lines = Vec::new();
        while lines.len() < n {
            match next_line(reader, Duration::from_secs(10)).await {
                Some(line) => lines.push(line),
                None => break,
            }
        }
        assert_eq!(lines.len(), n, "{lines:?}");
        let more = next_line(reader, Duration::from_millis(300)).await;
        assert_eq!(more, None, "one line more than {n}");
        lines
    }

    /// Runs `test` with a relay reading `input`: it gets what rmcp reads, where rmcp
    /// writes, and what the client reads.
    fn with_relay<F, T>(input: String, test: F)
    where
        F: FnOnce(BufReader<DuplexStream>, DuplexStream, BufReader<DuplexStream>) -> T,
        T: Future<Output = ()>,
    {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio.block_on(async {
            let (client_end, relay_end) = tokio::io::duplex(1 << 20);
            let ((reads, writes), _written) =
                relay(std::io::Cursor::new(input.into_bytes()), relay_end, 4096);
            test(BufReader::new(reads), writes, BufReader::new(client_end)).await;
        });
    }

    #[test]
    fn the_window_lets_32_requests_in_and_one_more_per_answer_written() {
        let input: String = (1..=40)
            .map(|id| format!("{{\"jsonrpc\": \"2.0\", \"id\": {id}, \"method\": \"ping\"}}\n"))
            .collect();
        with_relay(input, |mut rmcp, mut rmcp_writes, mut client| async move {
            let inside = lines(&mut rmcp, WINDOW).await;
            assert_eq!(inside.last().unwrap()["id"], 32);
            // A server's own message answers nothing: nobody more comes in.
            rmcp_writes
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n")
                .await
                .unwrap();
            lines(&mut rmcp, 0).await;
            rmcp_writes
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
                .await
                .unwrap();
            let next = lines(&mut rmcp, 1).await;
            assert_eq!(next[0]["id"], 33);
            lines(&mut client, 2).await;
        });
    }

    #[test]
    fn an_id_in_use_is_refused_until_its_request_is_answered_or_cancelled() {
        let input = [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "id": "1", "method": "ping"}"#,
        ]
        .map(|line| format!("{line}\n"))
        .concat();
        with_relay(input, |mut rmcp, rmcp_writes, mut client| async move {
            // rmcp stays open, and answers nothing.
            let _open = rmcp_writes;
            let inside = lines(&mut rmcp, 4).await;
            let methods: Vec<&Value> = inside.iter().map(|m| &m["method"]).collect();
            assert_eq!(
                methods,
                [
                    &json!("tools/list"),
                    &json!("notifications/cancelled"),
                    &json!("ping"),
                    &json!("ping")
                ]
            );
            let refused = lines(&mut client, 1).await;
            assert_eq!(refused[0]["id"], 1);
            assert_eq!(refused[0]["error"]["code"], INVALID_REQUEST);
            let message = refused[0]["error"]["message"].as_str().unwrap();
            assert!(message.contains("the id 1 is in use"), "{message}");
        });
    }

    /// The id and message of a refused frame (`Null` and empty for any other).
    fn refused(frame: Frame) -> (Value, i64, String) {
        match frame {
            Frame::Refused(id, code, message) => (id, code, message),
            _ => (Value::Null, 0, String::new()),
        }
    }

    #[test]
    fn good_frames_and_blank_lines_pass_and_bad_ones_say_why() {
        assert_eq!(
            check(b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\n"),
            Frame::Pass
        );
        assert_eq!(check(b"  \r\n"), Frame::Pass);
        let (id, code, message) = refused(check(b"{\"id\": 7, \"x\": \"\xff\"}\n"));
        assert_eq!((id, code), (json!(7), PARSE_ERROR));
        assert!(
            message.starts_with("Parse error: the frame is not UTF-8"),
            "{message}"
        );
        let (id, code, message) = refused(check(b"{\"id\": 8}\0\n"));
        assert_eq!((id, code), (Value::Null, PARSE_ERROR));
        assert!(message.contains("trailing characters"), "{message}");
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let (_, code, message) = refused(check(deep.as_bytes()));
        assert_eq!(code, PARSE_ERROR);
        assert!(message.contains("recursion limit exceeded"), "{message}");
    }

    #[test]
    fn requests_and_cancellations_are_told_apart_and_a_bad_request_keeps_its_id() {
        let request = br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}"#;
        assert_eq!(check(request), Frame::Request("3".to_owned()));
        let request = b"\xEF\xBB\xBF{\"jsonrpc\": \"2.0\", \"id\": \"a\", \"method\": \"ping\"}\n";
        assert_eq!(check(request), Frame::Request("\"a\"".to_owned()));
        let cancel = br#"{"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 3, "reason": "late"}}"#;
        assert_eq!(check(cancel), Frame::Cancel("3".to_owned()));
        let answer = br#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#;
        assert_eq!(check(answer), Frame::Pass);
        let (id, code, message) = refused(check(
            br#"{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}"#,
        ));
        assert_eq!((id, code), (json!(5), INVALID_REQUEST), "{message}");
        assert!(message.starts_with("Invalid Request: "), "{message}");
        // A notification rmcp does not know is its to ignore.
        let unknown = br#"{"jsonrpc": "2.0", "method": "notifications/whatever", "params": 5}"#;
        assert_eq!(check(unknown), Frame::Pass);
    }

    #[test]
    fn answers_name_the_request_they_answer() {
        assert_eq!(
            answered_id(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"x\":[1]}}\n"),
            Some("4".to_owned())
        );
        assert_eq!(
            answered_id(br#"{"jsonrpc":"2.0","id":"q","error":{"code":1,"message":"m"}}"#),
            Some("\"q\"".to_owned())
        );
        assert_eq!(
            answered_id(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#),
            None
        );
        assert_eq!(
            answered_id(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#),
            None
        );
        assert_eq!(
            answered_id(br#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
            None
        );
    }
}
