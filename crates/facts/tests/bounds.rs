//! Bounds on every input (issue 23), through the real `facts` binary: a replay line, an
//! MCP frame and an HTTP body at the limit and one byte past it (the default 16 MiB and a
//! limit set with `--max-request-bytes`), a transcript at and past 8 MiB, searches asked
//! for any number of results, a client that floods the MCP server without reading its
//! answers, and the peak memory of `facts replay` and `facts mcp` fed a 256 MiB line
//! against an 8 MiB limit. `docs/robustness.md` ("Bounds (issue 23)") lists the cases and
//! what the user sees.
//!
//! Every child runs under a watchdog ([`GUARD`]) that kills it, so a hang fails the test
//! instead of stalling it. Memory is read from `/proc/PID/status` (`VmHWM`, `VmRSS`); where
//! there is no `/proc`, the memory checks say so and pass, except under `CI=true`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::Response;

const BIN: &str = env!("CARGO_BIN_EXE_facts");

/// How long any child may run before the watchdog kills it (a guard, not a measurement).
const GUARD: Duration = Duration::from_secs(300);

/// The default limit on a request: 16 MiB.
const DEFAULT_LIMIT: usize = 16 * 1024 * 1024;

/// The limit on a transcript: 8 MiB.
const TRANSCRIPT_LIMIT: usize = 8 * 1024 * 1024;

/// The fixture project, with the spec `demo`.
const PROJECT: &str = "tests/fixtures/project";

/// Kills process `pid` after [`GUARD`] unless the returned sender is dropped first.
fn watchdog(pid: u32, what: String) -> Sender<()> {
    let (cancel, cancelled) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = cancelled.recv_timeout(GUARD) {
            eprintln!("{what} still running after {GUARD:?}: killed, a hang");
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    });
    cancel
}

/// A `facts` process with piped stdin and stdout, killed when dropped. Its stdout is read
/// only when a test asks (so a test can leave the answers unread).
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    _watchdog: Sender<()>,
}

impl Proc {
    /// Starts `facts ARGS…` in the crate's directory; stderr is kept in `stderr`'s file.
    fn start(args: &[&str], stderr: &Path) -> Proc {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("RUST_LOG")
            .env_remove("FACTMEM_DB")
            .env_remove("FACTMEM_DATABASE_URL")
            .env_remove("FACTMEM_EMBEDDER")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap())
            .spawn()
            .unwrap();
        let watchdog = watchdog(child.id(), format!("facts {}", args.join(" ")));
        Proc {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            _watchdog: watchdog,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` to stdin.
    fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Takes stdin, for a thread to write to.
    fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().unwrap()
    }

    /// The next line of stdout as JSON.
    fn read(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).unwrap();
        assert_ne!(read, 0, "the process closed its stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Closes stdin and waits for the exit code.
    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        self.child.wait().unwrap().code()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/PID/status` in KiB (`VmHWM`: the peak resident set; `VmRSS`: now),
/// or `None` without `/proc`.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `/proc` answers for this process; a test that needs it and finds none says so,
/// and fails under `CI=true`.
fn proc_available(test: &str) -> bool {
    if status_kib(std::process::id(), "VmRSS").is_some() {
        return true;
    }
    let message = format!("{test}: skipped, no /proc/PID/status to read memory from");
    eprintln!("{message}");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
    false
}

/// `prefix`, then `x`s, then `suffix`: `bytes` long in all.
fn padded(prefix: &str, suffix: &str, bytes: usize) -> Vec<u8> {
    let pad = bytes - prefix.len() - suffix.len();
    let mut line = Vec::with_capacity(bytes + 1);
    line.extend_from_slice(prefix.as_bytes());
    line.resize(prefix.len() + pad, b'x');
    line.extend_from_slice(suffix.as_bytes());
    assert_eq!(line.len(), bytes);
    line
}

/// A replay request line of exactly `bytes` (the newline not counted): `get_telemetry`
/// with an unknown field, so answered `invalid_request` once it is read.
fn replay_line(id: &str, bytes: usize) -> Vec<u8> {
    let mut line = padded(
        &format!("{{\"action\": \"get_telemetry\", \"id\": \"{id}\", \"pad\": \""),
        "\"}",
        bytes,
    );
    line.push(b'\n');
    line
}

/// An MCP `tools/call` frame of exactly `bytes` (the newline not counted): `get_telemetry`
/// with an unknown argument, so a tool error once it is served; the id comes last, as
/// some SDKs write it.
fn mcp_frame(id: u64, bytes: usize) -> Vec<u8> {
    padded(
        r#"{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "get_telemetry", "arguments": {"pad": ""#,
        &format!("\"}}}}, \"id\": {id}}}"),
        bytes,
    )
}

// ---------------------------------------------------------------------------------------
// facts replay

/// Runs `facts replay ARGS…` with `input` on stdin; its answers, stderr and exit code.
fn replay(args: &[&str], input: &[u8]) -> (Vec<Value>, String, Option<i32>) {
    let dir = TempDir::new().unwrap();
    let stderr = dir.path().join("stderr");
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    let mut proc = Proc::start(&all, &stderr);
    let mut stdin = proc.take_stdin();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut out = String::new();
    proc.stdout.read_to_string(&mut out).unwrap();
    writer.join().unwrap();
    let code = proc.finish();
    let answers = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (answers, std::fs::read_to_string(stderr).unwrap(), code)
}

#[test]
fn replay_answers_a_line_at_the_limit_and_refuses_one_past_it() {
    // The default limit, 16 MiB: a line of 16 MiB is read, one of 16 MiB + 1 is not.
    let mut script = replay_line("at", DEFAULT_LIMIT);
    script.extend(replay_line("past", DEFAULT_LIMIT + 1));
    script.extend(b"{\"action\": \"get_telemetry\", \"id\": \"next\"}\n");
    let (answers, stderr, code) = replay(&["-"], &script);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("2 of 3 requests failed (line 1, 2)"),
        "{stderr}"
    );
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["id"], "at");
    assert_eq!(
        answers[0]["error"]["code"], "invalid_request",
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[1],
        json!({"ok": false, "id": "past", "error": {
            "code": "line_too_long", "line": 2,
            "message": "line 2 is 16777217 bytes long, over the limit of 16777216 bytes \
                        (16 MiB); it was skipped without being read into memory \
                        (--max-request-bytes sets the limit)"}})
    );
    assert_eq!(answers[2]["ok"], true, "{}", answers[2]);
    assert_eq!(answers[2]["id"], "next");

