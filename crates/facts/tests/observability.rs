//! `facts mcp --http --metrics` and `--otlp-endpoint`: the real binary's `/metrics` read
//! by a Prometheus text parser that is not ours (`prometheus-parse`) after tool calls that
//! succeed and fail, under the token rules, on SQLite and (with `FACTMEM_PG_URL`, else
//! skipped with a note) on PostgreSQL's pool; and its traces received by an OTLP/HTTP
//! collector of the test's own, decoded with the OpenTelemetry protocol's own types.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use prometheus_parse::{Sample, Scrape, Value as Metric};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpClient, HttpServer, Response};

/// The hex SHA-256 of a token.
fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn token(name: &str) -> String {
    format!("SECRET-TOKEN-{name}")
}

/// Writes a token file in `dir`: each tenant with its rights.
fn write_tokens(dir: &Path, tenants: &[(&str, &[&str])]) -> PathBuf {
    let entries: Vec<Value> = tenants
        .iter()
        .map(|(name, rights)| {
            json!({"tenant": name, "sha256": digest(&token(name)), "scope": name,
                   "rights": rights})
        })
        .collect();
    let path = dir.join("tokens.json");
    std::fs::write(&path, json!({"tenants": entries}).to_string()).unwrap();
    path
}

/// `GET path` on the server of `url` (its `/mcp` URL), with `headers`.
fn get(url: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    let rest = url.strip_prefix("http://").unwrap();
    let authority = &rest[..rest.find('/').unwrap()];
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
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
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    Response::parse(&raw)
}

/// The scrape of a `/metrics` answer, parsed.
fn parse(response: &Response) -> Scrape {
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")),
        "{:?}",
        response.headers
    );
    Scrape::parse(response.body.lines().map(|line| Ok(line.to_owned()))).unwrap()
}

/// The samples of `metric` whose labels include every one of `labels`.
fn samples<'a>(scrape: &'a Scrape, metric: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    scrape
        .samples
        .iter()
        .filter(|sample| sample.metric == metric)
        .filter(|sample| {
            labels
                .iter()
                .all(|(name, value)| sample.labels.get(name) == Some(*value))
        })
        .collect()
}

/// The value of the one counter or gauge `metric` with `labels`.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found = samples(scrape, metric, labels);
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match found[0].value {
        Metric::Counter(value) | Metric::Gauge(value) | Metric::Untyped(value) => value,
        ref other => panic!("{metric}: {other:?}"),
    }
}

/// The error code of a failed tool call.
fn error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The text the tests remember: it must never appear in metrics or spans.
const MEMORY_TEXT: &str = "Alice keeps the spare key under the blue flowerpot";

