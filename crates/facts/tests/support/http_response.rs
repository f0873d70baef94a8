//! HTTP/1.1 responses as the tests of `facts mcp --http` read them off a raw socket
//! (`tests/mcp.rs`, `tests/tenants.rs`, `tests/bounds.rs` include it with `#[path]`): the
//! status, the headers, a chunked body put back together, and the JSON-RPC messages of a
//! JSON or server-sent-events body.

#![allow(dead_code)]

use serde_json::Value;

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
