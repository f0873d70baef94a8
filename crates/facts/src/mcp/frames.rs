//! The frames of `facts mcp` over stdio, checked before rmcp reads them.
//!
//! rmcp drops a line it cannot parse and says so only at `debug` level, so a client that
//! sent a frame that is not UTF-8, not JSON or nested deeper than the JSON parser goes
//! (128 levels) waits for an answer that never comes. Here every line from the client is
//! parsed first: a good one goes on to rmcp unchanged, a bad one is answered with the
//! JSON-RPC parse error (`-32700`; its `id` is the request's when the line, read with
//! invalid bytes replaced, names one, else `null`) and logged as a warning. Answers and
//! errors reach stdout whole, one line each, in the order they are ready.
//!
//! A partial line at the end of the input (a client that disconnected mid-frame) is not
//! a request: it is logged and dropped, and rmcp sees the end of the input. So it does
//! when an answer cannot be written (the client closed its end of stdout): reading stops
//! too, rather than waiting for a client that keeps stdin open but no longer listens.

use std::io::BufRead;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The JSON-RPC error code of a request that does not parse.
const PARSE_ERROR: i64 = -32700;

/// The buffer between the relay and rmcp, each way.
const PIPE_BYTES: usize = 64 * 1024;

/// What the reading thread saw.
enum Read {
    /// A whole line, `\n` included.
    Line(Vec<u8>),
    /// The end of the input in the middle of a line, after this many bytes.
    Partial(usize),
    /// The input could not be read.
    Failed(std::io::Error),
}

/// Puts a checking relay between the client (`input`, `output`) and the returned pair of
/// streams (what rmcp reads, where rmcp writes). Await the handle after the service
/// stopped: it ends once rmcp's last answer is written.
///
/// `input` is read on a thread of its own, not on the runtime's blocking pool, so a read
/// that never returns (a client that keeps stdin open after it stopped reading) does not
/// keep the runtime from shutting down, while a tool call still running does.
pub(crate) fn relay<R, W>(input: R, output: W) -> ((DuplexStream, DuplexStream), JoinHandle<()>)
where
    R: std::io::Read + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    // `None`: rmcp closed its side, nothing more to write.
    let (lines, mut queue) = mpsc::unbounded_channel::<Option<Vec<u8>>>();

    let (reads, requests) = mpsc::unbounded_channel();
    std::thread::spawn(move || read_lines(input, &reads));
    let errors = lines.clone();
    let forward = tokio::spawn(forward_requests(requests, to_rmcp, errors)).abort_handle();
    tokio::spawn(async move {
        let mut from_rmcp = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match from_rmcp.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(Some(line)).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = lines.send(None);
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(Some(line)) = queue.recv().await {
            let written = async {
                output.write_all(&line).await?;
                output.flush().await
            };
            if let Err(e) = written.await {
                tracing::warn!("cannot write to the client: {e}");
                // Nobody reads the answers: stop reading requests, so rmcp sees the end.
                forward.abort();
                break;
            }
        }
    });
    ((rmcp_reads, rmcp_writes), writer)
}

/// Reads `input` line by line until its end, an error, or nobody listens any more.
fn read_lines(input: impl std::io::Read, reads: &mpsc::UnboundedSender<Read>) {
    let mut input = std::io::BufReader::new(input);
    loop {
        let mut line = Vec::new();
        let read = match input.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) if line.last() == Some(&b'\n') => Read::Line(line),
            Ok(n) => Read::Partial(n),
            Err(e) => Read::Failed(e),
        };
        let last = !matches!(read, Read::Line(_));
        if reads.send(read).is_err() || last {
            return;
        }
    }
}

/// Takes the client's lines: good ones go to rmcp, bad ones are answered on `errors`.
async fn forward_requests(
    mut requests: mpsc::UnboundedReceiver<Read>,
    mut to_rmcp: DuplexStream,
    errors: mpsc::UnboundedSender<Option<Vec<u8>>>,
) {
    let mut number = 0_u64;
    while let Some(read) = requests.recv().await {
        number += 1;
        let line = match read {
            Read::Line(line) => line,
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
        match check(&line) {
            Ok(()) => {
                if to_rmcp.write_all(&line).await.is_err() {
                    break;
                }
            }
            Err((id, message)) => {
                tracing::warn!("line {number} answered with a parse error: {message}");
                let answer = json!({"jsonrpc": "2.0", "id": id,
                                    "error": {"code": PARSE_ERROR, "message": message}});
                if errors
                    .send(Some(format!("{answer}\n").into_bytes()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// A frame rmcp can parse (or a blank line, which it skips), else the id to answer and
/// why it cannot.
fn check(line: &[u8]) -> Result<(), (Value, String)> {
    if line.trim_ascii().is_empty() {
        return Ok(());
    }
    let parsed = match std::str::from_utf8(line) {
        Ok(text) => serde_json::from_str::<Value>(text).map(|_| ()),
        Err(e) => {
            let lossy = String::from_utf8_lossy(line);
            return Err((
                id_of(&lossy),
                format!("Parse error: the frame is not UTF-8: {e}"),
            ));
        }
    };
    parsed.map_err(|e| (Value::Null, format!("Parse error: {e}")))
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
    use super::*;

    #[test]
    fn good_frames_and_blank_lines_pass_and_bad_ones_say_why() {
        assert_eq!(
            check(b"{\"jsonrpc\": \"2.0\", \"method\": \"x\"}\n"),
            Ok(())
        );
        assert_eq!(check(b"  \r\n"), Ok(()));
        let (id, message) = check(b"{\"id\": 7, \"x\": \"\xff\"}\n")
            .err()
            .unwrap_or_default();
        assert_eq!(id, json!(7));
        assert!(
            message.starts_with("Parse error: the frame is not UTF-8"),
            "{message}"
        );
        let (id, message) = check(b"{\"id\": 8}\0\n").err().unwrap_or_default();
        assert_eq!(id, Value::Null);
        assert!(message.contains("trailing characters"), "{message}");
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let (_, message) = check(deep.as_bytes()).err().unwrap_or_default();
        assert!(message.contains("recursion limit exceeded"), "{message}");
    }
}
