//! `facts mcp --http` under load, as its users load it (issue 24): many MCP clients at once,
//! each its own session with its tenant's bearer token, over rmcp's own streamable HTTP
//! client, on one server whose facts live in PostgreSQL.
//!
//! Each client runs a bounded request loop that stops by itself (a deadline and a request
//! cap): 70% reads (`memory_search`, `memory_recall`) and 30% writes (`memory_add`,
//! `memory_archive`), paced at a rate per client with random gaps (an agent thinks between
//! calls). Every fact and message a client writes carries its tenant's marker word, and
//! every read asks with words all tenants share, so a fact of another tenant in any answer
//! is a leak. The report gives the requests, p50 and p99 per tool, and the errors.
//!
//! Afterwards the database is read by SQL: every acknowledged write is there, in its
//! tenant's scope, and no scope holds another tenant's facts. Then the same load runs while
//! the PostgreSQL server restarts once (`.ci/pg-server restart`): calls may fail while it is
//! down, none may fail outside that window, every acknowledged write is there afterwards,
//! and every client succeeds again after the restart.
//!
//! - `the_short_load_…` runs in `cargo xtask check`: 10 clients, 10 s, 10 tenants.
//! - `full_load` (ignored) is `cargo xtask load`: 50 clients, 60 s, 10 tenants, release
//!   build. `FACTMEM_LOAD_CLIENTS`, `FACTMEM_LOAD_SECS`, `FACTMEM_LOAD_TENANTS` and
//!   `FACTMEM_LOAD_RATE` (requests per second per client) change the form.
//!
//! Both need `FACTMEM_PG_URL` and `FACTMEM_PG_DIR` (`eval "$(.ci/pg-server start)"`), and
//! fail under `CI=true` without them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    // The report is the point of `cargo xtask load`.
    clippy::print_stdout
)]

#[path = "support/pg_server.rs"]
mod pg_server;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// How long the server may take to print its URL.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Words every tenant's facts and messages share, so every query could match any tenant.
const SHARED_WORDS: [&str; 6] = [
    "editor", "project", "deadline", "coffee", "review", "garden",
];

/// The relations of the facts the clients add.
const RELATIONS: [&str; 5] = ["prefers", "works_on", "uses", "plans", "mentions"];

/// What a load run is.
#[derive(Debug, Clone, Copy)]
struct Plan {
    clients: usize,
    secs: u64,
    tenants: usize,
    /// Requests per second each client aims at (the gaps between them are random).
    rate: f64,
    /// Restart the PostgreSQL server this far into the run.
    restart_after: Option<Duration>,
}

impl Plan {
    /// `self`, with what the `FACTMEM_LOAD_*` variables set.
    fn with_env(self) -> Plan {
        fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
            std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
        }
        Plan {
            clients: var("FACTMEM_LOAD_CLIENTS").unwrap_or(self.clients),
            secs: var("FACTMEM_LOAD_SECS").unwrap_or(self.secs),
            tenants: var("FACTMEM_LOAD_TENANTS").unwrap_or(self.tenants),
            rate: var("FACTMEM_LOAD_RATE").unwrap_or(self.rate),
            restart_after: self.restart_after,
        }
    }
}

/// A tenant of the run: its token, its memory scope and its marker word.
#[derive(Debug, Clone)]
struct Tenant {
    name: String,
    token: String,
    scope: String,
    /// A word only this tenant's facts and messages carry (`tn3x`: no marker is part of
    /// another).
    marker: String,
}

