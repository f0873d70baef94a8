//! `facts mcp --http ADDR`: MCP over rmcp's streamable HTTP server transport, at `/mcp`.
//!
//! Every client gets its own MCP session (`Mcp-Session-Id`), and every session is a clone
//! of one `FactsServer`. Without `--tokens`, all clients share one runtime (facts one
//! client ingests reach another's prompts and queries), nobody is authenticated, and the
//! server listens on loopback only. On loopback, rmcp refuses requests whose `Host` is not
//! a loopback name (DNS rebinding). A request that carries an `Origin` (a browser page's,
//! such as the MCP Inspector's) is let in when the origin's host is `localhost`,
//! `127.0.0.1` or `[::1]` (http or https, any port) or the origin is one that
//! `--allow-origin` names exactly (a reverse proxy's public name, say); any other, or a
//! value that is not an origin, is answered `403 Forbidden` ([`check_origin`], before the
//! tokens are looked at), so a page of another site cannot drive the server from its
//! visitor's browser. A request without `Origin` (not a browser's) is let in.
//!
//! With `--tokens FILE` (`mcp/tenants.rs`, `docs/tenants.md`), every request needs
//! `Authorization: Bearer TOKEN` whose SHA-256 the file lists: without it, or with a token
//! the file does not list, the answer is `401 Unauthorized` with `WWW-Authenticate:
//! Bearer` and a JSON-RPC error body, logged (the peer's address, never the token). The
//! request then carries its `Tenant` to the tool calls, which run in the tenant's space.
//! A session belongs to the token that created it: a request with another token's
//! `Mcp-Session-Id` is answered `404 Not Found`, as a session that does not exist is, so
//! a tenant learns nothing of another's sessions. Each tenant has a request rate (a token
//! bucket) and a number of requests in flight (held until the answer's body is sent); past
//! either, the answer is `429 Too Many Requests` with `Retry-After` and a JSON-RPC error
//! body, and other tenants are not slowed. SIGHUP re-reads the file: a valid one replaces
//! the tenants at once (a removed token's next request gets 401), an invalid one is logged
//! and the old tenants kept. `--allow-remote` (another address than loopback) needs
//! `--tokens`.
//!
//! With `--tls-cert` and `--tls-key` (feature `tls`), the server speaks HTTPS (rustls, ring
//! provider, TLS 1.2 and 1.3); TLS handshakes run beside the accept loop, each within ten
//! seconds, so a client that stalls its handshake holds nobody up. SIGHUP re-reads the
//! certificate and key too: new connections get the renewed certificate, and files that
//! cannot be loaded are logged and the old certificate kept. A build without the feature
//! refuses the two flags with a usage error.
//!
//! With `--metrics`, `GET /metrics` answers the server's metrics in the Prometheus text
//! format (`mcp/metrics.rs`, `docs/observability.md`) under the same rules as `/mcp`: on
//! loopback only to a loopback `Host`, a foreign `Origin` is 403, and with `--tokens` a
//! request without a listed bearer token is 401, one whose tenant lacks the `metrics` right
//! 403, and the tenant's limits apply. Every refusal is counted there too.
//!
//! With `--otlp-endpoint`, SIGTERM and SIGINT stop the server (its tool calls still
//! running get a moment to finish), so the command ends and sends its last traces; without
//! it they end the process at once, as they always did.
//!
//! A POST body is at most `--max-request-bytes` long (16 MiB by default). One that says it
//! is longer (`Content-Length`) is refused before it is read; one that turns out longer as
//! it is read (chunked) is refused by rmcp's own check, set to the same limit. Either way
//! the answer is `413 Payload Too Large` with a JSON-RPC error body (`-32600`, "Request too
//! large", the limit in the message), and the connection is closed.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::HOST;
use axum::http::header::{
    AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
#[cfg(feature = "tls")]
use axum::serve::Listener;
use axum::serve::ListenerExt;
use dispatch_runtime::reexports::Clock;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
#[cfg(feature = "tls")]
use tokio_rustls::TlsAcceptor;
#[cfg(feature = "tls")]
use tokio_rustls::server::TlsStream;

use super::metrics::{Refusal, Shared as Metrics};
use super::tenants::{Right, Sha, Tenant, Tenants};
use crate::bounds;

/// The path the MCP endpoint is served at.
const PATH: &str = "/mcp";

/// The path the metrics are served at, with `--metrics`.
const METRICS_PATH: &str = "/metrics";

/// The header of an MCP session's id.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long a session may go without a message before the server closes it. Long, since
/// an orchestrator waits for an agent between calls; a client whose session was closed
/// initializes a new one and finds every fact where it was (they are the server's).
const SESSION_IDLE: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a TLS handshake may take.
#[cfg(feature = "tls")]
const HANDSHAKE: Duration = Duration::from_secs(10);

/// TLS handshakes finished and not yet taken by the server.
#[cfg(feature = "tls")]
const HANDSHAKES_QUEUED: usize = 64;

/// The JSON-RPC error code of a request refused for its credentials.
const UNAUTHORIZED_CODE: i64 = -32001;
/// The JSON-RPC error code of a request refused for its tenant's limits.
const TOO_MANY_CODE: i64 = -32002;
/// The JSON-RPC error code of a request its tenant has no right to make.
const FORBIDDEN_CODE: i64 = -32003;

/// Where and how `facts mcp --http` listens.
#[derive(Debug)]
pub(crate) struct Listen {
    /// `--http`, checked with [`check_address`].
    pub(crate) address: SocketAddr,
    /// `--tls-cert` and `--tls-key`, loaded: HTTPS.
    pub(crate) tls: Option<Tls>,
    /// `--tokens`: the file, and its tenants as read at start.
    pub(crate) tokens: Option<(PathBuf, Tenants)>,
    /// `--allow-origin`: the browser origins let in besides loopback's.
    pub(crate) origins: Vec<AllowedOrigin>,
    /// The clock of the tenants' rate limits and of their sessions' idle time.
    pub(crate) clock: Arc<dyn Clock>,
    /// `--metrics`: what `/metrics` serves, and where refusals are counted.
    pub(crate) metrics: Option<Metrics>,
    /// Whether SIGTERM and SIGINT stop the server so the command can end normally (with
    /// `--otlp-endpoint`: the traces not sent yet are sent then); otherwise they stop the
    /// process as they always did.
    pub(crate) stop_on_signal: bool,
}

/// The server's TLS configuration (`--tls-cert`, `--tls-key`): the files, and the
/// configuration last read from them, which SIGHUP reads again (a renewed certificate is
/// served to the connections that come after, without a restart).
#[cfg(feature = "tls")]
#[derive(Debug, Clone)]
pub(crate) struct Tls {
    cert: PathBuf,
    key: PathBuf,
    current: Arc<RwLock<Arc<rustls::ServerConfig>>>,
}

/// A build without the `tls` feature has no TLS configuration: [`Tls::load`] refuses.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum Tls {}

#[cfg(not(feature = "tls"))]
impl Tls {
    /// Refuses `--tls-cert` and `--tls-key`: this build has no TLS.
    pub(crate) fn load(cert: &Path, _key: &Path) -> Result<Tls, String> {
        Err(format!(
            "--tls-cert {}: this facts binary was built without the `tls` feature (HTTPS); \
             build it with `--features tls`, or put a reverse proxy that terminates TLS in \
             front of --http 127.0.0.1:PORT",
            cert.display()
        ))
    }
}

#[cfg(feature = "tls")]
impl Tls {
    /// Loads the certificate chain and the private key (PEM files), for HTTP/1.1 over TLS
    /// 1.2 or 1.3 with the ring provider.
    pub(crate) fn load(cert: &Path, key: &Path) -> Result<Tls, String> {
        Ok(Tls {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            current: Arc::new(RwLock::new(Tls::read(cert, key)?)),
        })
    }

    /// Reads the files again: valid, they replace the configuration; otherwise the
    /// error, and the configuration read before stays.
    fn reload(&self) -> Result<(), String> {
        let config = Tls::read(&self.cert, &self.key)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = config;
        Ok(())
    }

    /// An acceptor with the configuration read last.
    fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(
            self.current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }

    /// The configuration in the files `cert` and `key`.
    fn read(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "--tls-cert {}: no certificate in it",
                cert.display()
            ));
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("--tls-cert and --tls-key: {e}"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

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

/// Refuses `--allow-remote` without `--tokens` (`authenticated`), and an address that is
/// not loopback unless `allow_remote` says the server may be reached from other machines.
pub(crate) fn check_address(
    address: SocketAddr,
    allow_remote: bool,
    authenticated: bool,
) -> Result<(), String> {
    if allow_remote && !authenticated {
        return Err(format!(
            "--http {address} --allow-remote needs --tokens FILE: without it this server \
             authenticates nobody, so anyone who reaches it could read and change its facts \
             (docs/tenants.md)"
        ));
    }
    if is_loopback(address) || allow_remote {
        return Ok(());
    }
    Err(format!(
        "--http {address}: not a loopback address. To serve other machines, give --tokens \
         FILE (each request then needs a tenant's bearer token) and --allow-remote, and \
         --tls-cert/--tls-key or a reverse proxy for HTTPS (docs/tenants.md); or use \
         127.0.0.1"
    ))
}

/// The hosts of pages served from this machine: their origins are let in on any port.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A browser origin (RFC 6454): scheme, host and port, lowercase, the port the scheme's
/// default when the serialization gives none. `--allow-origin` values are these, and a
/// request's `Origin` is let in when it is one of them exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedOrigin {
    scheme: String,
    host: String,
    port: u16,
}

impl std::fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// The port `scheme` implies when an origin gives none: 80 for http, 443 for https.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Reads an origin's serialization, `scheme://host[:port]` and nothing else (no path, user,
/// query or wildcard), strictly: scheme and host lowercase, an IPv6 host in brackets in its
/// canonical form. The error says what is wrong.
fn read_origin(text: &str) -> Result<(String, String, Option<u16>), String> {
    let (scheme, rest) = text.split_once("://").ok_or("no scheme")?;
    let scheme = scheme.to_ascii_lowercase();
    let mut scheme_chars = scheme.chars();
    if !scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Err("no scheme".to_owned());
    }
    if let Some(extra) = rest
        .chars()
        .find(|c| matches!(c, '/' | '?' | '#' | '@' | '*'))
    {
        return Err(format!(
            "{extra:?} after the host (an origin has no path, query, user or wildcard)"
        ));
    }
    let (host, port) = match rest.strip_prefix('[') {
        Some(bracketed) => {
            let (address, after) = bracketed
                .split_once(']')
                .ok_or("no ']' after an IPv6 host")?;
            let address = address
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| format!("[{address}] is not an IPv6 address"))?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or("no ':' before the port")?),
            };
            (format!("[{address}]"), port)
        }
        None => {
            let (host, port) = match rest.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            };
            let name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if host.is_empty() || !host.chars().all(name) {
                return Err("no valid host after the scheme".to_owned());
            }
            (host.to_ascii_lowercase(), port)
        }
    };
    let port = match port {
        None => None,
        Some(digits) => Some(
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| digits.parse::<u16>().ok())
                .flatten()
                .ok_or_else(|| format!("{digits:?} is not a port"))?,
        ),
    };
    Ok((scheme, host, port))
}