    // A limit set with the flag, on a script file; a last line without its newline, past
    // the limit, is refused too.
    let dir = TempDir::new().unwrap();
    let limit = 4096;
    let mut script = replay_line("at", limit);
    script.extend(replay_line("past", limit + 1));
    script.extend(b"{\"action\": \"get_telemetry\", \"id\": \"next\"}\n");
    let mut last = replay_line("last", limit + 1);
    last.pop();
    script.extend(&last);
    let path = dir.path().join("script.jsonl");
    std::fs::write(&path, &script).unwrap();
    let path = path.to_str().unwrap();
    let (answers, stderr, code) = replay(&["--max-request-bytes", "4KiB", path], b"");
    assert_eq!(code, Some(1), "{stderr}");
    let codes: Vec<&Value> = answers.iter().map(|a| &a["error"]["code"]).collect();
    assert_eq!(
        codes,
        [
            &json!("invalid_request"),
            &json!("line_too_long"),
            &Value::Null,
            &json!("line_too_long")
        ]
    );
    assert_eq!(answers[3]["id"], "last");
    assert_eq!(answers[3]["error"]["line"], 4);
    let message = answers[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("4097 bytes long, over the limit of 4096 bytes (4 KiB)"),
        "{message}"
    );

    // A limit below 1 KiB, or not a size, is a usage error.
    for bad in ["1000", "16MB", "lots"] {
        let (_, stderr, code) = replay(&["--max-request-bytes", bad, "-"], b"");
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--max-request-bytes"), "{stderr}");
    }
}

// ---------------------------------------------------------------------------------------
// facts mcp over stdio

/// A `facts mcp` process after the handshake.
fn mcp(args: &[&str], stderr: &Path) -> Proc {
    let mut all = vec!["mcp"];
    all.extend_from_slice(args);
    let mut proc = Proc::start(&all, stderr);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "facts-bounds-test", "version": "0"}}});
    proc.write(format!("{init}\n").as_bytes());
    let answer = proc.read();
    assert_eq!(answer["result"]["serverInfo"]["name"], "facts", "{answer}");
    proc.write(b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\n");
    proc
}