/// The tenants of run `run`, and the token file that names them.
fn tenants(run: &str, count: usize, dir: &Path) -> (Vec<Tenant>, PathBuf) {
    let tenants: Vec<Tenant> = (0..count)
        .map(|i| Tenant {
            name: format!("tenant{i}"),
            token: hex(&Sha256::digest(format!("{run} token {i}").as_bytes())),
            scope: format!("load-{run}/tenant{i}"),
            marker: format!("tn{i}x"),
        })
        .collect();
    let entries: Vec<Value> = tenants
        .iter()
        .map(|t| {
            json!({
                "tenant": t.name,
                "sha256": hex(&Sha256::digest(t.token.as_bytes())),
                "scope": t.scope,
                "rights": ["read", "write"],
            })
        })
        .collect();
    let file = dir.join("tokens.json");
    // Limits well above the load's own rate: this test measures the server, not its 429s
    // (tests/tenants.rs tests those).
    let defaults = json!({"max_concurrent": 64, "rate_per_sec": 1000, "burst": 1000});
    std::fs::write(
        &file,
        json!({"defaults": defaults, "tenants": entries}).to_string(),
    )
    .unwrap();
    (tenants, file)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A `facts mcp --http` process, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `facts mcp --http` on a free loopback port over `db`, with the tenants of
/// `tokens`.
fn start_server(db: &str, tokens: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--http", "127.0.0.1:0", "--db", db, "--tokens"])
        .arg(tokens)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (found, url) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some((_, rest)) = line.split_once("http://") {
                let url: String = "http://"
                    .chars()
                    .chain(rest.chars().take_while(|c| !c.is_whitespace()))
                    .collect();
                sent = found.send(url).is_ok();
            }
            // Read to the end, so the server never blocks on a full pipe; show warnings.
            if line.contains("WARN") || line.contains("ERROR") {
                eprintln!("server: {line}");
            }
        }
    });
    let url = url
        .recv_timeout(START_TIMEOUT)
        .expect("the server printed no URL");
    Server { child, url }
}

/// One call's outcome, as a client saw it.
#[derive(Debug, Clone)]
struct Call {
    tool: &'static str,
    /// Milliseconds since the run started, when the call was sent.
    at_ms: u64,
    micros: u64,
    /// `None`: succeeded; else the error (a tool error's code, or the transport's).
    error: Option<String>,
}

/// A write a client saw acknowledged.
#[derive(Debug, Clone)]
enum Acked {
    /// `memory_add`: the subject and object.
    Fact { subject: String, object: String },
    /// `memory_archive`: the episode's id.
    Episode(String),
}

/// What one client did.
#[derive(Debug, Default)]
struct Log {
    calls: Vec<Call>,
    acked: Vec<Acked>,
    /// Answers that named another tenant's marker.
    leaks: Vec<String>,
    /// Failures to open the session.
    session_errors: Vec<String>,
}

/// A small deterministic generator (xorshift64*), one per client.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The arguments of the next call of client `client` of `tenant`, and its tool.
fn next_call(
    rng: &mut Rng,
    tenant: &Tenant,
    client: usize,
    seq: usize,
) -> (&'static str, Map<String, Value>) {
    let word = |rng: &mut Rng| SHARED_WORDS[rng.below(SHARED_WORDS.len())];
    let roll = rng.below(100);
    let marker = &tenant.marker;
    let arguments = match roll {
        0..35 => (
            "memory_search",
            json!({"query": format!("{} {}", word(rng), word(rng)), "limit": 10}),
        ),
        35..70 => (
            "memory_recall",
            json!({"query": format!("what about the {} and the {}?", word(rng), word(rng)),
                   "max_tokens": 500}),
        ),
        70..90 => {
            let relation = RELATIONS[rng.below(RELATIONS.len())];
            (
                "memory_add",
                json!({
                    "subject": format!("{marker} user{}", rng.below(20)),
                    "relation": relation,
                    "object": format!("{marker} {} c{client}n{seq}", word(rng)),
                    "statement": format!("{marker} user {relation} the {} c{client}n{seq}",
                                         word(rng)),
                    "category": "preference",
                }),
            )
        }
        _ => {
            let lines: Vec<String> = (0..4)
                .map(|i| {
                    let role = if i % 2 == 0 { "user" } else { "assistant" };
                    json!({"role": role,
                           "content": format!("{marker} talks about the {} and the {} (c{client}n{seq})",
                                              word(rng), word(rng))})
                    .to_string()
                })
                .collect();
            (
                "memory_archive",
                json!({"transcript": lines.join("\n"),
                       "title": format!("{marker} chat c{client}n{seq}"),
                       "session_time": "2026-11-01T10:00:00Z"}),
            )
        }
    };
    let (tool, arguments) = arguments;
    (tool, arguments.as_object().cloned().unwrap_or_default())
}