/// Parses `--allow-origin`'s value: `scheme://host[:port]` with scheme `http` or `https`
/// and nothing after the host or port, as a browser sends it in `Origin`
/// (`https://mcp.example.com`, `http://10.0.0.7:8080`).
pub(crate) fn parse_origin(text: &str) -> Result<AllowedOrigin, String> {
    let refuse = |why: &str| {
        format!(
            "{text:?} is not an origin: {why}; give scheme://host[:port] with scheme http or \
             https, as browsers send it in Origin (https://mcp.example.com, \
             http://10.0.0.7:8080)"
        )
    };
    let (scheme, host, port) = read_origin(text).map_err(|why| refuse(&why))?;
    let default = default_port(&scheme).ok_or_else(|| refuse("the scheme is not http or https"))?;
    Ok(AllowedOrigin {
        scheme,
        host,
        port: port.unwrap_or(default),
    })
}

/// Whether a request whose `Origin` is `value` is let in: an http or https origin whose
/// host is loopback's ([`LOOPBACK_HOSTS`], any port), or exactly one of `allowed`.
/// Anything else, including a value that is not an origin's serialization (`null`, a
/// path, a port past 65535), is not.
pub(crate) fn origin_allowed(value: &str, allowed: &[AllowedOrigin]) -> bool {
    let Ok((scheme, host, port)) = read_origin(value) else {
        return false;
    };
    let Some(default) = default_port(&scheme) else {
        return false;
    };
    if LOOPBACK_HOSTS.contains(&host.as_str()) {
        return true;
    }
    let origin = AllowedOrigin {
        scheme,
        host,
        port: port.unwrap_or(default),
    };
    allowed.contains(&origin)
}

