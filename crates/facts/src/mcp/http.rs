//! `facts mcp --http ADDR`: MCP over rmcp's streamable HTTP server transport, at `/mcp`.
//!
//! Every client gets its own MCP session (`Mcp-Session-Id`), and every session is a clone
//! of one [`FactsServer`], so all clients share one runtime: facts one client ingests reach
//! another's prompts and queries. The server listens on loopback unless `--allow-remote`
//! lets it take another address; it has no authentication of its own. On loopback, rmcp
//! refuses requests whose `Host` is not a loopback name (DNS rebinding); everywhere,
//! requests that carry an `Origin` (a browser page's) are refused.
//!
//! A POST body is at most `--max-request-bytes` long (16 MiB by default). One that says it
//! is longer (`Content-Length`) is refused before it is read; one that turns out longer as
//! it is read (chunked) is refused by rmcp's own check, set to the same limit. Either way
//! the answer is `413 Payload Too Large` with a JSON-RPC error body (`-32600`, "Request too
//! large", the limit in the message), and the connection is closed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use super::FactsServer;
use crate::bounds;

/// The path the MCP endpoint is served at.
const PATH: &str = "/mcp";

/// How long a session may go without a message before the server closes it. Long, since
/// an orchestrator waits for an agent between calls; a client whose session was closed
/// initializes a new one and finds every fact where it was (they are the server's).
const SESSION_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// Parses `--http`'s value: `IP:PORT` (`127.0.0.1:8080`, `[::1]:8080`), `localhost:PORT`,
/// or a bare `PORT` on 127.0.0.1. Port 0 asks the system for a free port.
pub(crate) fn parse_address(text: &str) -> Result<SocketAddr, String> {
    let loopback = |port: &str| {
        port.parse::<u16>()
            .map(|port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
    };
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    let port = text.strip_prefix("localhost:").unwrap_or(text);
    loopback(port).map_err(|_| {
        format!("{text:?} is not an address: give IP:PORT (127.0.0.1:8080), localhost:PORT or PORT")
    })
}

/// Refuses an address that is not loopback unless `allow_remote` says the server may be
/// reached from other machines.
pub(crate) fn check_address(address: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if is_loopback(address) || allow_remote {
        return Ok(());
    }
    Err(format!(
        "--http {address}: not a loopback address; this server has no authentication, so \
         anyone who reaches it can read and change its facts. Pass --allow-remote to serve \
         on it anyway, or use 127.0.0.1"
    ))
}

/// Whether `address` is on loopback (`127.0.0.0/8`, `::1`, or `::ffff:127.x.y.z`).
fn is_loopback(address: SocketAddr) -> bool {
    address.ip().to_canonical().is_loopback()
}

/// Listens on `address`, prints the endpoint's URL on stderr (the port the system chose,
/// for port 0), and serves until the process is stopped, refusing bodies longer than
/// `max_request_bytes`.
pub(super) async fn serve(
    server: FactsServer,
    address: SocketAddr,
    max_request_bytes: usize,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address listened on: {e}"))?;
    let mut config = StreamableHttpServerConfig::default()
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_request_bytes);
    config = if is_loopback(local) {
        // rmcp's loopback names, and the address itself (127.0.0.2 is loopback too).
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(local.ip().to_string());
        config.with_allowed_hosts(hosts)
    } else {
        // Served on purpose (`--allow-remote`) to names this server cannot know.
        config.disable_allowed_hosts()
    };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    let router = axum::Router::new().nest_service(PATH, service).layer(
        axum::middleware::from_fn_with_state(max_request_bytes, limit_body),
    );
    eprintln!("facts mcp: serving MCP over streamable HTTP at http://{local}{PATH}");
    axum::serve(listener, router)
        .await
        .map_err(|e| format!("the HTTP server stopped: {e}"))
}

/// Refuses a body that says it is longer than the limit before reading it, and gives
/// rmcp's refusal of one that turned out longer a JSON-RPC body.
async fn limit_body(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let announced = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if let Some(bytes) = announced.filter(|&bytes| bytes > limit as u64) {
        return too_large(Some(bytes), limit);
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large(None, limit);
    }
    response
}

/// `413 Payload Too Large` with a JSON-RPC error that names the limit (and the body's
/// length, when it said it), closing the connection (the rest of the body is not read).
fn too_large(bytes: Option<u64>, limit: usize) -> Response {
    let body = match bytes {
        Some(bytes) => format!("the body is {bytes} bytes, over"),
        None => "the body is over".to_owned(),
    };
    let message = format!(
        "Request too large: {body} this server's limit of {}, which facts mcp \
         --max-request-bytes sets",
        bounds::describe(limit)
    );
    tracing::warn!("{message}: answered 413");
    let answer = json!({"jsonrpc": "2.0", "id": null,
                        "error": {"code": -32600, "message": message}});
    let mut response = Response::new(Body::from(answer.to_string()));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_address_is_ip_and_port_localhost_and_port_or_a_port() {
        assert_eq!(
            parse_address("127.0.0.1:8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            parse_address("[::1]:0").unwrap(),
            "[::1]:0".parse().unwrap()
        );
        assert_eq!(
            parse_address("localhost:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(parse_address("0").unwrap(), "127.0.0.1:0".parse().unwrap());
        let error = parse_address("example.com:80").unwrap_err();
        assert!(error.contains("IP:PORT"), "{error}");
        assert!(parse_address("localhost:99999").is_err());
    }

    #[test]
    fn only_loopback_is_served_without_allow_remote() {
        for loopback in [
            "127.0.0.1:0",
            "127.0.0.2:80",
            "[::1]:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            assert!(
                check_address(loopback.parse().unwrap(), false).is_ok(),
                "{loopback}"
            );
        }
        for remote in ["0.0.0.0:0", "192.0.2.7:8080", "[::]:0"] {
            let error = check_address(remote.parse().unwrap(), false).unwrap_err();
            assert!(error.contains("--allow-remote"), "{error}");
            assert!(check_address(remote.parse().unwrap(), true).is_ok());
        }
    }
}