/// Runs one client until `deadline`: a session with `tenant`'s token, then calls paced at
/// `rate` per second on average.
async fn client(
    url: String,
    tenant: Tenant,
    markers: Arc<Vec<String>>,
    index: usize,
    started: Instant,
    deadline: Instant,
    rate: f64,
) -> Log {
    let mut log = Log::default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(tenant.token.clone());
    let transport = StreamableHttpClientTransport::from_config(config);
    let session = match ().serve(transport).await {
        Ok(session) => session,
        Err(e) => {
            log.session_errors.push(e.to_string());
            return log;
        }
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0x1000_0001));
    // A bound besides the deadline: the loop stops by itself even if calls return at once.
    let cap = ((deadline - started).as_secs_f64() * rate * 4.0).ceil() as usize + 10;
    for seq in 0..cap {
        if Instant::now() >= deadline {
            break;
        }
        let (tool, arguments) = next_call(&mut rng, &tenant, index, seq);
        let sent = Instant::now();
        let answer = session
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments.clone()))
            .await;
        let micros = sent.elapsed().as_micros() as u64;
        let error = match answer {
            Err(e) => Some(format!("transport: {e}")),
            Ok(result) => {
                let content = result.structured_content.unwrap_or(Value::Null);
                if result.is_error == Some(true) {
                    Some(
                        content["error"]["code"]
                            .as_str()
                            .unwrap_or("tool error without a code")
                            .to_owned(),
                    )
                } else {
                    record(&mut log, &tenant, &markers, tool, &arguments, &content)
                }
            }
        };
        log.calls.push(Call {
            tool,
            at_ms: (sent - started).as_millis() as u64,
            micros,
            error,
        });
        // Random gaps, exponential around 1/rate (an agent thinks between calls).
        let gap = -(1.0 - rng.unit()).ln() / rate;
        tokio::time::sleep(Duration::from_secs_f64(gap.min(10.0 / rate))).await;
    }
    let _ = session.cancel().await;
    log
}

/// Notes what a successful call acknowledged, and any other tenant's marker in its answer;
/// an answer that lacks what its tool promises is the call's error.
fn record(
    log: &mut Log,
    tenant: &Tenant,
    markers: &[String],
    tool: &str,
    arguments: &Map<String, Value>,
    content: &Value,
) -> Option<String> {
    match tool {
        "memory_add" => log.acked.push(Acked::Fact {
            subject: arguments["subject"].as_str().unwrap_or_default().to_owned(),
            object: arguments["object"].as_str().unwrap_or_default().to_owned(),
        }),
        "memory_archive" => match content["episode_id"].as_str() {
            Some(id) => log.acked.push(Acked::Episode(id.to_owned())),
            None => return Some(format!("memory_archive answered no episode id: {content}")),
        },
        _ => {
            let text = content.to_string();
            for marker in markers.iter().filter(|m| **m != tenant.marker) {
                if text.contains(marker.as_str()) {
                    log.leaks.push(format!(
                        "{} of {} saw {marker}: {text:.300}",
                        tool, tenant.name
                    ));
                }
            }
        }
    }
    None
}

/// The latency report of a run: requests, p50 and p99 per tool, errors.
fn report(calls: &[&Call], secs: f64) -> (String, BTreeMap<&'static str, (f64, f64)>) {
    let mut by_tool: BTreeMap<&'static str, Vec<&Call>> = BTreeMap::new();
    for call in calls {
        by_tool.entry(call.tool).or_default().push(call);
    }
    let mut text =
        String::from("| tool | requests | p50 ms | p99 ms | errors |\n|---|---|---|---|---|\n");
    let mut percentiles = BTreeMap::new();
    for (tool, calls) in &by_tool {
        let mut micros: Vec<u64> = calls.iter().map(|c| c.micros).collect();
        micros.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * micros.len() as f64).ceil() as usize).clamp(1, micros.len());
            micros[rank - 1] as f64 / 1000.0
        };
        let errors = calls.iter().filter(|c| c.error.is_some()).count();
        let (p50, p99) = (at(0.50), at(0.99));
        percentiles.insert(*tool, (p50, p99));
        let _ = writeln!(
            text,
            "| {tool} | {} | {p50:.2} | {p99:.2} | {errors} |",
            micros.len()
        );
    }
    let _ = writeln!(
        text,
        "{} requests in {secs:.1} s: {:.0} per second",
        calls.len(),
        calls.len() as f64 / secs
    );
    (text, percentiles)
}

/// What a run left: every client's log, and when the restart (if any) began and ended, in
/// milliseconds since the start.
struct Outcome {
    logs: Vec<Log>,
    restart: Option<(u64, u64)>,
    secs: f64,
}

