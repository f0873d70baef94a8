//! `facts mcp --http --metrics`: what the server counts, served at `/metrics` in the
//! Prometheus text format (`docs/observability.md`).
//!
//! Every metric is named `factmem_…`, counters end in `_total`, durations are in seconds
//! (`_seconds`) and sizes in bytes (`_bytes`). Labels are bounded: a tool's name only for
//! the tools the server has (any other is `unknown`), an outcome is `ok` or the answer's
//! error code, a tenant is its name in the token file (never its token or digest), and the
//! `tenant` label exists only when the server serves tenants (`--tokens`). No label or
//! value holds a request's text. The gauges (the caches, the runs, the database's
//! connections) are read at each scrape from what the server holds.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dispatch_runtime::durable::DatabaseHandle;
use dispatch_runtime::protocol;
use dispatch_runtime::reexports::{Clock, Timestamp};
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// The `tool` label of a call of a tool the server does not have (its name is the caller's
/// text, so it is not a label).
pub(crate) const UNKNOWN_TOOL_LABEL: &str = "unknown";

/// The `outcome` label of a call that succeeded.
const OK: &str = "ok";

/// The upper bounds of the tool calls' latency buckets, in seconds: 0.5 ms to about 33 s,
/// each twice the one before.
const LATENCY_BUCKETS: (f64, f64, usize) = (0.0005, 2.0, 17);

/// Why the HTTP server refused a request before any tool saw it
/// (`factmem_http_refusals_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401: no bearer token.
    NoToken,
    /// 401: a token the file does not list.
    UnknownToken,
    /// 404: another token's session.
    ForeignSession,
    /// 429: over the tenant's request rate.
    Rate,
    /// 429: the tenant has its limit of requests in flight.
    InFlight,
    /// 403: a scrape of `/metrics` by a tenant without the `metrics` right.
    NoMetricsRight,
    /// 403: a browser `Origin` that is not let in.
    Origin,
    /// 413: a body over `--max-request-bytes`.
    TooLarge,
}

impl Refusal {
    /// The `reason` label.
    fn label(self) -> &'static str {
        match self {
            Refusal::NoToken => "no_token",
            Refusal::UnknownToken => "unknown_token",
            Refusal::ForeignSession => "foreign_session",
            Refusal::Rate => "rate",
            Refusal::InFlight => "in_flight",
            Refusal::NoMetricsRight => "no_metrics_right",
            Refusal::Origin => "origin",
            Refusal::TooLarge => "too_large",
        }
    }
}

/// How many runs the server holds now (every tenant's, with tenants).
pub(crate) type RunsHeld = Box<dyn Fn() -> usize + Send + Sync>;