/// A `ping` request line.
fn ping(id: u64) -> Vec<u8> {
    format!("{{\"jsonrpc\": \"2.0\", \"id\": {id}, \"method\": \"ping\"}}\n").into_bytes()
}

/// Sends a frame at the limit, one past it (id last), one past it without an id, and a
/// ping, and checks the answers.
fn frames_at_and_past(proc: &mut Proc, limit: usize, described: &str) {
    let mut stdin = proc.take_stdin();
    let writer = std::thread::spawn(move || {
        for frame in [mcp_frame(1, limit), mcp_frame(2, limit + 1)] {
            stdin.write_all(&frame).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
        let mut anonymous = padded("{\"jsonrpc\": \"2.0\", \"x\": \"", "\"}", limit + 1);
        anonymous.push(b'\n');
        stdin.write_all(&anonymous).unwrap();
        stdin.write_all(&ping(3)).unwrap();
        stdin
    });
    // The relay's refusals may overtake rmcp's answers: by id.
    let mut answers: Vec<Value> = (0..4).map(|_| proc.read()).collect();
    answers.sort_by_key(|a| a["id"].as_u64().unwrap_or(0));
    let [anonymous, at, past, ping] = &answers[..] else {
        unreachable!()
    };
    assert_eq!(at["id"], 1, "{at}");
    assert_eq!(at["result"]["isError"], true, "served: {at}");
    assert_eq!(
        at["result"]["structuredContent"]["error"]["code"],
        "invalid_request"
    );
    assert_eq!(
        past,
        &json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": format!(
            "Request too large: the frame is {} bytes, over this server's limit of \
             {described}, which facts mcp --max-request-bytes sets; it was skipped",
            limit + 1)}})
    );
    assert_eq!(anonymous["id"], Value::Null, "{anonymous}");
    assert_eq!(anonymous["error"]["code"], -32600, "{anonymous}");
    assert_eq!(ping, &json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    proc.stdin = Some(writer.join().unwrap());
}

#[test]
fn mcp_answers_a_frame_at_the_limit_and_refuses_one_past_it() {
    let dir = TempDir::new().unwrap();
    let stderr = dir.path().join("stderr");
    let mut proc = mcp(&["--project", PROJECT], &stderr);
    frames_at_and_past(&mut proc, DEFAULT_LIMIT, "16777216 bytes (16 MiB)");
    assert_eq!(proc.finish(), Some(0));
    let log = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        log.contains("WARN facts::mcp::frames: line 4 answered with an invalid request error: Request too large: the frame is 16777217 bytes"),
        "{log}"
    );

    let mut proc = mcp(&["--max-request-bytes", "64KiB"], &stderr);
    frames_at_and_past(&mut proc, 64 * 1024, "65536 bytes (64 KiB)");
    assert_eq!(proc.finish(), Some(0));

    // A frame past the limit that the client does not end (it closed its input): dropped,
    // as any partial frame, and the server exits cleanly.
    let mut proc = mcp(&["--max-request-bytes", "1KiB"], &stderr);
    proc.write(&mcp_frame(5, 4096));
    assert_eq!(proc.finish(), Some(0));
    let log = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        log.contains("the client closed its input in the middle of a frame (line 3, 4096 bytes)"),
        "{log}"
    );
}

#[test]
fn a_request_rmcp_would_answer_without_its_id_is_answered_under_it() {
    let dir = TempDir::new().unwrap();
    let mut proc = mcp(&[], &dir.path().join("stderr"));
    // Params of the wrong shape: rmcp answers such a frame with a `null` id.
    proc.write(b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\": 5}\n");
    let answer = proc.read();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    proc.write(&ping(8));
    assert_eq!(proc.read()["id"], 8);
    assert_eq!(proc.finish(), Some(0));
}