/// Answers `403 Forbidden` to a request whose `Origin` [`origin_allowed`] refuses, in the
/// words of rmcp's own refusals (`Forbidden: Origin header is not allowed`), and logs it;
/// lets the others in.
async fn check_origin(
    State((allowed, metrics)): State<(Arc<Vec<AllowedOrigin>>, Option<Metrics>)>,
    request: Request,
    next: Next,
) -> Response {
    let Some(origin) = request.headers().get(ORIGIN) else {
        return next.run(request).await;
    };
    let text = String::from_utf8_lossy(origin.as_bytes());
    if origin_allowed(&text, &allowed) {
        return next.run(request).await;
    }
    tracing::warn!(
        "facts mcp: refused a request with Origin {:?} (403): not loopback's, nor an \
         --allow-origin",
        crate::bounds::clip(&text, 200)
    );
    if let Some(metrics) = &metrics {
        metrics.refused(Refusal::Origin, None);
    }
    let mut response = Response::new(Body::from("Forbidden: Origin header is not allowed"));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

/// Whether `address` is on loopback (`127.0.0.0/8`, `::1`, or `::ffff:127.x.y.z`).
fn is_loopback(address: SocketAddr) -> bool {
    address.ip().to_canonical().is_loopback()
}

/// Sends each write at once (no Nagle): an answer is written in pieces (headers, then
/// events), and a client that delays its acknowledgements would otherwise wait for the
/// last piece about 40 ms.
fn no_delay(stream: &mut TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("facts mcp: cannot set TCP_NODELAY: {e}");
    }
}