/// The server's metrics: counters and histograms updated as requests are answered, and the
/// sources of the gauges read at each scrape.
pub(crate) struct Metrics {
    registry: Registry,
    /// Whether the server serves tenants: the `tenant` label.
    tenanted: bool,
    calls: IntCounterVec,
    latency: HistogramVec,
    store_errors: IntCounterVec,
    refusals: IntCounterVec,
    cache_bytes: IntGauge,
    cache_limit_bytes: IntGauge,
    cache_loaded: IntGauge,
    cache_evictions: IntCounter,
    runs: IntGauge,
    connections: IntGaugeVec,
    connections_opened: IntCounter,
    /// The database: its cache budget and connections.
    database: Option<DatabaseHandle>,
    /// The runs held, set by the server the metrics count for.
    runs_held: OnceLock<RunsHeld>,
    /// What the tool calls are timed by.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("tenanted", &self.tenanted)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// The metrics of a server that serves tenants (`tenanted`, the `tenant` label) or
    /// not, on `database` when it has one, timing tool calls by `clock`.
    pub(crate) fn new(
        tenanted: bool,
        database: Option<DatabaseHandle>,
        clock: Arc<dyn Clock>,
    ) -> Result<Metrics, String> {
        let failed = |e: prometheus::Error| format!("cannot set up the metrics: {e}");
        let registry = Registry::new();
        let with_tenant = |labels: &[&'static str]| {
            let mut labels = labels.to_vec();
            if tenanted {
                labels.push("tenant");
            }
            labels
        };
        let calls = IntCounterVec::new(
            Opts::new(
                "factmem_tool_calls_total",
                "MCP tool calls answered, by tool and outcome (ok, or the error code)",
            ),
            &with_tenant(&["tool", "outcome"]),
        )
        .map_err(failed)?;
        let (start, factor, count) = LATENCY_BUCKETS;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "factmem_tool_call_duration_seconds",
                "How long MCP tool calls took to answer, by tool",
            )
            .buckets(prometheus::exponential_buckets(start, factor, count).map_err(failed)?),
            &["tool"],
        )
        .map_err(failed)?;
        let store_errors = IntCounterVec::new(
            Opts::new(
                "factmem_store_errors_total",
                "Tool calls that failed because a store could not read or write, by the \
                 store's error code (io, busy, corrupt, ...)",
            ),
            &["code"],
        )
        .map_err(failed)?;
        let refusals = IntCounterVec::new(
            Opts::new(
                "factmem_http_refusals_total",
                "HTTP requests refused before any tool saw them, by reason (authentication, \
                 rate limits, origin, size)",
            ),
            &with_tenant(&["reason"]),
        )
        .map_err(failed)?;
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).map_err(failed);
        let cache_bytes = gauge(
            "factmem_cache_bytes",
            "Bytes the in-process search caches hold now (term indexes and vectors)",
        )?;
        let cache_limit_bytes = gauge(
            "factmem_cache_limit_bytes",
            "The caches' budget (--cache-mb), in bytes",
        )?;
        let cache_loaded = gauge(
            "factmem_cache_loaded",
            "In-process search caches loaded now",
        )?;
        let cache_evictions = IntCounter::new(
            "factmem_cache_evictions_total",
            "Caches dropped to stay within the budget",
        )
        .map_err(failed)?;
        let runs = gauge("factmem_runs_held", "Dispatch runs the server holds now")?;
        let connections = IntGaugeVec::new(
            Opts::new(
                "factmem_db_connections",
                "The database's connections now: idle (kept for the next operation) and, on \
                 PostgreSQL, open (the pool's)",
            ),
            &["state"],
        )
        .map_err(failed)?;
        let connections_opened = IntCounter::new(
            "factmem_db_connections_opened_total",
            "Connections to the SQLite database opened since the server started",
        )
        .map_err(failed)?;
        for collector in [
            Box::new(calls.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(latency.clone()),
            Box::new(store_errors.clone()),
            Box::new(refusals.clone()),
            Box::new(runs.clone()),
        ] {
            registry.register(collector).map_err(failed)?;
        }
        if database.is_some() {
            for collector in [
                Box::new(cache_bytes.clone()) as Box<dyn prometheus::core::Collector>,
                Box::new(cache_limit_bytes.clone()),
                Box::new(cache_loaded.clone()),
                Box::new(cache_evictions.clone()),
                Box::new(connections.clone()),
                Box::new(connections_opened.clone()),
            ] {
                registry.register(collector).map_err(failed)?;
            }
        }
        Ok(Metrics {
            registry,
            tenanted,
            calls,
            latency,
            store_errors,
            refusals,
            cache_bytes,
            cache_limit_bytes,
            cache_loaded,
            cache_evictions,
            runs,
            connections,
            connections_opened,
            database,
            runs_held: OnceLock::new(),
            clock,
        })
    }

    /// Sets where the runs held are read (once; later calls change nothing).
    pub(crate) fn count_runs(&self, runs: RunsHeld) {
        let _ = self.runs_held.set(runs);
    }

    /// The time now, when a tool call starts.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Counts one tool call: `tool` (a tool the server has, else [`UNKNOWN_TOOL_LABEL`]),
    /// its error code (`None`: it succeeded), the tenant it was made for and when it
    /// started ([`Metrics::now`]).
    pub(crate) fn tool_call(
        &self,
        tool: &str,
        error: Option<&str>,
        tenant: Option<&str>,
        started: Timestamp,
    ) {
        let micros = self
            .clock
            .now()
            .unix_micros()
            .saturating_sub(started.unix_micros());
        let took = Duration::from_micros(u64::try_from(micros).unwrap_or(0));
        let outcome = error.unwrap_or(OK);
        let tenant = tenant.unwrap_or_default();
        let mut labels = vec![tool, outcome];
        if self.tenanted {
            labels.push(tenant);
        }
        self.calls.with_label_values(&labels).inc();
        self.latency
            .with_label_values(&[tool])
            .observe(took.as_secs_f64());
        if let Some(code) = error.and_then(protocol::store_failure) {
            self.store_errors.with_label_values(&[code]).inc();
        }
    }

    /// Counts a request the HTTP server refused, for `tenant` when it is known.
    pub(crate) fn refused(&self, reason: Refusal, tenant: Option<&str>) {
        let mut labels = vec![reason.label()];
        if self.tenanted {
            labels.push(tenant.unwrap_or_default());
        }
        self.refusals.with_label_values(&labels).inc();
    }

    /// Reads the gauges' sources.
    fn sample(&self) {
        if let Some(runs) = self.runs_held.get() {
            self.runs.set(gauge_value(runs()));
        }
        let Some(database) = &self.database else {
            return;
        };
        let budget = database.cache_budget();
        self.cache_bytes.set(gauge_value(budget.used()));
        self.cache_limit_bytes
            .set(budget.limit().map_or(-1, gauge_value));
        self.cache_loaded.set(gauge_value(budget.loaded()));
        let evictions = budget.evictions();
        self.cache_evictions
            .inc_by(evictions.saturating_sub(self.cache_evictions.get()));
        let connections = database.connections();
        self.connections
            .with_label_values(&["idle"])
            .set(gauge_value(connections.idle));
        if let Some(open) = connections.open {
            self.connections
                .with_label_values(&["open"])
                .set(gauge_value(open));
        }
        if let Some(opened) = connections.opened {
            self.connections_opened
                .inc_by(opened.saturating_sub(self.connections_opened.get()));
        }
    }

    /// Every metric in the Prometheus text format (version 0.0.4), and its content type.
    pub(crate) fn render(&self) -> (String, &'static str) {
        self.sample();
        let encoder = TextEncoder::new();
        let mut text = String::new();
        if let Err(e) = encoder.encode_utf8(&self.registry.gather(), &mut text) {
            tracing::error!("facts mcp: cannot encode the metrics: {e}");
        }
        (text, prometheus::TEXT_FORMAT)
    }
}