/// A client that sends 20,000 requests without reading an answer: the server stops
/// reading once 32 requests are inside it and the pipes are full, so the client's writes
/// wait and the server's memory stays where it was; once the client reads, every request
/// is answered, once.
#[test]
fn a_client_that_floods_the_mcp_server_without_reading_is_slowed_and_answered() {
    const REQUESTS: usize = 20_000;
    let dir = TempDir::new().unwrap();
    let mut proc = mcp(&["--project", PROJECT], &dir.path().join("stderr"));
    // One call first, so the base is a server that has served one.
    proc.write(b"{\"jsonrpc\": \"2.0\", \"id\": 0, \"method\": \"tools/call\", \"params\": {\"name\": \"get_telemetry\", \"arguments\": {}}}\n");
    assert_eq!(proc.read()["id"], 0);
    let measured = proc_available("flood");
    let pid = proc.pid();
    let base = status_kib(pid, "VmRSS");

    let written = Arc::new(AtomicUsize::new(0));
    let mut stdin = proc.take_stdin();
    let count = written.clone();
    let writer = std::thread::spawn(move || {
        for id in 1..=REQUESTS {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": {"name": "get_telemetry", "arguments": {}}});
            stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
            count.fetch_add(1, Ordering::SeqCst);
        }
        stdin
    });
    // Three seconds without reading: the client must be held back, the server flat.
    let mut highest = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
        highest = highest.max(status_kib(pid, "VmRSS").unwrap_or(0));
    }
    let sent = written.load(Ordering::SeqCst);
    eprintln!(
        "flood: {sent} of {REQUESTS} requests written after 3 s without reading; VmRSS \
         {base:?} KiB before, at most {highest} KiB during"
    );
    assert!(
        sent < REQUESTS,
        "the client was not slowed: all {sent} written"
    );
    assert!(sent > 0, "nothing written");
    if measured {
        let base = base.unwrap();
        assert!(
            highest < base + 16 * 1024,
            "VmRSS grew from {base} KiB to {highest} KiB while the client did not read"
        );
    }

    let mut answered = vec![false; REQUESTS + 1];
    for _ in 0..REQUESTS {
        let answer = proc.read();
        let id = answer["id"].as_u64().unwrap() as usize;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert!(!answered[id], "answered twice: {id}");
        answered[id] = true;
    }
    assert!(answered[1..].iter().all(|&a| a), "every request answered");
    proc.stdin = Some(writer.join().unwrap());
    if measured {
        eprintln!(
            "flood: all answered; VmRSS {:?} KiB, VmHWM {:?} KiB",
            status_kib(pid, "VmRSS"),
            status_kib(pid, "VmHWM")
        );
    }
    assert_eq!(proc.finish(), Some(0));
}

// ---------------------------------------------------------------------------------------
// Peak memory: a 256 MiB line against an 8 MiB limit

/// Writes `head`, then `x`s, then `tail` and a newline: one line of `bytes` (without the
/// newline), a MiB at a time, never held whole; then `after`.
fn stream_line(stdin: &mut ChildStdin, head: &[u8], tail: &[u8], bytes: usize, after: &[u8]) {
    let chunk = vec![b'x'; 1024 * 1024];
    stdin.write_all(head).unwrap();
    let mut left = bytes - head.len() - tail.len();
    while left > 0 {
        let n = left.min(chunk.len());
        stdin.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    stdin.write_all(tail).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.write_all(after).unwrap();
    stdin.flush().unwrap();
}

/// The line, the limit: a 256 MiB line against the limit of 8 MiB.
const HUGE: usize = 256 * 1024 * 1024;
const SMALL_LIMIT: usize = 8 * 1024 * 1024;

/// Feeds `proc` (warmed up, its base peak taken) a [`HUGE`] line and then `after`, reads
/// the two answers, and returns them with the peak resident set, which must stay under
/// three times the limit above the base.
fn feed_huge_line(
    proc: &mut Proc,
    head: &'static [u8],
    tail: &'static [u8],
    after: &'static [u8],
    what: &str,
) -> (Value, Value) {
    let measured = proc_available(what);
    let base = status_kib(proc.pid(), "VmHWM");
    let mut stdin = proc.take_stdin();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        stream_line(&mut stdin, head, tail, HUGE, after);
        stdin
    });
    let refused = proc.read();
    let next = proc.read();
    let elapsed = start.elapsed();
    proc.stdin = Some(writer.join().unwrap());
    if measured {
        let (base, peak) = (base.unwrap(), status_kib(proc.pid(), "VmHWM").unwrap());
        let bound = base + 3 * (SMALL_LIMIT as u64 / 1024);
        eprintln!(
            "{what}: a {} MiB line against a {} MiB limit in {elapsed:.2?}: VmHWM {base} KiB \
             before, {peak} KiB after (bound {bound} KiB)",
            HUGE >> 20,
            SMALL_LIMIT >> 20
        );
        assert!(
            peak < bound,
            "{what}: peak RSS {peak} KiB, over {bound} KiB (base {base} + 3 × the limit)"
        );
    }
    (refused, next)
}

