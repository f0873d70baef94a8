//! `facts mcp --otlp-endpoint URL` (feature `otlp`): the `tracing` spans of tool calls
//! exported as OpenTelemetry traces over OTLP/HTTP (protobuf), to a collector.
//!
//! Only spans go out, and only this workspace's (`facts`, `dispatch_runtime`, `fact_*`):
//! a tool call's `tool_call` span and, beneath it, the `store`, `retrieval`, `embedding` and
//! `extraction` spans the runtime opens (`docs/observability.md`). Their fields are names,
//! counts and codes; no span carries a memory's text, a query, a request's arguments or a
//! token, and log events (whose messages may quote a request) are not exported. Spans are
//! sent in batches by the OpenTelemetry SDK's own thread (every 5 s, or as
//! `OTEL_BSP_SCHEDULE_DELAY` says, in milliseconds), and what is left is sent when the
//! command ends (over HTTP, SIGTERM and SIGINT then stop the server: `mcp/http.rs`).

#[cfg(feature = "otlp")]
use tracing::Subscriber;
#[cfg(feature = "otlp")]
use tracing_subscriber::Layer;
#[cfg(feature = "otlp")]
use tracing_subscriber::registry::LookupSpan;

/// The path a collector takes traces at, after its base URL.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
const TRACES_PATH: &str = "/v1/traces";

/// The exporter of a running command: dropped when the command ends, it sends the spans not
/// sent yet.
#[cfg(feature = "otlp")]
pub(crate) struct Exporter {
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
}

/// A build without the `otlp` feature exports nothing.
#[cfg(not(feature = "otlp"))]
pub(crate) enum Exporter {}

#[cfg(feature = "otlp")]
impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("facts: the last traces could not be sent: {e}");
        }
    }
}

/// The traces' URL for `--otlp-endpoint`'s value: an `http://` URL of a collector's
/// OTLP/HTTP receiver, as `OTEL_EXPORTER_OTLP_ENDPOINT` is given (`http://127.0.0.1:4318`),
/// or already ending in `/v1/traces`.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
pub(crate) fn traces_url(endpoint: &str) -> Result<String, String> {
    let endpoint = endpoint.trim();
    let Some(rest) = endpoint.strip_prefix("http://") else {
        let why = if endpoint.starts_with("https://") {
            "HTTPS is not supported: send the traces to a collector on this machine or in \
             its network (an OpenTelemetry Collector on http://127.0.0.1:4318), which can \
             forward them over TLS"
        } else {
            "give the http:// URL of an OTLP/HTTP receiver, such as http://127.0.0.1:4318"
        };
        return Err(format!("--otlp-endpoint {endpoint:?}: {why}"));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!(
            "--otlp-endpoint {endpoint:?}: no host; give a URL such as http://127.0.0.1:4318"
        ));
    }
    let base = endpoint.trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        Ok(base.to_owned())
    } else {
        Ok(format!("{base}{TRACES_PATH}"))
    }
}

/// Whether a span of `target` is this workspace's.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
fn ours(target: &str) -> bool {
    ["facts", "dispatch_runtime", "fact_", "ledger"]
        .iter()
        .any(|prefix| target.starts_with(prefix))
}

/// The layer that exports this workspace's spans to `endpoint`, and the exporter to keep
/// until the command ends.
#[cfg(feature = "otlp")]
pub(crate) fn layer<S>(endpoint: &str) -> Result<(impl Layer<S>, Exporter), String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    let url = traces_url(endpoint)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .build()
        .map_err(|e| format!("--otlp-endpoint {url}: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("facts")
        .build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("facts");
    let only_ours = tracing_subscriber::filter::filter_fn(|metadata| {
        metadata.is_span() && *metadata.level() <= tracing::Level::INFO && ours(metadata.target())
    });
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_filter(only_ours);
    Ok((layer, Exporter { provider }))
}

/// Refuses `--otlp-endpoint`: this build has no OpenTelemetry exporter.
#[cfg(not(feature = "otlp"))]
pub(crate) fn layer(
    endpoint: &str,
) -> Result<(tracing_subscriber::layer::Identity, Exporter), String> {
    Err(format!(
        "--otlp-endpoint {endpoint}: this facts binary was built without the `otlp` feature \
         (OpenTelemetry traces); build it with `--features otlp`"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_endpoint_is_a_collectors_http_base_url_or_its_traces_url() {
        for (given, url) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "http://collector:4318/v1/traces",
                "http://collector:4318/v1/traces",
            ),
            ("http://collector/otel", "http://collector/otel/v1/traces"),
        ] {
            assert_eq!(traces_url(given).unwrap(), url, "{given}");
        }
        for (given, why) in [
            ("https://collector:4318", "HTTPS is not supported"),
            ("collector:4318", "http://"),
            ("http://", "no host"),
            ("http:///v1/traces", "no host"),
        ] {
            let error = traces_url(given).unwrap_err();
            assert!(error.contains(why), "{given}: {error}");
        }
    }

    #[test]
    fn only_this_workspaces_targets_are_exported() {
        for target in [
            "facts::mcp",
            "dispatch_runtime::memory",
            "fact_store_sqlite",
        ] {
            assert!(ours(target), "{target}");
        }
        for target in ["hyper::proto", "rmcp::service", "reqwest", "axum"] {
            assert!(!ours(target), "{target}");
        }
    }
}