/// A count as a gauge's value.
fn gauge_value(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The metrics shared by the server's parts.
pub(crate) type Shared = Arc<Metrics>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use dispatch_runtime::reexports::ManualClock;

    fn metrics(tenanted: bool) -> Metrics {
        Metrics::new(tenanted, None, Arc::new(ManualClock::default())).unwrap()
    }

    #[test]
    fn the_tenant_label_is_there_only_with_tenants() {
        let plain = metrics(false);
        plain.tool_call("init_run", None, None, plain.now());
        plain.refused(Refusal::Origin, None);
        let (text, _) = plain.render();
        assert!(
            text.contains("factmem_tool_calls_total{outcome=\"ok\",tool=\"init_run\"} 1"),
            "{text}"
        );
        assert!(!text.contains("tenant="), "{text}");
        let tenants = metrics(true);
        let forbidden = protocol::code::FORBIDDEN;
        tenants.tool_call("init_run", Some(forbidden), Some("alice"), tenants.now());
        tenants.refused(Refusal::Rate, Some("alice"));
        let (text, _) = tenants.render();
        assert!(
            text.contains(&format!(
                "factmem_tool_calls_total{{outcome=\"{forbidden}\",tenant=\"alice\",tool=\"init_run\"}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains("factmem_http_refusals_total{reason=\"rate\",tenant=\"alice\"} 1"),
            "{text}"
        );
    }
}