/// A listener of TLS connections: a task accepts TCP connections and runs each one's
/// handshake in a task of its own, and [`Listener::accept`] takes the finished ones.
#[cfg(feature = "tls")]
struct TlsListener {
    handshaken: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

#[cfg(feature = "tls")]
impl TlsListener {
    fn new(listener: TcpListener, tls: Tls, local: SocketAddr) -> TlsListener {
        let (sender, handshaken) = tokio::sync::mpsc::channel(HANDSHAKES_QUEUED);
        tokio::spawn(async move {
            loop {
                let (mut tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, most likely: wait rather than spin.
                        tracing::warn!("facts mcp: cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                no_delay(&mut tcp);
                // Each connection with the configuration read last (SIGHUP renews it).
                let acceptor = tls.acceptor();
                let sender = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => tracing::info!("facts mcp: TLS handshake with {peer}: {e}"),
                        Err(_) => tracing::info!("facts mcp: TLS handshake with {peer} timed out"),
                    }
                });
            }
        });
        TlsListener { handshaken, local }
    }
}

#[cfg(feature = "tls")]
impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.handshaken.recv().await {
            Some(accepted) => accepted,
            // The accepting task holds a sender for as long as the process runs.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// Listens as `listen` says, prints the endpoint's URL on stderr (the port the system
/// chose, for port 0), and serves `server` (the `FactsServer`, cloned for every session)
/// until the process is stopped, refusing bodies longer than `max_request_bytes`.
pub(super) async fn serve<S: ServerHandler + Clone>(
    server: S,
    listen: Listen,
    max_request_bytes: usize,
) -> Result<(), String> {
    let Listen {
        address,
        tls,
        tokens,
        origins: allowed_origins,
        clock,
        metrics,
        stop_on_signal,
    } = listen;
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address listened on: {e}"))?;
    // `Origin` is checked by [`check_origin`], stricter than rmcp's check (which lets in
    // an origin whose port is not a number as one without a port).
    let mut config = StreamableHttpServerConfig::default()
        .disable_allowed_origins()
        .with_max_request_body_bytes(max_request_bytes);
    let mut config_hosts = config.allowed_hosts.clone();
    config_hosts.push(local.ip().to_string());
    config = if is_loopback(local) {
        // rmcp's loopback names, and the address itself (127.0.0.2 is loopback too).
        config.with_allowed_hosts(config_hosts.clone())
    } else {
        // Served on purpose (`--allow-remote`) to names this server cannot know.
        config.disable_allowed_hosts()
    };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(sessions), config);
    let mut router = axum::Router::new().nest_service(PATH, service);
    if let Some(metrics) = &metrics {
        // rmcp checks `/mcp`'s Host; `/metrics` is checked against the same names.
        let hosts = Arc::new(if is_loopback(local) {
            config_hosts
        } else {
            Vec::new()
        });
        let metrics = metrics.clone();
        router = router.route(
            METRICS_PATH,
            axum::routing::get(move |request: Request| {
                scrape(metrics.clone(), hosts.clone(), request)
            }),
        );
    }
    let mut reloads = Reloads {
        tokens: None,
        tls: tls.clone(),
    };
    if let Some((path, tenants)) = tokens {
        let gate = Arc::new(Gate::new(tenants, clock, metrics.clone()));
        reloads.tokens = Some((gate.clone(), path));
        router = router.layer(axum::middleware::from_fn_with_state(gate, authenticate));
    }
    // Outside the tenants' gate: a page of another site learns nothing of the tokens.
    router = router.layer(axum::middleware::from_fn_with_state(
        (Arc::new(allowed_origins), metrics.clone()),
        check_origin,
    ));
    // Before the URL is printed: from then on, SIGHUP re-reads the files rather than
    // stopping the process.
    reload_on_hangup(reloads)?;
    // The body limit first: a body too long is refused before anything else is done.
    let router = router.layer(axum::middleware::from_fn_with_state(
        (max_request_bytes, metrics),
        limit_body,
    ));
    let scheme = if tls.is_some() { "https" } else { "http" };
    let stop = match stop_on_signal {
        true => Some(stop_signal()?),
        false => None,
    };
    eprintln!("facts mcp: serving MCP over streamable HTTP at {scheme}://{local}{PATH}");
    let served = serve_router(listener, router, tls, local);
    let Some(stop) = stop else {
        return served.await;
    };
    let mut served = std::pin::pin!(served);
    let mut stop = std::pin::pin!(stop);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(served) = served.as_mut().poll(cx) {
            return Poll::Ready(served);
        }
        if stop.as_mut().poll(cx).is_ready() {
            eprintln!("facts mcp: stopping on a signal");
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    })
    .await
}