#[test]
fn replay_skips_a_256_mib_line_in_memory_bounded_by_the_limit() {
    let dir = TempDir::new().unwrap();
    let mut proc = Proc::start(
        &["replay", "-", "--max-request-bytes", "8MiB"],
        &dir.path().join("stderr"),
    );
    proc.write(b"{\"action\": \"get_telemetry\", \"id\": 1}\n");
    assert_eq!(proc.read()["ok"], true);
    let (refused, next) = feed_huge_line(
        &mut proc,
        b"{\"action\": \"get_telemetry\", \"x\": \"",
        b"\", \"id\": \"huge\"}",
        b"{\"action\": \"get_telemetry\", \"id\": 3}\n",
        "facts replay",
    );
    assert_eq!(refused["error"]["code"], "line_too_long", "{refused}");
    assert_eq!(refused["id"], "huge", "found after 256 MiB: {refused}");
    assert_eq!(refused["error"]["line"], 2);
    assert_eq!(next["id"], 3);
    assert_eq!(next["ok"], true);
    assert_eq!(proc.finish(), Some(1));
}

#[test]
fn mcp_skips_a_256_mib_frame_in_memory_bounded_by_the_limit() {
    let dir = TempDir::new().unwrap();
    let mut proc = mcp(&["--max-request-bytes", "8MiB"], &dir.path().join("stderr"));
    proc.write(&ping(1));
    assert_eq!(proc.read()["id"], 1);
    let (refused, next) = feed_huge_line(
        &mut proc,
        b"{\"jsonrpc\": \"2.0\", \"method\": \"tools/call\", \"params\": {\"name\": \"get_telemetry\", \"arguments\": {\"x\": \"",
        b"\"}}, \"id\": \"huge\"}",
        b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"ping\"}\n",
        "facts mcp",
    );
    assert_eq!(refused["id"], "huge", "{refused}");
    assert_eq!(refused["error"]["code"], -32600);
    assert!(
        refused["error"]["message"].as_str().unwrap().contains(
            "the frame is 268435456 bytes, over this server's limit of 8388608 bytes (8 MiB)"
        ),
        "{refused}"
    );
    assert_eq!(next, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(proc.finish(), Some(0));
}

// ---------------------------------------------------------------------------------------
// facts mcp --http

/// A `facts mcp --http` process, killed when dropped.
struct HttpServer {
    child: Child,
    /// `127.0.0.1:PORT`.
    authority: String,
    _watchdog: Sender<()>,
}

impl HttpServer {
    fn start(args: &[&str]) -> HttpServer {
        let mut child = Command::new(BIN)
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let watchdog = watchdog(child.id(), "facts mcp --http".to_owned());
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let authority = loop {
            line.clear();
            assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no URL on stderr");
            if let Some(rest) = line.trim().split("http://").nth(1) {
                break rest.trim_end_matches("/mcp").to_owned();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer {
            child,
            authority,
            _watchdog: watchdog,
        }
    }

    /// POSTs `body` to `/mcp` with `headers`; chunked when `chunked`. Writing may fail once
    /// the server has answered (it stops reading a body past the limit): the answer is
    /// read all the same.
    fn post(&self, headers: &[(&str, &str)], body: &[u8], chunked: bool) -> Response {
        let mut stream = TcpStream::connect(&self.authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n",
            self.authority
        );
        if chunked {
            head.push_str("Transfer-Encoding: chunked\r\n");
        } else {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut writer = stream.try_clone().unwrap();
        let body = body.to_vec();
        let sent = std::thread::spawn(move || -> std::io::Result<()> {
            writer.write_all(head.as_bytes())?;
            if chunked {
                for piece in body.chunks(256 * 1024) {
                    writer.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                    writer.write_all(piece)?;
                    writer.write_all(b"\r\n")?;
                }
                writer.write_all(b"0\r\n\r\n")?;
            } else {
                writer.write_all(&body)?;
            }
            writer.flush()
        });
        let mut raw = Vec::new();
        let mut buffer = [0_u8; 64 * 1024];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buffer[..n]),
                // The server closed a connection whose body it did not read.
                Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => {
                    break;
                }
                Err(e) => panic!("reading the answer: {e}"),
            }
        }
        let _ = sent.join().unwrap();
        Response::parse(&raw)
    }

    /// Initializes a session; its id.
    fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "facts-bounds-test", "version": "0"}}});
        let response = self.post(&[], init.to_string().as_bytes(), false);
        assert_eq!(response.status, 200, "{}", response.body);
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let headers = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        let response = self.post(&headers, initialized.to_string().as_bytes(), false);
        assert_eq!(response.status, 202, "{}", response.body);
        session
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Posts a body at the limit (served), one past it by `Content-Length` and one past it
/// chunked (both 413 with a JSON-RPC error), then a ping in the same session.
fn bodies_at_and_past(server: &HttpServer, limit: usize, described: &str) {
    let session = server.session();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let at = server.post(&headers, &mcp_frame(1, limit), false);
    assert_eq!(at.status, 200, "{}", at.body);
    let answer = at.message();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "served: {answer}");

    let past = server.post(&headers, &mcp_frame(2, limit + 1), false);
    assert_eq!(past.status, 413, "{}", past.body);
    assert_eq!(past.header("content-type"), Some("application/json"));
    assert_eq!(
        past.message(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": format!(
            "Request too large: the body is {} bytes, over this server's limit of \
             {described}, which facts mcp --max-request-bytes sets", limit + 1)}})
    );
    let chunked = server.post(&headers, &mcp_frame(3, limit + 1), true);
    assert_eq!(chunked.status, 413, "{}", chunked.body);
    assert_eq!(
        chunked.message()["error"]["message"],
        format!(
            "Request too large: the body is over this server's limit of {described}, which \
             facts mcp --max-request-bytes sets"
        )
    );
    // A chunked body at the limit is served.
    let at = server.post(&headers, &mcp_frame(4, limit), true);
    assert_eq!(at.status, 200, "{}", at.body);
    assert_eq!(at.message()["id"], 4);

    let ping = server.post(&headers, &ping(5), false);
    assert_eq!(
        ping.message(),
        json!({"jsonrpc": "2.0", "id": 5, "result": {}})
    );
}

