//! `facts mcp --http --tokens`: the real binary serving tenants over HTTP (and HTTPS), driven
//! with plain HTTP/1.1 requests: authentication, each tenant's own memory and specs,
//! rights, limits, SIGHUP, TLS, and a token file refused at start.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::Response;
#[path = "support/pg_server.rs"]
mod pg_server;
use pg_server::pg_server;

/// The hex SHA-256 of a token, as `printf %s "$TOKEN" | sha256sum` prints it.
fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A token file entry: the tenant `name` whose token is `TOKEN-name`.
fn tenant(name: &str, scope: &str, rights: &[&str]) -> Value {
    json!({"tenant": name, "sha256": digest(&token(name)), "scope": scope, "rights": rights})
}

fn token(name: &str) -> String {
    format!("TOKEN-{name}")
}

/// Writes the token file `tokens.json` of `tenants` in `dir`.
fn write_tokens(dir: &Path, tenants: &[Value]) -> PathBuf {
    let path = dir.join("tokens.json");
    std::fs::write(&path, json!({"tenants": tenants}).to_string()).unwrap();
    path
}

/// A `facts mcp --http` process, killed when dropped, and what it wrote on stderr.
struct Server {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
    /// The certificate clients trust, for HTTPS.
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut url = String::new();
        let mut line = String::new();
        while url.is_empty() {
            line.clear();
            assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no URL on stderr");
            if let Some(start) = line.find("://") {
                let scheme_start = line[..start].rfind(' ').map_or(0, |i| i + 1);
                url = line[scheme_start..].trim().to_owned();
            }
        }
        let logged = Arc::new(Mutex::new(String::new()));
        let sink = logged.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Server {
            child,
            url,
            stderr: logged,
            tls: None,
        }
    }

    fn logged(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr holds `text`.
    fn wait_for_log(&self, text: &str) {
        let start = Instant::now();
        while !self.logged().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "never logged {text:?}: {}",
                self.logged()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn hangup(&self) {
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// One POST of `body` with `headers`, over a new connection.
    fn post(&self, headers: &[(&str, &str)], body: &str) -> Response {
        let rest = self.url.split_once("://").unwrap().1;
        let (authority, path) = rest.split_at(rest.find('/').unwrap());
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let tcp = TcpStream::connect(authority).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let raw = match &self.tls {
            None => exchange(tcp, request.as_bytes()),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
                let connection = rustls::ClientConnection::new(config.clone(), name).unwrap();
                exchange(
                    rustls::StreamOwned::new(connection, tcp),
                    request.as_bytes(),
                )
            }
        };
        Response::parse(&raw)
    }

    /// A session of the tenant whose token is `token` (none: no `Authorization`).
    fn connect(&self, token: &str) -> Session<'_> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "facts-tenants-test", "version": "0"}}});
        let bearer = format!("Bearer {token}");
        let response = self.post(&[("Authorization", &bearer)], &init.to_string());
        assert_eq!(response.status, 200, "{}", response.body);
        let session = Session {
            server: self,
            bearer,
            id: response.header("mcp-session-id").unwrap().to_owned(),
            next_id: 0,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = session.post(&initialized);
        assert_eq!(response.status, 202, "{}", response.body);
        session
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `request` on `stream` and reads the answer to its end.
fn exchange(mut stream: impl Read + Write, request: &[u8]) -> Vec<u8> {
    stream.write_all(request).unwrap();
    stream.flush().unwrap();
    let mut raw = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return raw,
            Ok(n) => raw.extend_from_slice(&buffer[..n]),
            // A peer that closes without TLS close_notify: the answer is complete.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return raw,
            Err(e) => panic!("reading the answer: {e}"),
        }
    }
}

/// The protocol version the clients negotiate.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// A tenant's MCP session.
struct Session<'a> {
    server: &'a Server,
    bearer: String,
    id: String,
    next_id: u64,
}

