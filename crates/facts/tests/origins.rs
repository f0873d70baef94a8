//! `facts mcp --http` and browsers: a request's `Origin` is let in when its host is
//! `localhost`, `127.0.0.1` or `[::1]` (any port, http or https) or it is one that
//! `--allow-origin` names exactly, and refused with 403 otherwise (DNS rebinding, pages of
//! other sites); a bad `--allow-origin` is a usage error. The real binary, driven with plain
//! HTTP/1.1 requests (`support/http_client.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpServer, PROTOCOL_VERSION, Response, post};

/// The origins `--allow-origin` names in these tests.
const ALLOWED: [&str; 2] = ["https://mcp.example.com", "http://10.0.0.7:8080"];

/// An `initialize` request, as a browser page would POST it.
fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "page", "version": "0"}}})
    .to_string()
}

/// `initialize` POSTed to `server` with `Origin: origin`.
fn with_origin(server: &HttpServer, origin: &str) -> Response {
    post(&server.url, &[("Origin", origin)], &initialize())
}

/// Asserts that `response` is the server's refusal of an origin: 403 with rmcp's text.
fn assert_refused(response: &Response, origin: &str) {
    assert_eq!(response.status, 403, "{origin:?}: {}", response.body);
    assert!(
        response.body.starts_with("Forbidden: ") && response.body.contains("Origin"),
        "{origin:?}: {}",
        response.body
    );
}

/// Asserts that `response` answers `initialize`: the origin was let in.
fn assert_served(response: &Response, origin: &str) {
    assert_eq!(response.status, 200, "{origin:?}: {}", response.body);
    assert_eq!(
        response.message()["result"]["serverInfo"]["name"],
        "facts",
        "{origin:?}"
    );
}

/// The server with `--allow-origin` for each of [`ALLOWED`].
fn start_allowing() -> HttpServer {
    let mut args = Vec::new();
    for origin in ALLOWED {
        args.extend(["--allow-origin", origin]);
    }
    HttpServer::start("127.0.0.1:0", &args)
}

#[test]
fn loopback_origins_on_any_port_are_let_in_and_others_get_403() {
    let server = HttpServer::start("127.0.0.1:0", &[]);
    let port = server
        .url
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .strip_suffix("/mcp")
        .unwrap()
        .to_owned();
    // The MCP Inspector's page, the server's own address, and the other loopback names.
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        "http://localhost:6274".to_owned(),
        "http://localhost".to_owned(),
        "https://localhost:8443".to_owned(),
        "http://127.0.0.1:3000".to_owned(),
        "https://127.0.0.1".to_owned(),
        "http://[::1]:6274".to_owned(),
        "https://[::1]".to_owned(),
        "HTTP://LocalHost:1".to_owned(),
    ] {
        assert_served(&with_origin(&server, &origin), &origin);
    }
    for origin in [
        "http://evil.example",
        "https://evil.example:443",
        format!("http://evil.example:{port}").as_str(),
        "http://localhost.evil.example",
        "http://127.0.0.1.nip.io",
        "http://localhost@evil.example",
        "http://127.0.0.2:3000",
        "http://[::2]:3000",
        "ftp://localhost",
        "null",
        "localhost",
        "not an origin",
    ] {
        assert_refused(&with_origin(&server, origin), origin);
    }
    // A request without Origin is not a browser's, and a foreign Host is still refused.
    assert_eq!(post(&server.url, &[], &initialize()).status, 200);
    let rebound = post(
        &server.url,
        &[("Host", "evil.example"), ("Origin", "http://evil.example")],
        &initialize(),
    );
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    let rebound = post(&server.url, &[("Host", "evil.example")], &initialize());
    assert_eq!(rebound.status, 403, "{}", rebound.body);
}

#[test]
fn allow_origin_lets_in_exactly_the_origins_it_names() {
    let server = start_allowing();
    for origin in [
        "https://mcp.example.com",
        "https://mcp.example.com:443",
        "HTTPS://MCP.example.COM",
        "http://10.0.0.7:8080",
        "http://localhost:6274",
    ] {
        assert_served(&with_origin(&server, origin), origin);
    }
    for origin in [
        "http://mcp.example.com",
        "https://mcp.example.com:8443",
        "https://other.example.com",
        "https://sub.mcp.example.com",
        "http://10.0.0.7",
        "http://10.0.0.7:8081",
        "https://10.0.0.7:8080",
    ] {
        assert_refused(&with_origin(&server, origin), origin);
    }
}