#[test]
fn metrics_count_tool_calls_by_tool_outcome_and_tenant_and_need_the_metrics_right() {
    let dir = TempDir::new().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[
            ("alice", &["read", "write", "runtime"]),
            ("bob", &["read"]),
            ("prometheus", &["metrics"]),
        ],
    );
    let db = dir.path().join("memory.db");
    let server = HttpServer::start(
        "127.0.0.1:0",
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--metrics",
        ],
    );
    let bearer = |name: &str| {
        vec![(
            "Authorization".to_owned(),
            format!("Bearer {}", token(name)),
        )]
    };
    let mut alice = HttpClient::connect_with(&server.url, &bearer("alice"));
    let mut bob = HttpClient::connect_with(&server.url, &bearer("bob"));
    let fact = json!({"subject": "alice", "relation": "keeps_key", "object": "flowerpot",
                      "statement": MEMORY_TEXT});
    for _ in 0..2 {
        let added = alice.call("memory_add", fact.clone());
        assert_eq!(added["isError"], false, "{added}");
    }
    // A search loads the scope's in-process index: the cache holds bytes.
    let found = alice.call("memory_search", json!({"query": "where is the spare key"}));
    assert_eq!(found["isError"], false, "{found}");
    let missing = alice.call("memory_get", json!({"id": "0000000000000000"}));
    let missing_code = error_code(&missing);
    let unknown = alice.call("no_such_tool", json!({}));
    let unknown_code = error_code(&unknown);
    let forbidden = bob.call("memory_add", fact.clone());
    let forbidden_code = error_code(&forbidden);

    // Without a token: 401, as on /mcp, with a JSON-RPC error body.
    let refused = get(&server.url, "/metrics", &[]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer")
    );
    let body: Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(body["error"]["code"], -32001, "{body}");
    let wrong = get(&server.url, "/metrics", &[("Authorization", "Bearer nope")]);
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    // A tenant without the `metrics` right: 403.
    let alice_bearer = format!("Bearer {}", token("alice"));
    let denied = get(&server.url, "/metrics", &[("Authorization", &alice_bearer)]);
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert!(denied.body.contains("metrics"), "{}", denied.body);

    let scraper = format!("Bearer {}", token("prometheus"));
    let response = get(&server.url, "/metrics", &[("Authorization", &scraper)]);
    let scrape = parse(&response);
    let calls = "factmem_tool_calls_total";
    let ok = [
        ("tool", "memory_add"),
        ("outcome", "ok"),
        ("tenant", "alice"),
    ];
    assert_eq!(value(&scrape, calls, &ok), 2.0);
    let labels = [
        ("tool", "memory_get"),
        ("outcome", missing_code.as_str()),
        ("tenant", "alice"),
    ];
    assert_eq!(value(&scrape, calls, &labels), 1.0);
    // An unknown tool's name is the caller's text: it is counted as `unknown`.
    let labels = [("tool", "unknown"), ("outcome", unknown_code.as_str())];
    assert_eq!(value(&scrape, calls, &labels), 1.0);
    assert!(samples(&scrape, calls, &[("tool", "no_such_tool")]).is_empty());
    let labels = [
        ("tool", "memory_add"),
        ("outcome", forbidden_code.as_str()),
        ("tenant", "bob"),
    ];
    assert_eq!(value(&scrape, calls, &labels), 1.0);

    // One latency histogram per tool: memory_add answered three times.
    let latency = samples(
        &scrape,
        "factmem_tool_call_duration_seconds",
        &[("tool", "memory_add")],
    );
    assert_eq!(latency.len(), 1, "{latency:?}");
    let Metric::Histogram(buckets) = &latency[0].value else {
        panic!("{:?}", latency[0]);
    };
    let infinite = buckets.iter().find(|b| b.less_than.is_infinite()).unwrap();
    assert_eq!(infinite.count, 3.0);
    assert!(buckets.windows(2).all(|w| w[0].count <= w[1].count));
    let count = value(
        &scrape,
        "factmem_tool_call_duration_seconds_count",
        &[("tool", "memory_add")],
    );
    assert_eq!(count, 3.0);

    // The refusals: two scrapes without a listed token, one without the right.
    let refusals = "factmem_http_refusals_total";
    assert_eq!(value(&scrape, refusals, &[("reason", "no_token")]), 1.0);
    assert_eq!(
        value(&scrape, refusals, &[("reason", "unknown_token")]),
        1.0
    );
    let labels = [("reason", "no_metrics_right"), ("tenant", "alice")];
    assert_eq!(value(&scrape, refusals, &labels), 1.0);

    // The gauges: the caches within their budget, the runs, the database's connections.
    let limit = value(&scrape, "factmem_cache_limit_bytes", &[]);
    assert_eq!(limit, 512.0 * 1024.0 * 1024.0);
    assert!(value(&scrape, "factmem_cache_bytes", &[]) > 0.0);
    assert!(value(&scrape, "factmem_cache_loaded", &[]) >= 1.0);
    assert_eq!(value(&scrape, "factmem_cache_evictions_total", &[]), 0.0);
    assert_eq!(value(&scrape, "factmem_runs_held", &[]), 0.0);
    assert!(value(&scrape, "factmem_db_connections", &[("state", "idle")]) >= 1.0);
    assert!(value(&scrape, "factmem_db_connections_opened_total", &[]) >= 1.0);
    // Every metric is ours, documented, and named by the conventions.
    for sample in &scrape.samples {
        assert!(sample.metric.starts_with("factmem_"), "{}", sample.metric);
    }
    for (name, help) in &scrape.docs {
        assert!(!help.is_empty(), "{name}");
    }
    // Never a token, a digest or a memory's text.
    for secret in [
        token("alice"),
        digest(&token("alice")),
        MEMORY_TEXT.to_owned(),
    ] {
        assert!(!response.body.contains(&secret), "{secret}");
    }
}