impl Session<'_> {
    fn post(&self, message: &Value) -> Response {
        let headers = [
            ("Authorization", self.bearer.as_str()),
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", PROTOCOL_VERSION),
        ];
        self.server.post(&headers, &message.to_string())
    }

    /// Sends a request; its HTTP response.
    fn send(&mut self, method: &str, params: Value) -> Response {
        self.next_id += 1;
        let id = self.next_id;
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    /// Sends a request and returns its response message.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.send(method, params);
        assert_eq!(response.status, 200, "{}", response.body);
        let id = self.next_id;
        response
            .messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {}", response.body))
    }

    /// Calls a tool and returns its result.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))["result"].clone()
    }

    fn tool_names(&mut self) -> Vec<String> {
        self.request("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The error code of a failed tool call.
fn error_code(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap()
}

/// A JSON-RPC request body of `tools/list`.
fn list_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string()
}

#[test]
fn a_request_without_a_listed_token_gets_401_and_the_log_never_shows_the_token() {
    let dir = TempDir::new().unwrap();
    let tokens = write_tokens(dir.path(), &[tenant("alice", "alice", &["read"])]);
    let server = Server::start(&["--tokens", tokens.to_str().unwrap()]);
    let wrong = "Bearer not-a-listed-secret";
    for headers in [
        vec![],
        vec![("Authorization", wrong)],
        vec![("Authorization", "Basic YWxpY2U6c2VjcmV0")],
        vec![("Authorization", "Bearer ")],
    ] {
        let response = server.post(&headers, &list_body());
        assert_eq!(response.status, 401, "{headers:?}: {}", response.body);
        assert!(
            response
                .header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "{:?}",
            response.headers
        );
        let error: Value = serde_json::from_str(&response.body).unwrap();
        assert_eq!(error["jsonrpc"], "2.0");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Unauthorized"),
            "{error}"
        );
    }
    // The tenant's own token gets in.
    let mut alice = server.connect(&token("alice"));
    assert_eq!(alice.call("get_telemetry", json!({}))["isError"], false);
    server.wait_for_log("unknown token");
    server.wait_for_log("no bearer token");
    let logged = server.logged();
    assert!(logged.contains("127.0.0.1"), "the peer is logged: {logged}");
    assert!(!logged.contains("not-a-listed-secret"), "{logged}");
    assert!(!logged.contains(&token("alice")), "{logged}");
}

#[test]
fn tenants_memories_and_specs_are_apart_down_to_the_rows() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("m.db");
    let all = ["read", "write", "runtime"];
    let tokens = write_tokens(
        dir.path(),
        &[
            tenant("alice", "team/alice", &all),
            tenant("bob", "team/bob", &all),
        ],
    );
    let server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--project",
        "tests/fixtures/project",
    ]);
    let mut alice = server.connect(&token("alice"));
    let mut bob = server.connect(&token("bob"));
    let added = alice.call(
        "memory_add",
        json!({"subject": "alice", "relation": "prefers", "object": "green tea",
               "statement": "Alice prefers green tea"}),
    );
    assert_eq!(added["isError"], false, "{added}");
    let found = alice.call("memory_search", json!({"query": "green tea"}));
    assert_eq!(
        found["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{found}"
    );
    for tool in ["memory_search", "memory_recall"] {
        let result = bob.call(tool, json!({"query": "green tea"}));
        assert_eq!(result["isError"], false, "{result}");
        let answer = result["structuredContent"].to_string();
        assert!(!answer.contains("prefers"), "{tool}: {result}");
    }
    // Both run the same spec: each in its own store.
    for session in [&mut alice, &mut bob] {
        let init = session.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
        assert_eq!(init["isError"], false, "{init}");
    }
    let result = json!({"task_id": "1", "status": "completed", "summary": "Parser added",
                        "files_changed": ["src/parser.rs"]});
    let output = format!("Work done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    let ingest = alice.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": output}),
    );
    assert_eq!(ingest["isError"], false, "{ingest}");
    let history = |session: &mut Session<'_>| {
        session.call(
            "fact_history",
            json!({"spec_name": "demo", "subject": "src/parser.rs"}),
        )["structuredContent"]["facts"]
            .as_array()
            .map_or(0, Vec::len)
    };
    assert!(history(&mut alice) > 0);
    assert_eq!(history(&mut bob), 0);
    // A tenant erases its own scope only: naming alice's, bob erases nothing.
    let refused = bob.call("memory_erase_scope", json!({"scope": "team/alice"}));
    assert_eq!(error_code(&refused), "wrong_scope", "{refused}");
    let erased = bob.call("memory_erase_scope", json!({"scope": "team/bob"}));
    assert_eq!(erased["isError"], false, "{erased}");
    assert_eq!(
        erased["structuredContent"]["erased"]["versions"], 0,
        "{erased}"
    );
    drop(server);

    let sql = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(String, String)> = sql
        .prepare("SELECT s.name, f.object FROM facts f JOIN scopes s ON s.id = f.scope")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        rows.contains(&("team/alice".to_owned(), "green tea".to_owned())),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|(scope, _)| scope == "team/alice/spec:demo"),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .all(|(scope, _)| scope.starts_with("team/alice")),
        "only alice stored facts: {rows:?}"
    );
}