/// Runs `plan` against the server at `url`.
fn run(plan: Plan, url: &str, tenants: &[Tenant], pg_dir: &str) -> Outcome {
    let markers: Arc<Vec<String>> = Arc::new(tenants.iter().map(|t| t.marker.clone()).collect());
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(plan.secs);
    let restart = plan.restart_after.map(|after| {
        let pg_dir = pg_dir.to_owned();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let begun = started.elapsed().as_millis() as u64;
            let status = Command::new(pg_server_script())
                .args(["restart", &pg_dir])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "pg-server restart failed: {status}");
            (begun, started.elapsed().as_millis() as u64)
        })
    });
    let logs = tokio.block_on(async {
        let tasks: Vec<_> = (0..plan.clients)
            .map(|i| {
                tokio::spawn(client(
                    url.to_owned(),
                    tenants[i % tenants.len()].clone(),
                    markers.clone(),
                    i,
                    started,
                    deadline,
                    plan.rate,
                ))
            })
            .collect();
        let mut logs = Vec::new();
        for task in tasks {
            logs.push(task.await.unwrap());
        }
        logs
    });
    let secs = started.elapsed().as_secs_f64();
    Outcome {
        logs,
        restart: restart.map(|r| r.join().unwrap()),
        secs,
    }
}

fn pg_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/pg-server")
}