/// A future that is ready when the process gets SIGTERM or SIGINT (Ctrl-C off Unix).
#[cfg(unix)]
fn stop_signal() -> Result<impl Future<Output = ()>, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind| signal(kind).map_err(|e| format!("cannot listen for signals: {e}"));
    let mut terminate = listen(SignalKind::terminate())?;
    let mut interrupt = listen(SignalKind::interrupt())?;
    Ok(std::future::poll_fn(move |cx| {
        let terminated = terminate.poll_recv(cx).is_ready();
        if terminated || interrupt.poll_recv(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }))
}

/// A future that is ready when the process gets SIGTERM or SIGINT (Ctrl-C off Unix).
#[cfg(not(unix))]
fn stop_signal() -> Result<impl Future<Output = ()>, String> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// Serves `router` on `listener` (over TLS with `tls`) until the server fails.
async fn serve_router(
    listener: TcpListener,
    router: axum::Router,
    tls: Option<Tls>,
    local: SocketAddr,
) -> Result<(), String> {
    #[cfg(not(feature = "tls"))]
    let _ = local;
    let stopped = |e: std::io::Error| format!("the HTTP server stopped: {e}");
    match tls {
        None => axum::serve(
            listener.tap_io(no_delay),
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .map_err(stopped),
        #[cfg(not(feature = "tls"))]
        Some(tls) => match tls {},
        // Tapped for nothing: the tap gives the connection its peer's address.
        #[cfg(feature = "tls")]
        Some(tls) => axum::serve(
            TlsListener::new(listener, tls, local).tap_io(|_: &mut TlsStream<TcpStream>| ()),
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .map_err(stopped),
    }
}

/// The tenants, and which token created each session.
struct Gate {
    tenants: RwLock<Arc<Tenants>>,
    /// Each session's token digest, and when a request last named it.
    sessions: Mutex<HashMap<String, (Sha, Duration)>>,
    clock: Arc<dyn Clock>,
    /// The origin of [`Gate::elapsed`], in microseconds since the Unix epoch.
    start: i64,
    /// Where refusals are counted (`--metrics`).
    metrics: Option<Metrics>,
}

impl Gate {
    /// A gate of `tenants`, read at the clock's time zero, as [`Tenants::load`] is given.
    fn new(tenants: Tenants, clock: Arc<dyn Clock>, metrics: Option<Metrics>) -> Gate {
        let start = clock.now().unix_micros();
        Gate {
            tenants: RwLock::new(Arc::new(tenants)),
            sessions: Mutex::new(HashMap::new()),
            clock,
            start,
            metrics,
        }
    }

    /// Counts a refusal, when metrics are kept.
    fn refused(&self, reason: Refusal, tenant: Option<&Tenant>) {
        if let Some(metrics) = &self.metrics {
            metrics.refused(reason, tenant.map(|tenant| tenant.name()));
        }
    }

    /// The time since the gate was made (zero if the clock went back before it).
    fn elapsed(&self) -> Duration {
        let micros = self.clock.now().unix_micros().saturating_sub(self.start);
        Duration::from_micros(u64::try_from(micros).unwrap_or(0))
    }

    fn tenants(&self) -> Arc<Tenants> {
        self.tenants
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether session `id` may be used with the token of `digest`: it is that token's,
    /// or this gate never saw it (rmcp answers 404 to a session it does not have).
    fn session_allows(&self, id: &str, digest: &Sha) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match sessions.get_mut(id) {
            Some((owner, seen)) if owner == digest => {
                *seen = self.elapsed();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Records that `digest`'s token created session `id`, and forgets the sessions idle
    /// for longer than rmcp keeps them.
    fn bind(&self, id: String, digest: Sha) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.elapsed();
        sessions.retain(|_, (_, seen)| now.saturating_sub(*seen) < SESSION_IDLE);
        sessions.insert(id, (digest, now));
    }

    fn forget(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// What SIGHUP reads again: the token file, and the certificate and key.
struct Reloads {
    /// `--tokens`: the tenants' gate and the file.
    tokens: Option<(Arc<Gate>, PathBuf)>,
    /// `--tls-cert` and `--tls-key`.
    tls: Option<Tls>,
}

impl Reloads {
    /// Reads every file again: each valid one replaces what was read from it before; an
    /// invalid one is logged, and what was read before stays.
    fn reload(&self) {
        if let Some((gate, path)) = &self.tokens {
            match Tenants::load(path, gate.elapsed()) {
                Ok(tenants) => {
                    let count = tenants.len();
                    *gate.tenants.write().unwrap_or_else(PoisonError::into_inner) =
                        Arc::new(tenants);
                    tracing::warn!(
                        "facts mcp: SIGHUP: re-read {}, {count} tenants",
                        path.display()
                    );
                }
                Err(e) => {
                    tracing::error!("facts mcp: SIGHUP: {e}; the tenants read before are kept")
                }
            }
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            match tls.reload() {
                Ok(()) => tracing::warn!(
                    "facts mcp: SIGHUP: re-read {} and {}; new connections are served with them",
                    tls.cert.display(),
                    tls.key.display()
                ),
                Err(e) => {
                    tracing::error!("facts mcp: SIGHUP: {e}; the certificate read before is kept")
                }
            }
        }
    }
}

/// Off Unix there is no SIGHUP: the files are read once, at start.
#[cfg(not(unix))]
fn reload_on_hangup(_reloads: Reloads) -> Result<(), String> {
    Ok(())
}

/// Reads the token file and the certificate again on every SIGHUP ([`Reloads::reload`]).
/// Without either, SIGHUP keeps its default: it stops the process.
#[cfg(unix)]
fn reload_on_hangup(reloads: Reloads) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    if reloads.tokens.is_none() && reloads.tls.is_none() {
        return Ok(());
    }
    let mut hangups =
        signal(SignalKind::hangup()).map_err(|e| format!("cannot listen for SIGHUP: {e}"))?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            reloads.reload();
        }
    });
    Ok(())
}

/// Answers `GET /metrics`: the metrics in the Prometheus text format, to a request whose
/// `Host` is one of `hosts` (any, when `hosts` is empty: served on purpose to other
/// machines) and, with tenants, whose tenant has the `metrics` right (the tenants' gate let
/// the request in already).
async fn scrape(metrics: Metrics, hosts: Arc<Vec<String>>, request: Request) -> Response {
    if !hosts.is_empty() && !host_allowed(request.headers(), &hosts) {
        tracing::warn!("facts mcp: refused a scrape of {METRICS_PATH} for a foreign Host (403)");
        let mut response = Response::new(Body::from("Forbidden: Host header is not allowed"));
        *response.status_mut() = StatusCode::FORBIDDEN;
        return response;
    }
    if let Some(tenant) = request.extensions().get::<Arc<Tenant>>()
        && !tenant.may(Right::Metrics)
    {
        tracing::warn!(
            "facts mcp: tenant {:?} scraped {METRICS_PATH} without the metrics right (403)",
            tenant.name()
        );
        metrics.refused(Refusal::NoMetricsRight, Some(tenant.name()));
        return json_error(
            StatusCode::FORBIDDEN,
            FORBIDDEN_CODE,
            format!(
                "Forbidden: tenant {:?} may not read {METRICS_PATH}: its token lacks the \
                 \"metrics\" right",
                tenant.name()
            ),
        );
    }
    let (text, content_type) = tokio::task::spawn_blocking(move || metrics.render())
        .await
        .unwrap_or_else(|e| (format!("# the metrics could not be read: {e}\n"), ""));
    let mut response = Response::new(Body::from(text));
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

/// Whether a request's `Host` (its name, without the port) is one of `hosts`.
fn host_allowed(headers: &HeaderMap, hosts: &[String]) -> bool {
    let Some(host) = headers.get(HOST).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    let bare = |text: &str| {
        text.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()
    };
    hosts.iter().any(|allowed| bare(allowed) == bare(name))
}

/// The bearer token of a request's `Authorization` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Lets a request in only with a listed token, within its tenant's limits and in its own
/// sessions, and hands the tenant to the tool calls (in the request's extensions).
async fn authenticate(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "an unknown peer".to_owned(), |info| info.0.to_string());
    let tenants = gate.tenants();
    let found = bearer(request.headers()).map(|token| tenants.find(token));
    let (tenant, digest) = match found {
        None => {
            tracing::warn!("facts mcp: refused a request from {peer}: no bearer token (401)");
            gate.refused(Refusal::NoToken, None);
            return unauthorized("this server needs Authorization: Bearer TOKEN");
        }
        Some(None) => {
            tracing::warn!("facts mcp: refused a request from {peer}: unknown token (401)");
            gate.refused(Refusal::UnknownToken, None);
            return unauthorized("the bearer token is not one this server knows");
        }
        Some(Some((tenant, digest))) => (tenant.clone(), digest),
    };
    drop(tenants);
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !gate.session_allows(id, &digest)
    {
        tracing::warn!(
            "facts mcp: refused a request of tenant {:?} from {peer}: its session was \
             created with another token (404)",
            tenant.name()
        );
        gate.refused(Refusal::ForeignSession, Some(&tenant));
        return json_error(
            StatusCode::NOT_FOUND,
            -32600,
            "Session not found".to_owned(),
        );
    }
    if let Err(wait) = tenant.admit(gate.elapsed()) {
        tracing::warn!(
            "facts mcp: tenant {:?} from {peer} is over its request rate (429)",
            tenant.name()
        );
        gate.refused(Refusal::Rate, Some(&tenant));
        return too_many(
            wait,
            format!("tenant {:?} is over its request rate", tenant.name()),
        );
    }
    // A GET is the session's stream of server messages, open for as long as the session:
    // it is not counted among the requests in flight.
    let permit = if request.method() == Method::GET {
        None
    } else {
        match tenant.enter() {
            Some(permit) => Some(permit),
            None => {
                tracing::warn!(
                    "facts mcp: tenant {:?} from {peer} has {} requests in flight (429)",
                    tenant.name(),
                    tenant.max_concurrent()
                );
                gate.refused(Refusal::InFlight, Some(&tenant));
                return too_many(
                    Duration::from_secs(1),
                    format!(
                        "tenant {:?} has {} requests in flight, its limit",
                        tenant.name(),
                        tenant.max_concurrent()
                    ),
                );
            }
        }
    };
    let deleting = request.method() == Method::DELETE;
    request.extensions_mut().insert(tenant);
    let response = next.run(request).await;
    match (&session, deleting) {
        (Some(id), true) if response.status().is_success() => gate.forget(id),
        (None, _) => {
            if let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
            {
                gate.bind(id.to_owned(), digest);
            }
        }
        _ => {}
    }
    match permit {
        // Held until the answer (a stream of events) has been sent or dropped.
        Some(permit) => response.map(|body| {
            Body::new(Held {
                body,
                _permit: permit,
            })
        }),
        None => response,
    }
}

/// A response body that holds a place among its tenant's requests in flight until it is
/// sent or dropped.
struct Held {
    body: Body,
    _permit: OwnedSemaphorePermit,
}

impl http_body::Body for Held {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// `401 Unauthorized` with `WWW-Authenticate: Bearer` and a JSON-RPC error body.
fn unauthorized(message: &str) -> Response {
    let mut response = json_error(
        StatusCode::UNAUTHORIZED,
        UNAUTHORIZED_CODE,
        format!("Unauthorized: {message}"),
    );
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"facts\""),
    );
    response
}

/// `429 Too Many Requests` with `Retry-After` (whole seconds, at least one) and a JSON-RPC
/// error body.
fn too_many(wait: Duration, message: String) -> Response {
    let seconds = wait
        .as_secs()
        .saturating_add(u64::from(wait.subsec_nanos() > 0))
        .max(1);
    let mut response = json_error(
        StatusCode::TOO_MANY_REQUESTS,
        TOO_MANY_CODE,
        format!("Too many requests: {message}; retry after {seconds} s"),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// A response of `status` whose body is a JSON-RPC error (id `null`).
fn json_error(status: StatusCode, code: i64, message: String) -> Response {
    let answer = json!({"jsonrpc": "2.0", "id": null,
                        "error": {"code": code, "message": message}});
    let mut response = Response::new(Body::from(answer.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Refuses a body that says it is longer than the limit before reading it, and gives
/// rmcp's refusal of one that turned out longer a JSON-RPC body.
async fn limit_body(
    State((limit, metrics)): State<(usize, Option<Metrics>)>,
    request: Request,
    next: Next,
) -> Response {
    let refused = || {
        if let Some(metrics) = &metrics {
            metrics.refused(Refusal::TooLarge, None);
        }
    };
    let announced = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if let Some(bytes) = announced.filter(|&bytes| bytes > limit as u64) {
        refused();
        return too_large(Some(bytes), limit);
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        refused();
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
    fn allow_origin_takes_an_http_or_https_origin_and_nothing_else() {
        let origin = |text: &str| parse_origin(text).unwrap().to_string();
        assert_eq!(
            origin("https://mcp.example.com"),
            "https://mcp.example.com:443"
        );
        assert_eq!(
            origin("HTTP://MCP.Example.com"),
            "http://mcp.example.com:80"
        );
        assert_eq!(origin("http://10.0.0.7:8080"), "http://10.0.0.7:8080");
        assert_eq!(origin("https://[0:0::2]:8443"), "https://[::2]:8443");
        for (bad, why) in [
            ("mcp.example.com", "no scheme"),
            ("://mcp.example.com", "no scheme"),
            ("ftp://mcp.example.com", "not http or https"),
            ("https://mcp.example.com/", "'/' after the host"),
            ("https://mcp.example.com/mcp", "'/' after the host"),
            ("https://user@mcp.example.com", "'@' after the host"),
            ("https://*.example.com", "'*' after the host"),
            ("https://", "no valid host"),
            ("https://:443", "no valid host"),
            ("https://mcp example.com", "no valid host"),
            ("https://mcp.example.com:", "is not a port"),
            ("https://mcp.example.com:99999", "is not a port"),
            ("https://mcp.example.com:+443", "is not a port"),
            ("https://[::1", "no ']'"),
            ("https://[::g]", "not an IPv6 address"),
            ("https://[::1]x", "no ':' before the port"),
            ("null", "no scheme"),
        ] {
            let error = parse_origin(bad).unwrap_err();
            assert!(error.contains(why), "{bad:?}: {error}");
            assert!(error.contains("scheme://host[:port]"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn loopback_origins_on_any_port_and_exactly_the_allowed_ones_are_let_in() {
        let allowed = [parse_origin("https://mcp.example.com").unwrap()];
        for origin in [
            "http://localhost",
            "http://localhost:6274",
            "https://LOCALHOST:1",
            "http://127.0.0.1:65535",
            "https://[::1]:8443",
            "http://[0:0:0:0:0:0:0:1]",
            "https://mcp.example.com",
            "https://mcp.example.com:443",
        ] {
            assert!(origin_allowed(origin, &allowed), "{origin}");
        }
        for origin in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.2",
            "ws://localhost",
            "http://localhost/",
            "http://localhost:99999",
            "http://localhost@evil.example",
            "http://evil.example#@localhost",
            "https://mcp.example.com:8443",
            "http://mcp.example.com",
            "https://mcp.example.com:99999",
            "null",
            "",
        ] {
            assert!(!origin_allowed(origin, &allowed), "{origin}");
        }
    }

    /// An independent reading of what may be let in: after `http://` or `https://` (any
    /// case), a loopback host and at most a port; or exactly the allowed origin.
    fn admissible(origin: &str) -> bool {
        let lower = origin.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"));
        let Some(rest) = rest else {
            return false;
        };
        let port_only = |tail: &str| {
            tail.is_empty()
                || tail
                    .strip_prefix(':')
                    .is_some_and(|port| port.parse::<u16>().is_ok())
        };
        let loopback = ["localhost", "127.0.0.1", "[::1]", "[0:0:0:0:0:0:0:1]"]
            .iter()
            .any(|host| rest.strip_prefix(host).is_some_and(port_only));
        loopback
            || ["https://mcp.example.com", "https://mcp.example.com:443"].contains(&lower.as_str())
    }

    proptest::proptest! {
        #[test]
        fn any_origin_is_judged_without_panicking_and_only_admissible_ones_pass(
            origin in proptest::prop_oneof![
                "\\PC{0,40}",
                "(?i)(https?|ws|)(://)?(localhost|127\\.0\\.0\\.1|\\[::1\\]|mcp\\.example\\.com|evil\\.example)(:[0-9]{0,6})?(/|@evil|\\.evil)?",
            ]
        ) {
            let allowed = [parse_origin("https://mcp.example.com").unwrap()];
            let _ = parse_origin(&origin);
            if origin_allowed(&origin, &allowed) {
                proptest::prop_assert!(admissible(&origin), "{origin:?} was let in");
            }
        }

        #[test]
        fn every_loopback_origin_is_let_in(
            scheme in proptest::sample::select(vec!["http", "https"]),
            host in proptest::sample::select(vec!["localhost", "127.0.0.1", "[::1]"]),
            port in proptest::option::of(proptest::num::u16::ANY),
            case in proptest::num::u64::ANY,
        ) {
            let port = port.map(|port| format!(":{port}")).unwrap_or_default();
            // Any mix of ASCII cases.
            let origin: String = format!("{scheme}://{host}{port}")
                .chars()
                .enumerate()
                .map(|(i, c)| if case >> (i % 64) & 1 == 1 { c.to_ascii_uppercase() } else { c })
                .collect();
            proptest::prop_assert!(origin_allowed(&origin, &[]), "{origin:?}");
        }
    }

    #[test]
    fn only_loopback_is_served_without_allow_remote_and_allow_remote_needs_tokens() {
        for loopback in [
            "127.0.0.1:0",
            "127.0.0.2:80",
            "[::1]:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            assert!(
                check_address(loopback.parse().unwrap(), false, false).is_ok(),
                "{loopback}"
            );
        }
        for remote in ["0.0.0.0:0", "192.0.2.7:8080", "[::]:0"] {
            let error = check_address(remote.parse().unwrap(), false, true).unwrap_err();
            assert!(error.contains("--allow-remote"), "{error}");
            assert!(error.contains("--tokens"), "{error}");
            assert!(check_address(remote.parse().unwrap(), true, true).is_ok());
            let error = check_address(remote.parse().unwrap(), true, false).unwrap_err();
            assert!(error.contains("needs --tokens"), "{error}");
        }
    }
}