#[test]
fn a_call_without_its_right_is_forbidden_and_tools_list_shows_what_a_tenant_may_call() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("m.db");
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let mut runner = tenant("runner", "runner", &["runtime", "read"]);
    runner["project"] = json!(project);
    let tokens = write_tokens(dir.path(), &[tenant("reader", "reader", &["read"]), runner]);
    let server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let mut reader = server.connect(&token("reader"));
    let names = reader.tool_names();
    assert!(names.contains(&"memory_search".to_owned()), "{names:?}");
    assert!(names.contains(&"query_facts".to_owned()), "{names:?}");
    assert!(!names.contains(&"memory_add".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"memory_erase_scope".to_owned()),
        "{names:?}"
    );
    assert!(!names.contains(&"init_run".to_owned()), "{names:?}");
    let add = reader.call(
        "memory_add",
        json!({"subject": "a", "relation": "b", "object": "c"}),
    );
    assert_eq!(error_code(&add), "forbidden");
    assert!(
        add["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("write"),
        "{add}"
    );
    assert_eq!(
        error_code(&reader.call("init_run", json!({"spec_name": "demo", "task_id": "1"}))),
        "forbidden"
    );
    let erase = reader.call("memory_erase_scope", json!({"scope": "reader"}));
    assert_eq!(error_code(&erase), "forbidden", "{erase}");
    assert_eq!(
        reader.call("memory_search", json!({"query": "x"}))["isError"],
        false
    );
    server.wait_for_log("without the write right");

    // project_path must stay inside the tenant's project.
    let mut runner = server.connect(&token("runner"));
    for outside in ["..", "/", "tests/fixtures/project", "../../.."] {
        let init = runner.call(
            "init_run",
            json!({"spec_name": "demo", "task_id": "1", "project_path": outside}),
        );
        assert_eq!(error_code(&init), "forbidden", "{outside}: {init}");
    }
    // Inside it, the runtime answers (here: no tasks.md).
    let init = runner.call(
        "init_run",
        json!({"spec_name": "demo", "task_id": "1", "project_path": "."}),
    );
    assert_eq!(error_code(&init), "progress_ledger_missing_tasks", "{init}");
    assert!(!runner.tool_names().contains(&"memory_add".to_owned()));
}

#[test]
fn a_session_answers_only_the_token_that_created_it() {
    let dir = TempDir::new().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[
            tenant("alice", "alice", &["read"]),
            tenant("bob", "bob", &["read"]),
        ],
    );
    let server = Server::start(&["--tokens", tokens.to_str().unwrap()]);
    let alice = server.connect(&token("alice"));
    let mut stolen = server.connect(&token("bob"));
    stolen.id = alice.id.clone();
    let response = stolen.send("tools/list", json!({}));
    assert_eq!(response.status, 404, "{}", response.body);
    let error: Value = serde_json::from_str(&response.body).unwrap();
    assert!(error["error"]["message"].as_str().is_some(), "{error}");
    server.wait_for_log("created with another token");
}