#[test]
fn metrics_without_tokens_have_no_tenant_label_and_only_loopback_hosts_may_scrape() {
    let server = HttpServer::start("127.0.0.1:0", &["--metrics"]);
    let mut client = HttpClient::connect(&server.url);
    let answer = client.call("get_telemetry", json!({}));
    let scrape = parse(&get(&server.url, "/metrics", &[]));
    let outcome = match answer["isError"] == true {
        true => error_code(&answer),
        false => "ok".to_owned(),
    };
    let labels = [("tool", "get_telemetry"), ("outcome", outcome.as_str())];
    assert_eq!(value(&scrape, "factmem_tool_calls_total", &labels), 1.0);
    assert!(
        scrape
            .samples
            .iter()
            .all(|sample| sample.labels.get("tenant").is_none())
    );
    // No database: no cache or connection gauges.
    assert!(samples(&scrape, "factmem_cache_bytes", &[]).is_empty());
    assert_eq!(value(&scrape, "factmem_runs_held", &[]), 0.0);
    // DNS rebinding: a page that renamed 127.0.0.1 gets nothing.
    let rebound = get(&server.url, "/metrics", &[("Host", "evil.example")]);
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    // A foreign page's browser request: 403, counted.
    let cross = get(
        &server.url,
        "/metrics",
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(cross.status, 403, "{}", cross.body);
    let scrape = parse(&get(&server.url, "/metrics", &[]));
    let refusals = "factmem_http_refusals_total";
    assert_eq!(value(&scrape, refusals, &[("reason", "origin")]), 1.0);
}

#[test]
fn without_metrics_there_is_no_metrics_route_and_metrics_needs_http() {
    let server = HttpServer::start("127.0.0.1:0", &[]);
    assert_eq!(get(&server.url, "/metrics", &[]).status, 404);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--metrics"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--http"), "{stderr}");
}

/// The traces (feature `otlp`): a collector of the test's own receives them.
#[cfg(feature = "otlp")]
mod traces {
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::process::Child;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::Span;
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
    use prost::Message as _;

    /// An OTLP/HTTP collector on a loopback port: every `POST /v1/traces` body decoded as the
    /// protocol's `ExportTraceServiceRequest`, answered 200.
    struct Collector {
        url: String,
        requests: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
    }