#[test]
fn http_answers_a_body_at_the_limit_and_refuses_one_past_it_with_413() {
    let server = HttpServer::start(&["--project", PROJECT]);
    bodies_at_and_past(&server, DEFAULT_LIMIT, "16777216 bytes (16 MiB)");
    let server = HttpServer::start(&["--max-request-bytes", "1MiB"]);
    bodies_at_and_past(&server, 1024 * 1024, "1048576 bytes (1 MiB)");
}

// ---------------------------------------------------------------------------------------
// Transcripts and searches

/// A transcript of `bytes` bytes: JSON lines of one message each.
fn transcript(bytes: usize) -> String {
    let line = "{\"role\": \"user\", \"content\": \"I adopted Luna, a greyhound.\"}\n";
    // Whole lines but the last one or two, then a last message filled to the byte.
    let mut text = line.repeat(bytes / line.len() - 1);
    let pad = bytes - text.len();
    let open = "{\"role\": \"user\", \"content\": \"";
    text.push_str(open);
    text.push_str(&"x".repeat(pad - open.len() - 2));
    text.push_str("\"}");
    assert_eq!(text.len(), bytes, "the padding is {pad} bytes");
    text
}

#[test]
fn transcripts_past_8_mib_are_transcript_too_large_over_mcp_and_on_stdin() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let db = db.to_str().unwrap();
    let mut proc = mcp(&["--db", db], &dir.path().join("stderr"));
    let call = |proc: &mut Proc, id: u64, text: &str| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "memory_archive", "arguments": {"transcript": text}}});
        proc.write(format!("{request}\n").as_bytes());
        let answer = proc.read();
        assert_eq!(answer["id"], id, "{answer}");
        answer["result"].clone()
    };
    let at = call(&mut proc, 1, &transcript(TRANSCRIPT_LIMIT));
    assert_eq!(at["isError"], false, "{at}");
    assert!(at["structuredContent"]["episode_id"].is_string(), "{at}");
    let past = call(&mut proc, 2, &transcript(TRANSCRIPT_LIMIT + 1));
    assert_eq!(past["isError"], true, "{past}");
    assert_eq!(
        past["structuredContent"]["error"]["code"],
        "transcript_too_large"
    );
    assert_eq!(proc.finish(), Some(0));

    // `facts mem archive` on stdin, with --json: the same code, exit 2.
    let mut child = Command::new(BIN)
        .args(["mem", "--db", db, "archive", "--transcript", "-", "--json"])
        .env_remove("FACTMEM_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _watchdog = watchdog(child.id(), "facts mem archive".to_owned());
    let mut stdin = child.stdin.take().unwrap();
    let text = transcript(TRANSCRIPT_LIMIT + 1);
    // It reads no more than the limit and a byte: the rest may find the pipe closed.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["code"], "transcript_too_large", "{error}");
}

