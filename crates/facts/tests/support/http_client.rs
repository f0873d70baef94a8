//! A plain HTTP/1.1 client of `facts mcp --http`, as the transport's specification spells
//! the requests, for the tests (`tests/mcp.rs`, `tests/tenants.rs`, `tests/bounds.rs`) and
//! the benchmarks (`benches/mcp.rs`), which include it with `#[path]`: the server process,
//! one POST per message over a new connection, and the response read off the socket (the
//! status, the headers, a chunked body put back together, and the JSON-RPC messages of a
//! JSON or server-sent-events body).

#![allow(
    dead_code,
    clippy::panic,
    clippy::string_slice,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// A `facts mcp --http` process, killed when dropped (a failing test leaves no server).
pub(crate) struct HttpServer {
    child: Child,
    /// The endpoint's URL, as printed on stderr.
    pub(crate) url: String,
}

impl HttpServer {
    /// Starts `facts mcp --http ADDRESS ARGS…` from the crate's directory and reads the
    /// URL it prints on stderr.
    pub(crate) fn start(address: &str, args: &[&str]) -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(["mcp", "--http", address])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut server = HttpServer {
            child,
            url: String::new(),
        };
        let mut line = String::new();
        while server.url.is_empty() {
            line.clear();
            assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no URL on stderr");
            if let Some(start) = line.find("http://") {
                server.url = line[start..].trim().to_owned();
            }
        }
        // Keep reading, so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One POST of `body` to `url` over a new connection, with extra `headers`.
pub(crate) fn post(url: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    Response::parse(&raw)
}

/// The protocol version the HTTP clients negotiate.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

/// An MCP client over streamable HTTP: a session, one POST per message.
pub(crate) struct HttpClient {
    url: String,
    /// Sent with every request (`Authorization`).
    headers: Vec<(String, String)>,
    /// The session's id (`Mcp-Session-Id`).
    pub(crate) session: String,
    next_id: u64,
}

impl HttpClient {
    /// Initializes a session on `url`.
    pub(crate) fn connect(url: &str) -> HttpClient {
        HttpClient::connect_with(url, &[])
    }

    /// Initializes a session on `url`, sending `headers` with every request.
    pub(crate) fn connect_with(url: &str, headers: &[(String, String)]) -> HttpClient {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "facts-http-test", "version": "0"}}});
        let extra: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let response = post(url, &extra, &init.to_string());
        assert_eq!(response.status, 200, "{}", response.body);
        let session = response.header("mcp-session-id").unwrap().to_owned();
        let messages = response.messages();
        let result = &messages.iter().find(|m| m["id"] == 0).unwrap()["result"];
        assert_eq!(result["serverInfo"]["name"], "facts", "{result}");
        let client = HttpClient {
            url: url.to_owned(),
            headers: headers.to_vec(),
            session,
            next_id: 0,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = client.post(&initialized);
        assert_eq!(response.status, 202, "{}", response.body);
        client
    }

    pub(crate) fn post(&self, message: &Value) -> Response {
        let mut headers = vec![
            ("Mcp-Session-Id", self.session.as_str()),
            ("MCP-Protocol-Version", PROTOCOL_VERSION),
        ];
        headers.extend(
            self.headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        post(&self.url, &headers, &message.to_string())
    }

    /// Sends a request and returns its response message.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let response =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(response.status, 200, "{}", response.body);
        response
            .messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {}", response.body))
    }

    /// Calls a tool and returns its result.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        response["result"].clone()
    }
}

/// An HTTP response: status, headers (names in lowercase) and body.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Response {
    /// The response in `raw`, everything the server sent until it closed.
    pub(crate) fn parse(raw: &[u8]) -> Response {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head: {}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8(raw[..split].to_vec()).unwrap();
        let mut body = raw[split + 4..].to_vec();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (name, value) = l.split_once(':').unwrap();
                (name.trim().to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        if headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v == "chunked")
        {
            body = dechunk(&body);
        }
        Response {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    /// The value of header `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: one JSON document, or the `data` of each
    /// server-sent event.
    pub(crate) fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
        {
            return vec![serde_json::from_str(&self.body).unwrap()];
        }
        self.body
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                let data = data.join("\n");
                (!data.trim().is_empty()).then(|| serde_json::from_str(&data).unwrap())
            })
            .collect()
    }

    /// The last JSON-RPC message of the body.
    pub(crate) fn message(&self) -> Value {
        self.messages()
            .pop()
            .unwrap_or_else(|| panic!("no message: {}", self.body))
    }
}

/// The body of a chunked transfer.
pub(crate) fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = std::str::from_utf8(&raw[..end]).unwrap();
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
}