/// Runs `facts mcp ARGS` to its end: exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_facts"))
        .arg("mcp")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_token_file_that_is_wrong_is_refused_at_start_naming_the_entry() {
    let dir = TempDir::new().unwrap();
    let check = |tenants: Value, expect: &str| {
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, tenants.to_string()).unwrap();
        let (code, stderr) = run(&["--http", "127.0.0.1:0", "--tokens", path.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(expect), "{expect:?} in {stderr}");
    };
    check(
        json!({"tenants": [tenant("a", "acme", &["read"]), tenant("b", "acme/b", &["read"])]}),
        "tenant \"b\" (entry 2): its scope \"acme/b\" overlaps tenant \"a\"'s",
    );
    check(
        json!({"tenants": [{"tenant": "a", "sha256": "0123", "rights": ["read"]}]}),
        "tenant \"a\" (entry 1): sha256 \"0123\" is not 64 hex digits",
    );
    check(
        json!({"tenants": [tenant("a", "a", &["read", "admin"])]}),
        "tenant \"a\" (entry 1): unknown right \"admin\"",
    );
    check(
        json!({"tenants": [tenant("a", "a", &["read"]), {"tenant": "b", "sha256": digest(&token("a")), "rights": []}]}),
        "another entry's too",
    );
    check(json!({"tenant": []}), "not a token file");
    let (code, stderr) = run(&["--http", "127.0.0.1:0", "--tokens", "/no/such/tokens.json"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("/no/such/tokens.json"), "{stderr}");
    // --tokens is for HTTP.
    let (code, _) = run(&["--tokens", "/no/such/tokens.json"]);
    assert_eq!(code, Some(2));
}

#[test]
fn allow_remote_needs_tokens() {
    let (code, stderr) = run(&["--http", "0.0.0.0:0", "--allow-remote"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("needs --tokens"), "{stderr}");
    let (code, stderr) = run(&["--http", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--tokens") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
    // With tokens, it serves.
    let dir = TempDir::new().unwrap();
    let tokens = write_tokens(dir.path(), &[tenant("a", "a", &["read"])]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--http", "0.0.0.0:0", "--allow-remote", "--tokens"])
        .arg(&tokens)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("serving MCP"), "{line}");
}

#[test]
fn sighup_rereads_the_token_file_and_keeps_the_old_one_when_the_new_is_wrong() {
    let dir = TempDir::new().unwrap();
    let tokens = write_tokens(dir.path(), &[tenant("old", "old", &["read"])]);
    let server = Server::start(&["--tokens", tokens.to_str().unwrap()]);
    let old = server.connect(&token("old"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    assert_eq!(old.post(&list).status, 200);

    write_tokens(dir.path(), &[tenant("new", "new", &["read"])]);
    server.hangup();
    server.wait_for_log("SIGHUP: re-read");
    // The removed token's session is refused; the new token gets in.
    let refused = old.post(&list);
    assert_eq!(refused.status, 401, "{}", refused.body);
    let mut new = server.connect(&token("new"));
    assert!(!new.tool_names().is_empty());

    // A wrong file is logged and the tenants stay.
    std::fs::write(&tokens, "{\"tenants\": [{\"tenant\": \"x\"").unwrap();
    server.hangup();
    server.wait_for_log("the tenants read before are kept");
    assert!(!new.tool_names().is_empty());
    assert_eq!(old.post(&list).status, 401);
}

#[test]
fn a_storming_tenant_gets_429_and_another_tenant_is_served() {
    let dir = TempDir::new().unwrap();
    let mut storm = tenant("storm", "storm", &["read"]);
    storm["rate_per_sec"] = json!(1);
    storm["burst"] = json!(5);
    let tokens = write_tokens(dir.path(), &[storm, tenant("calm", "calm", &["read"])]);
    let server = Server::start(&["--tokens", tokens.to_str().unwrap()]);
    let mut calm = server.connect(&token("calm"));
    let mut storm = server.connect(&token("storm"));
    let mut limited = None;
    for _ in 0..20 {
        let response = storm.send("tools/list", json!({}));
        if response.status == 429 {
            limited = Some(response);
            break;
        }
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let limited = limited.expect("the storm was never limited");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    let error: Value = serde_json::from_str(&limited.body).unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Too many requests"),
        "{error}"
    );
    for _ in 0..20 {
        assert_eq!(calm.call("get_telemetry", json!({}))["isError"], false);
    }
    server.wait_for_log("is over its request rate");
}

#[test]
fn requests_in_flight_are_limited_and_a_client_that_disconnects_mid_request_frees_its_place() {
    let dir = TempDir::new().unwrap();
    let mut one = tenant("one", "one", &["read"]);
    one["max_concurrent"] = json!(1);
    let tokens = write_tokens(dir.path(), &[one]);
    let server = Server::start(&["--tokens", tokens.to_str().unwrap()]);
    let mut session = server.connect(&token("one"));
    // A request whose body never comes whole: it holds the tenant's one place.
    let authority = server
        .url
        .split_once("://")
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut slow = TcpStream::connect(&authority).unwrap();
    write!(
        slow,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: {}\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
         Content-Length: 1000\r\n\r\n{{\"jsonrpc\":",
        session.bearer, session.id
    )
    .unwrap();
    slow.flush().unwrap();
    let start = Instant::now();
    loop {
        let response = session.send("tools/list", json!({}));
        if response.status == 429 {
            assert_eq!(response.header("retry-after"), Some("1"));
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never limited");
        std::thread::sleep(Duration::from_millis(20));
    }
    // It goes away mid-request: the server goes on, and the place is free again.
    drop(slow);
    let start = Instant::now();
    loop {
        let response = session.send("tools/list", json!({}));
        if response.status == 200 {
            break;
        }
        assert_eq!(response.status, 429, "{}", response.body);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the place was never freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(session.call("get_telemetry", json!({}))["isError"], false);
}

#[test]
fn https_serves_a_client_that_trusts_the_certificate() {
    let dir = TempDir::new().unwrap();
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[tenant("alice", "alice", &["read", "runtime"])],
    );
    let mut server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    server.tls = Some(Arc::new(config));
    let mut alice = server.connect(&token("alice"));
    assert_eq!(alice.call("get_telemetry", json!({}))["isError"], false);
    assert!(alice.tool_names().contains(&"init_run".to_owned()));
    // Plain HTTP on the HTTPS port gets no answer, and the server goes on.
    let authority = server
        .url
        .split_once("://")
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut plain = TcpStream::connect(&authority).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = plain.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"));
    assert_eq!(alice.call("get_telemetry", json!({}))["isError"], false);
    // A TLS file that cannot be read stops the server at start.
    let (code, stderr) = run(&[
        "--http",
        "127.0.0.1:0",
        "--tls-cert",
        "/no/cert.pem",
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--tls-cert /no/cert.pem"), "{stderr}");
}

/// A self-signed certificate for 127.0.0.1, written to `cert.pem` and `key.pem` in `dir`,
/// and a client configuration that trusts it alone.
fn certify(dir: &Path) -> (PathBuf, PathBuf, Arc<rustls::ClientConfig>) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (cert, key, Arc::new(config))
}

/// Whether a TLS handshake with the server succeeds for a client trusting `config`.
fn handshakes(server: &Server, config: &Arc<rustls::ClientConfig>) -> bool {
    let authority = server
        .url
        .split_once("://")
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap();
    let mut tcp = TcpStream::connect(authority).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut connection = rustls::ClientConnection::new(config.clone(), name).unwrap();
    while connection.is_handshaking() {
        if connection.complete_io(&mut tcp).is_err() {
            return false;
        }
    }
    true
}

#[test]
fn sighup_rereads_the_certificate_and_keeps_the_old_one_when_the_new_is_wrong() {
    let dir = TempDir::new().unwrap();
    let (cert, key, first) = certify(dir.path());
    let tokens = write_tokens(dir.path(), &[tenant("alice", "alice", &["read"])]);
    let mut server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(handshakes(&server, &first));

    // A renewed certificate: served to the connections after the SIGHUP.
    let (_, _, renewed) = certify(dir.path());
    assert!(!handshakes(&server, &renewed), "not before the SIGHUP");
    server.hangup();
    server.wait_for_log("new connections are served with them");
    assert!(handshakes(&server, &renewed));
    assert!(
        !handshakes(&server, &first),
        "the old certificate is no longer served"
    );
    server.tls = Some(renewed.clone());
    let mut alice = server.connect(&token("alice"));
    assert_eq!(alice.call("get_telemetry", json!({}))["isError"], false);

    // A certificate file that cannot be read is logged, and the one read before stays.
    std::fs::write(&cert, "not a certificate").unwrap();
    server.hangup();
    server.wait_for_log("the certificate read before is kept");
    assert!(
        !server.logged().contains("not a certificate"),
        "no file content in the log"
    );
    assert!(handshakes(&server, &renewed));
    assert_eq!(alice.call("get_telemetry", json!({}))["isError"], false);
    // The tenants were read again too, and kept.
    assert!(server.logged().contains("SIGHUP: re-read"));
}

#[test]
fn without_tokens_nobody_is_asked_for_one() {
    let server = Server::start(&[]);
    let response = server.post(
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
        .to_string(),
    );
    assert_eq!(response.status, 200, "{}", response.body);
}

/// The model directory; `None` outside CI when `FACTMEM_MODEL_DIR` is unset.
#[cfg(feature = "onnx")]
fn model() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FACTMEM_MODEL_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_MODEL_DIR is not set under CI=true: assemble the model directory with \
         `eval \"$(.ci/models)\"` (.ci/run does)"
    );
    let _ = writeln!(
        std::io::stderr(),
        "FACTMEM_MODEL_DIR is not set: tenants with an embedder are not tested"
    );
    None
}

#[cfg(feature = "onnx")]
#[test]
fn tenants_share_one_model_and_recall_by_meaning_each_in_its_own_scope() {
    let Some(model) = model() else { return };
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("m.db");
    let rights = ["read", "write"];
    let tokens = write_tokens(
        dir.path(),
        &[
            tenant("alice", "alice", &rights),
            tenant("bob", "bob", &rights),
        ],
    );
    let server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--embedder",
        model.to_str().unwrap(),
    ]);
    let mut alice = server.connect(&token("alice"));
    let mut bob = server.connect(&token("bob"));
    let added = alice.call(
        "memory_add",
        json!({"subject": "Melanie", "relation": "adopted", "object": "a puppy named Oscar",
               "statement": "Melanie adopted a puppy named Oscar"}),
    );
    assert_eq!(added["isError"], false, "{added}");
    let question = json!({"query": "which pet does she own?"});
    let recall = alice.call("memory_recall", question.clone());
    assert!(
        recall["structuredContent"].to_string().contains("Oscar"),
        "{recall}"
    );
    let recall = bob.call("memory_recall", question);
    assert_eq!(recall["isError"], false, "{recall}");
    assert!(
        !recall["structuredContent"].to_string().contains("Oscar"),
        "{recall}"
    );
}

#[test]
fn tenants_on_postgresql_keep_their_rows_under_their_own_scopes() {
    let Some(url) = pg_server("the PostgreSQL tests of facts --tokens are") else {
        return;
    };
    // Scopes no other test (of this run or an earlier one) uses.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let root = format!("tenants-{}-{nanos}", std::process::id());
    let (alice_scope, bob_scope) = (format!("{root}/alice"), format!("{root}/bob"));
    let dir = TempDir::new().unwrap();
    let all = ["read", "write", "runtime"];
    let tokens = write_tokens(
        dir.path(),
        &[
            tenant("alice", &alice_scope, &all),
            tenant("bob", &bob_scope, &all),
        ],
    );
    let server = Server::start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--db",
        &url,
        "--project",
        "tests/fixtures/project",
    ]);
    let mut alice = server.connect(&token("alice"));
    let mut bob = server.connect(&token("bob"));
    let added = alice.call(
        "memory_add",
        json!({"subject": "alice", "relation": "prefers", "object": "oolong",
               "statement": "Alice prefers oolong"}),
    );
    assert_eq!(added["isError"], false, "{added}");
    let init = alice.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    assert_eq!(init["isError"], false, "{init}");
    let output = format!(
        "Work done.\nBEGIN_DISPATCH_RESULT\n{}\nEND_DISPATCH_RESULT\n",
        json!({"task_id": "1", "status": "completed", "summary": "Parser added",
               "files_changed": ["src/parser.rs"]})
    );
    let ingest = alice.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": output}),
    );
    assert_eq!(ingest["isError"], false, "{ingest}");
    let found = bob.call("memory_search", json!({"query": "oolong"}));
    assert_eq!(found["structuredContent"]["results"], json!([]), "{found}");
    drop(server);

    let mut sql = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let rows: Vec<(String, String)> = sql
        .query(
            "SELECT s.name, f.object FROM factmem.facts f JOIN factmem.scopes s \
             ON s.id = f.scope WHERE s.name LIKE $1",
            &[&format!("{root}/%")],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert!(
        rows.contains(&(alice_scope.clone(), "oolong".to_owned())),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|(scope, _)| *scope == format!("{alice_scope}/spec:demo")),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .all(|(scope, _)| scope.starts_with(&alice_scope)),
        "{rows:?}"
    );
}