/// Every search takes any limit (up to 2^64 - 1) and answers at most 1,000 results (the
/// runtime's `query_facts` at most the spec's valid facts, 500 after compaction).
#[test]
fn searches_take_any_limit_and_answer_at_most_1000_results() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let db = db.to_str().unwrap();
    let mut proc = mcp(
        &["--db", db, "--project", PROJECT],
        &dir.path().join("stderr"),
    );
    // 1,100 facts, written while the answers are read.
    let mut stdin = proc.take_stdin();
    let writer = std::thread::spawn(move || {
        for n in 0..1_100 {
            let request = json!({"jsonrpc": "2.0", "id": 100_000 + n, "method": "tools/call",
                "params": {"name": "memory_add", "arguments": {
                    "subject": format!("greyhound {n}"), "relation": "likes",
                    "object": format!("the park by the river, walk {n}")}}});
            stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
        }
        stdin
    });
    for _ in 0..1_100 {
        let answer = proc.read();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    proc.stdin = Some(writer.join().unwrap());
    let huge = u64::MAX;
    let mut call = |id: u64, name: &str, arguments: Value| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments}});
        proc.write(format!("{request}\n").as_bytes());
        let answer = proc.read();
        assert_eq!(answer["result"]["isError"], false, "{name}: {answer}");
        answer["result"]["structuredContent"].clone()
    };
    let search = call(
        1,
        "memory_search",
        json!({"query": "greyhound park", "limit": huge}),
    );
    assert_eq!(search["results"].as_array().unwrap().len(), 1_000);
    let recall = call(
        2,
        "memory_recall",
        json!({"query": "greyhound park", "limit": huge, "max_tokens": huge}),
    );
    let facts = recall["facts"].as_array().unwrap().len();
    assert!((1..=1_000).contains(&facts), "{facts} facts recalled");
    let query = call(
        3,
        "query_facts",
        json!({"spec_name": "demo", "task_id": "2", "task_description": "parser",
               "max_facts": huge, "max_tokens": huge}),
    );
    assert_eq!(query["ok"], true, "{query}");
    assert_eq!(proc.finish(), Some(0));

    // `facts mem search` and `recall`: at most 1,000, and past it a usage error.
    let mem = |args: &[&str]| {
        Command::new(BIN)
            .args(["mem", "--db", db, "--json"])
            .args(args)
            .env_remove("FACTMEM_DB")
            .output()
            .unwrap()
    };
    let output = mem(&["search", "greyhound", "park", "--limit", "1000"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let search: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(search["results"].as_array().unwrap().len(), 1_000);
    for command in ["search", "recall"] {
        for limit in ["1001", &huge.to_string()] {
            let output = mem(&[command, "greyhound", "--limit", limit]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} --limit {limit}: {stderr}"
            );
            assert!(stderr.contains("at most 1000"), "{stderr}");
        }
    }

    // The runtime's `query_facts`: any `max_facts`, at most the spec's valid facts, which
    // compaction keeps to 500.
    let files: Vec<String> = (0..1_500).map(|n| format!("src/f{n}.rs")).collect();
    let result = json!({"task_id": "1", "status": "completed", "summary": "many",
                        "files_changed": files});
    let output = format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT");
    let script = [
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1", "rebind": true}),
        json!({"action": "ingest_output", "run_id": "demo:1", "role": "implementer",
               "task_id": "1", "output": output, "max_output_tokens": 1_000_000_000}),
        json!({"action": "query_facts", "spec_name": "demo", "task_id": "2",
               "task_description": "modified_by task", "max_facts": huge, "max_tokens": huge}),
    ];
    let script: String = script.iter().map(|r| format!("{r}\n")).collect();
    let (answers, stderr, code) = replay(&["-", "--project", PROJECT], script.as_bytes());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(answers[1]["facts_added"], 1_502, "{}", answers[1]);
    let facts = answers[2]["facts"].as_array().unwrap().len();
    assert!((1..=1_000).contains(&facts), "{facts} facts");
}