/// `facts mcp ARGS…`'s exit code and stderr, for a command that should stop at once; one
/// that serves instead is killed after ten seconds (exit code `None`).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
        .arg("mcp")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn an_allow_origin_that_is_not_an_origin_is_a_usage_error() {
    for bad in [
        "mcp.example.com",
        "https://mcp.example.com/",
        "https://mcp.example.com/mcp",
        "https://mcp.example.com?x=1",
        "https://user@mcp.example.com",
        "https://*.example.com",
        "*",
        "ftp://mcp.example.com",
        "https://",
        "https://mcp.example.com:99999",
        "https://mcp.example.com:port",
        "https://[::1",
        "null",
    ] {
        let (code, stderr) = run(&["--http", "127.0.0.1:0", "--allow-origin", bad]);
        assert_eq!(code, Some(2), "{bad:?}: {stderr}");
        assert!(stderr.contains("--allow-origin"), "{bad:?}: {stderr}");
        assert!(stderr.contains("scheme://host[:port]"), "{bad:?}: {stderr}");
    }
    // Only HTTP has origins.
    let (code, stderr) = run(&["--allow-origin", "https://mcp.example.com"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--http"), "{stderr}");
}

/// [`ALLOWED`] as (scheme, host, port), the port the scheme's default where none is given.
const ALLOWED_TUPLES: [(&str, &str, u16); 2] = [
    ("https", "mcp.example.com", 443),
    ("http", "10.0.0.7", 8080),
];

/// What an `Origin` may be let in as, by an independent reading of RFC 6454's
/// serialization: `http` or `https`, then a host that is loopback's (any port), or exactly
/// one of [`ALLOWED`].
fn admissible(origin: &str) -> bool {
    let origin = origin.trim().to_ascii_lowercase();
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, port)) => (format!("[{address}]"), port.strip_prefix(':')),
            None => return false,
        },
        None => match host_port.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (host_port.to_owned(), None),
        },
    };
    if ["localhost", "127.0.0.1", "[::1]"].contains(&host.as_str()) {
        return true;
    }
    let port = match port {
        None | Some("") => default_port,
        Some(port) => match port.parse::<u16>() {
            Ok(port) => port,
            Err(_) => return false,
        },
    };
    ALLOWED_TUPLES.contains(&(scheme, host.as_str(), port))
}

/// Origins a browser or an attacker could send: loopback's, lookalikes of it, the allowed
/// ones and lookalikes, with or without a port, a user, a path; and any printable text.
fn origins() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec!["http", "https", "HTTP", "Https", "ws", "file", ""]);
    let host = prop::sample::select(vec![
        "localhost",
        "LOCALHOST",
        "127.0.0.1",
        "[::1]",
        "[::2]",
        "127.0.0.2",
        "localhost.evil.example",
        "evil.example",
        "127.0.0.1.nip.io",
        "mcp.example.com",
        "sub.mcp.example.com",
        "10.0.0.7",
        "",
    ]);
    let user = prop::sample::select(vec!["", "localhost@", "user@", "evil.example@"]);
    let port = prop::sample::select(vec![
        "", ":80", ":443", ":8080", ":6274", ":0", ":65535", ":99999", ":", ":x",
    ]);
    let tail = prop::sample::select(vec!["", "/", "/mcp", "?q", "#f", "@evil.example", " "]);
    let structured = (scheme, user, host, port, tail).prop_map(|(s, u, h, p, t)| {
        let separator = if s.is_empty() { "" } else { "://" };
        format!("{s}{separator}{u}{h}{p}{t}")
    });
    prop_oneof![
        3 => structured,
        1 => "[ -~]{0,40}",
        1 => "[ -~\u{80}-\u{10ffff}]{0,24}",
    ]
    // A header value ends at a line break; the HTTP layer trims spaces around it.
    .prop_filter("a header value", |origin| !origin.contains(['\r', '\n']))
}

#[test]
fn any_origin_is_answered_and_only_loopback_or_allowed_ones_are_let_in() {
    let server = start_allowing();
    let mut runner = TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&origins(), |origin| {
            let response = with_origin(&server, &origin);
            // Let in (200) or refused: a browser page's 403, or the HTTP layer's 400 for a
            // value that is not a header's.
            prop_assert!(
                matches!(response.status, 200 | 400 | 403),
                "{origin:?}: {} {}",
                response.status,
                response.body
            );
            if response.status == 200 {
                prop_assert!(admissible(&origin), "{origin:?} was let in");
            }
            Ok(())
        })
        .unwrap();
    // The well-formed ones are let in exactly when admissible.
    for origin in [
        "http://localhost:1",
        "https://[::1]:2",
        "https://mcp.example.com:443",
        "http://evil.example:80",
        "https://mcp.example.com:444",
    ] {
        assert_eq!(
            with_origin(&server, origin).status == 200,
            admissible(origin),
            "{origin}"
        );
    }
    // And the server still serves after all of it.
    assert_served(&with_origin(&server, "http://localhost:6274"), "localhost");
}