/// Checks by SQL that every write `logs` acknowledged is in its tenant's scope, and that
/// no scope of the run holds another tenant's facts or messages.
fn check_database(url: &str, tenants: &[Tenant], logs: &[Log]) {
    let mut db = postgres::Client::connect(url, postgres::NoTls).unwrap();
    // The store's tables live in its schema, `factmem` by default.
    db.batch_execute("SET search_path TO factmem").unwrap();
    let mut missing = Vec::new();
    let mut acked = 0;
    for (i, log) in logs.iter().enumerate() {
        let tenant = &tenants[i % tenants.len()];
        for write in &log.acked {
            acked += 1;
            let found: i64 = match write {
                Acked::Fact { subject, object } => db
                    .query_one(
                        "SELECT count(*) FROM facts f JOIN scopes s ON s.id = f.scope \
                         WHERE s.name = $1 AND f.subject = $2 AND f.object = $3",
                        &[&tenant.scope, subject, object],
                    )
                    .unwrap()
                    .get(0),
                Acked::Episode(id) => db
                    .query_one(
                        "SELECT count(*) FROM episodes e JOIN scopes s ON s.id = e.scope \
                         WHERE s.name = $1 AND e.id = $2",
                        &[&tenant.scope, id],
                    )
                    .unwrap()
                    .get(0),
            };
            if found == 0 {
                missing.push(format!("{}: {write:?}", tenant.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {acked} acknowledged writes are not in the database: {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    // No scope holds another tenant's marker, in a fact or a message.
    for tenant in tenants {
        for other in tenants.iter().filter(|o| o.name != tenant.name) {
            let pattern = format!("%{}%", other.marker);
            let facts: i64 = db
                .query_one(
                    "SELECT count(*) FROM facts f JOIN scopes s ON s.id = f.scope \
                     WHERE s.name = $1 AND (f.subject LIKE $2 OR f.object LIKE $2)",
                    &[&tenant.scope, &pattern],
                )
                .unwrap()
                .get(0);
            let messages: i64 = db
                .query_one(
                    "SELECT count(*) FROM messages m JOIN scopes s ON s.id = m.scope \
                     WHERE s.name = $1 AND m.content LIKE $2",
                    &[&tenant.scope, &pattern],
                )
                .unwrap()
                .get(0);
            assert_eq!(
                (facts, messages),
                (0, 0),
                "{}'s scope holds {}'s facts or messages",
                tenant.name,
                other.name
            );
        }
    }
    println!("{acked} acknowledged writes, all in their tenant's scope; no scope holds another's");
}

/// A run id no earlier run on the same database used.
fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// The server and database of a load test; `None` outside CI without them.
fn database() -> Option<(String, String)> {
    let url = pg_server::pg_server("the MCP load test is")?;
    let dir = std::env::var("FACTMEM_PG_DIR")
        .ok()
        .filter(|d| !d.is_empty());
    assert!(
        dir.is_some() || std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_DIR is not set under CI=true: the load test restarts the server"
    );
    Some((url, dir?))
}

/// Runs `plan` twice on one server (once as it is, once across a restart of the database
/// server) and checks both; returns the first run's report.
fn load(plan: Plan) -> Option<String> {
    let (db, pg_dir) = database()?;
    let dir = tempfile::tempdir().unwrap();
    let run_id = run_id();
    let (tenants, tokens) = tenants(&run_id, plan.tenants, dir.path());
    let server = start_server(&db, &tokens);
    println!(
        "load: {} clients over {} tenants, {} s, {} requests/s per client, at {}",
        plan.clients, plan.tenants, plan.secs, plan.rate, server.url
    );

    // 1. Steady load: no error at all.
    let outcome = run(plan, &server.url, &tenants, &pg_dir);
    let calls: Vec<&Call> = outcome.logs.iter().flat_map(|l| &l.calls).collect();
    let (text, _) = report(&calls, outcome.secs);
    println!("{text}");
    let errors: Vec<String> = outcome
        .logs
        .iter()
        .flat_map(|l| {
            l.session_errors.iter().cloned().chain(
                l.calls
                    .iter()
                    .filter_map(|c| c.error.clone().map(|e| format!("{}: {e}", c.tool))),
            )
        })
        .collect();
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(10)]
    );
    let leaks: Vec<&String> = outcome.logs.iter().flat_map(|l| &l.leaks).collect();
    assert!(leaks.is_empty(), "answers crossed tenants: {leaks:?}");
    assert!(
        calls.len() >= plan.clients,
        "every client made calls: {}",
        calls.len()
    );
    check_database(&db, &tenants, &outcome.logs);

    // 2. The same load across a restart of the PostgreSQL server.
    let restart_plan = Plan {
        restart_after: Some(Duration::from_secs(plan.secs.max(3) / 3)),
        ..plan
    };
    let during = run(restart_plan, &server.url, &tenants, &pg_dir);
    let (begun, ended) = during.restart.unwrap();
    // Calls sent while the server was down may fail, and those sent just before it went
    // down or while the pool reconnects after it came back: a window of grace each side.
    let grace_ms = 5_000;
    let mut failed_in_window = 0;
    for (i, log) in during.logs.iter().enumerate() {
        assert!(
            log.session_errors.is_empty(),
            "client {i}: {:?}",
            log.session_errors
        );
        for call in &log.calls {
            if let Some(error) = &call.error {
                assert!(
                    call.at_ms + grace_ms >= begun && call.at_ms <= ended + grace_ms,
                    "client {i}: {} failed ({error}) at {} ms, outside the restart ({begun}–{ended} ms)",
                    call.tool,
                    call.at_ms
                );
                failed_in_window += 1;
            }
        }
        let recovered = log
            .calls
            .iter()
            .any(|c| c.error.is_none() && c.at_ms > ended);
        let last_ms = log.calls.last().map_or(0, |c| c.at_ms);
        assert!(
            recovered || last_ms <= ended + grace_ms,
            "client {i} never succeeded after the restart ended at {ended} ms"
        );
    }
    let leaks: Vec<&String> = during.logs.iter().flat_map(|l| &l.leaks).collect();
    assert!(leaks.is_empty(), "answers crossed tenants: {leaks:?}");
    let calls: Vec<&Call> = during.logs.iter().flat_map(|l| &l.calls).collect();
    let (restart_text, _) = report(&calls, during.secs);
    println!(
        "across a restart of PostgreSQL ({begun}–{ended} ms): {failed_in_window} calls failed \
         while it was down\n{restart_text}"
    );
    check_database(&db, &tenants, &during.logs);
    Some(format!(
        "{text}\nacross a restart ({begun}–{ended} ms, {failed_in_window} calls failed while it was down):\n{restart_text}"
    ))
}

#[test]
fn the_short_load_serves_ten_tenants_without_error_or_leak_and_survives_a_restart() {
    let plan = Plan {
        clients: 10,
        secs: 10,
        tenants: 10,
        rate: 20.0,
        restart_after: None,
    };
    let _ = load(plan);
}

#[test]
#[ignore = "the full load test: `cargo xtask load`"]
fn full_load() {
    let plan = Plan {
        clients: 50,
        secs: 60,
        tenants: 10,
        rate: 10.0,
        restart_after: None,
    }
    .with_env();
    if let Some(report) = load(plan)
        && let Ok(path) = std::env::var("FACTMEM_LOAD_REPORT")
    {
        std::fs::write(path, report).unwrap();
    }
}