    impl Collector {
        fn start() -> Collector {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let requests = Arc::new(Mutex::new(Vec::new()));
            let received = requests.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let received = received.clone();
                    std::thread::spawn(move || serve_exports(stream, &received));
                }
            });
            Collector { url, requests }
        }

        /// Every span received so far.
        fn spans(&self) -> Vec<Span> {
            self.requests
                .lock()
                .unwrap()
                .iter()
                .flat_map(|request| &request.resource_spans)
                .flat_map(|resource| &resource.scope_spans)
                .flat_map(|scope| scope.spans.clone())
                .collect()
        }
    }

    /// Reads the requests of one connection (kept alive) until the client closes it.
    fn serve_exports(stream: TcpStream, received: &Mutex<Vec<ExportTraceServiceRequest>>) {
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        loop {
            let mut start = String::new();
            if reader.read_line(&mut start).unwrap_or(0) == 0 {
                return;
            }
            let mut length = 0;
            let mut content_type = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap(),
                    "content-type" => content_type = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            assert!(start.starts_with("POST /v1/traces "), "{start}");
            assert_eq!(content_type, "application/x-protobuf");
            let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            received.lock().unwrap().push(request);
            writer
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\
                      Content-Length: 0\r\n\r\n",
                )
                .unwrap();
        }
    }

    /// A span's attribute `key` as text.
    fn attribute(span: &Span, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .map(text)
    }

    /// Any attribute value as text.
    fn text(value: &AnyValue) -> String {
        match &value.value {
            Some(any_value::Value::StringValue(text)) => text.clone(),
            Some(any_value::Value::IntValue(n)) => n.to_string(),
            Some(any_value::Value::BoolValue(b)) => b.to_string(),
            Some(any_value::Value::DoubleValue(x)) => x.to_string(),
            other => format!("{other:?}"),
        }
    }

    /// A `facts mcp --http` process with environment `env`, killed when dropped.
    struct Traced {
        child: Child,
        url: String,
    }

    impl Traced {
        fn start(args: &[&str], env: &[(&str, &str)]) -> Traced {
            let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
                .args(["mcp", "--http", "127.0.0.1:0"])
                .args(args)
                .envs(env.iter().copied())
                .env_remove("RUST_LOG")
                .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
                .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .current_dir(env!("CARGO_MANIFEST_DIR"))
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
                if let Some(start) = line.find("http://") {
                    url = line[start..].trim().to_owned();
                }
            }
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            Traced { child, url }
        }
    }

    impl Drop for Traced {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn sigterm_stops_the_server_and_sends_the_traces_not_sent_yet() {
        let collector = Collector::start();
        // Batches every ten minutes: only the end of the command sends this one.
        let mut server = Traced::start(
            &["--otlp-endpoint", &collector.url],
            &[("OTEL_BSP_SCHEDULE_DELAY", "600000")],
        );
        let mut client = HttpClient::connect(&server.url);
        let answer = client.call("get_telemetry", json!({}));
        assert!(answer.get("isError").is_some(), "{answer}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(collector.spans().is_empty());
        let status = Command::new("kill")
            .args(["-TERM", &server.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let started = Instant::now();
        let exited = loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "still running after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(exited.success(), "{exited:?}");
        let spans = collector.spans();
        let calls: Vec<&Span> = spans.iter().filter(|s| s.name == "tool_call").collect();
        assert_eq!(calls.len(), 1, "{spans:#?}");
        assert_eq!(
            attribute(calls[0], "tool").as_deref(),
            Some("get_telemetry")
        );
    }

    #[test]
    fn traces_have_a_span_per_tool_call_with_store_retrieval_and_extraction_children() {
        let collector = Collector::start();
        let dir = TempDir::new().unwrap();
        let db = dir.path().join("memory.db");
        let reply = dir.path().join("reply.json");
        let extracted = "The user waters the ferns on Sundays";
        std::fs::write(
            &reply,
            json!({"title": "Plants", "summary": "Watering.", "facts": [
                {"subject": "user", "predicate": "waters_ferns_on", "object": "sunday",
                 "statement": extracted, "category": "preference", "confidence": 0.9}]})
            .to_string(),
        )
        .unwrap();
        let tokens = write_tokens(dir.path(), &[("alice", &["read", "write", "runtime"])]);
        let server = Traced::start(
            &[
                "--tokens",
                tokens.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
                "--allow-llm-cmd",
                "--otlp-endpoint",
                &collector.url,
            ],
            &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
        );
        let bearer = [(
            "Authorization".to_owned(),
            format!("Bearer {}", token("alice")),
        )];
        let mut client = HttpClient::connect_with(&server.url, &bearer);
        let query = "where does alice hide the spare key";
        let said = "Please remember that I water the ferns every Sunday";
        let added = client.call(
            "memory_add",
            json!({"subject": "alice", "relation": "keeps_key", "object": "flowerpot",
                   "statement": MEMORY_TEXT}),
        );
        assert_eq!(added["isError"], false, "{added}");
        let found = client.call("memory_search", json!({"query": query}));
        assert_eq!(found["isError"], false, "{found}");
        let transcript = json!({"role": "user", "content": said}).to_string();
        let llm = format!("cat >/dev/null; cat '{}'", reply.display());
        let archived = client.call(
            "memory_archive",
            json!({"transcript": transcript, "llm_cmd": llm}),
        );
        assert_eq!(archived["isError"], false, "{archived}");
        let missing = client.call("memory_get", json!({"id": "0000000000000000"}));
        let missing_code = error_code(&missing);

        // The batch processor sends every 100 ms here.
        let started = Instant::now();
        let calls = |spans: &[Span]| spans.iter().filter(|s| s.name == "tool_call").count();
        let mut spans = collector.spans();
        while calls(&spans) < 4 || spans.iter().filter(|s| s.name == "store").count() < 3 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "spans never arrived: {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
            spans = collector.spans();
        }
        let requests = collector.requests.lock().unwrap().clone();
        for resource in requests.iter().flat_map(|r| &r.resource_spans) {
            let name = resource
                .resource
                .as_ref()
                .unwrap()
                .attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .map(|kv| text(kv.value.as_ref().unwrap()));
            assert_eq!(name.as_deref(), Some("facts"));
        }
        let call = |tool: &str| {
            let found: Vec<&Span> = spans
                .iter()
                .filter(|s| s.name == "tool_call" && attribute(s, "tool").as_deref() == Some(tool))
                .collect();
            assert_eq!(found.len(), 1, "{tool}: {spans:#?}");
            found[0]
        };
        let children = |parent: &Span| -> Vec<String> {
            spans
                .iter()
                .filter(|s| s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
                .map(|s| s.name.clone())
                .collect()
        };
        // Every tool call is a root span of its own trace.
        for tool in [
            "memory_add",
            "memory_search",
            "memory_archive",
            "memory_get",
        ] {
            let span = call(tool);
            assert!(span.parent_span_id.is_empty(), "{tool}: {span:?}");
            assert_eq!(attribute(span, "tenant").as_deref(), Some("alice"));
            assert_eq!(span.trace_id.len(), 16);
        }
        let add = call("memory_add");
        assert_eq!(attribute(add, "outcome").as_deref(), Some("ok"));
        assert_eq!(children(add), ["store"]);
        let store = spans
            .iter()
            .find(|s| s.parent_span_id == add.span_id)
            .unwrap();
        assert_eq!(attribute(store, "operation").as_deref(), Some("add"));
        assert_eq!(attribute(store, "facts").as_deref(), Some("1"));
        let search = call("memory_search");
        assert_eq!(children(search), ["retrieval"]);
        let retrieval = spans
            .iter()
            .find(|s| s.parent_span_id == search.span_id)
            .unwrap();
        assert_eq!(attribute(retrieval, "found").as_deref(), Some("1"));
        let archive = call("memory_archive");
        let mut archive_children = children(archive);
        archive_children.sort();
        assert_eq!(
            archive_children,
            ["extraction", "store", "store"],
            "{spans:#?}"
        );
        let extraction = spans
            .iter()
            .find(|s| s.parent_span_id == archive.span_id && s.name == "extraction")
            .unwrap();
        assert_eq!(attribute(extraction, "facts").as_deref(), Some("1"));
        // A child ends within its parent.
        for child in spans.iter().filter(|s| !s.parent_span_id.is_empty()) {
            let parent = spans
                .iter()
                .find(|s| s.span_id == child.parent_span_id)
                .unwrap();
            assert!(parent.start_time_unix_nano <= child.start_time_unix_nano);
            assert!(child.end_time_unix_nano <= parent.end_time_unix_nano);
        }
        let failed = call("memory_get");
        assert_eq!(attribute(failed, "outcome"), Some(missing_code));
        assert_eq!(
            failed.status.as_ref().unwrap().code,
            StatusCode::Error as i32
        );
        // No span and no attribute holds what was remembered, asked or said, or a token.
        for span in &spans {
            for kv in &span.attributes {
                let value = text(kv.value.as_ref().unwrap());
                for secret in [
                    MEMORY_TEXT,
                    query,
                    said,
                    extracted,
                    "flowerpot",
                    "spare key",
                    &token("alice"),
                    &digest(&token("alice")),
                ] {
                    assert!(!value.contains(secret), "{}: {kv:?}", span.name);
                }
            }
            assert!(span.events.is_empty(), "{span:?}");
        }
    }
}

#[test]
fn an_otlp_endpoint_that_is_not_an_http_url_is_a_usage_error() {
    for endpoint in ["https://collector:4318", "collector:4318"] {
        let output = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(["mcp", "--otlp-endpoint", endpoint])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{endpoint}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--otlp-endpoint"), "{stderr}");
    }
}

#[test]
fn a_store_that_fails_is_counted_by_the_stores_code() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let server = HttpServer::start("127.0.0.1:0", &["--db", db.to_str().unwrap(), "--metrics"]);
    let mut client = HttpClient::connect(&server.url);
    let added = client.call(
        "memory_add",
        json!({"subject": "user", "relation": "lives_in", "object": "Berlin"}),
    );
    assert_eq!(added["isError"], false, "{added}");
    // Another connection takes the tables away: the reads fail with the store's code.
    let other = rusqlite::Connection::open(&db).unwrap();
    for table in ["facts", "scopes"] {
        other
            .execute_batch(&format!("ALTER TABLE {table} RENAME TO gone_{table}"))
            .unwrap();
    }
    let mut codes = Vec::new();
    for (tool, arguments) in [
        ("memory_list", json!({})),
        ("memory_history", json!({"subject": "user"})),
    ] {
        codes.push(error_code(&client.call(tool, arguments)));
    }
    assert_eq!(codes[0], codes[1]);
    let scrape = parse(&get(&server.url, "/metrics", &[]));
    let labels = [("code", codes[0].as_str())];
    assert_eq!(value(&scrape, "factmem_store_errors_total", &labels), 2.0);
    let called = [("tool", "memory_list"), ("outcome", codes[0].as_str())];
    assert_eq!(value(&scrape, "factmem_tool_calls_total", &called), 1.0);
    // A request's error is not the store's.
    let bad = client.call("memory_get", json!({"id": "not an id"}));
    assert_eq!(error_code(&bad), "invalid_id");
    let scrape = parse(&get(&server.url, "/metrics", &[]));
    let store_errors = samples(&scrape, "factmem_store_errors_total", &[]);
    assert_eq!(store_errors.len(), 1, "{store_errors:?}");
    assert_eq!(value(&scrape, "factmem_store_errors_total", &labels), 2.0);
}

#[path = "support/pg_server.rs"]
mod pg_server;

#[test]
fn metrics_on_postgresql_count_the_pools_open_and_idle_connections() {
    let Some(url) = pg_server::pg_server("the PostgreSQL pool's metrics are") else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let scope = format!("observability-{}-{nanos}", std::process::id());
    let server = HttpServer::start(
        "127.0.0.1:0",
        &["--db", url.as_str(), "--scope", scope.as_str(), "--metrics"],
    );
    let mut client = HttpClient::connect(&server.url);
    let added = client.call(
        "memory_add",
        json!({"subject": "user", "relation": "lives_in", "object": "Berlin"}),
    );
    assert_eq!(added["isError"], false, "{added}");
    let response = get(&server.url, "/metrics", &[]);
    let scrape = parse(&response);
    let open = value(&scrape, "factmem_db_connections", &[("state", "open")]);
    let idle = value(&scrape, "factmem_db_connections", &[("state", "idle")]);
    assert!(open >= 1.0 && idle <= open, "open {open}, idle {idle}");
    // Opened connections are SQLite's count; the pool has none.
    assert_eq!(
        value(&scrape, "factmem_db_connections_opened_total", &[]),
        0.0
    );
    // The URL's password is nowhere.
    if let Some(password) = url.split_once("://").and_then(|(_, rest)| {
        let credentials = rest.split_once('@')?.0;
        credentials
            .split_once(':')
            .map(|(_, password)| password.to_owned())
    }) {
        assert!(!response.body.contains(&password));
    }
}
