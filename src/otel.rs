//! OTLP span export: the [`SpanRecord`]s of instances, state visits, function calls and sent
//! events, handed to OpenTelemetry's SDK (batching, sampling, limits) and exported over OTLP
//! HTTP (protobuf or JSON) to a collector.
//!
//! Configured the OpenTelemetry way, by environment (docs/broker.md "Tracing"): export is on
//! when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (or
//! `OTEL_TRACES_EXPORTER=otlp`), and off with `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_SDK_DISABLED=true`. When it is off, [`Exporter::from_env`] answers `None` and nothing
//! builds a span at all. Headers, timeouts, compression, batching (`OTEL_BSP_*`), sampling
//! (`OTEL_TRACES_SAMPLER`) and resource attributes (`OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`) are read by the SDK from their usual variables.
//!
//! Export is best effort, as telemetry is: spans are queued (at most `OTEL_BSP_MAX_QUEUE_SIZE`,
//! the rest dropped and counted by the SDK) and sent by the SDK's own thread, never on the
//! core's path; a collector that is down loses spans, not workflow progress.

use crate::trace::span::{Attr, SpanKind, SpanRecord};
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, Status, TraceContextExt as _, TraceFlags, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, Key, KeyValue, Value};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use opentelemetry_sdk::Resource;
use std::time::SystemTime;

/// Why span export could not be set up (the broker refuses to start: a collector the
/// operator asked for would otherwise be silently missing).
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    #[error(
        "{var}={value:?} is not supported: flowbroker exports OTLP over HTTP; set it to \
         http/protobuf (the default; collectors listen on port 4318) or http/json"
    )]
    Protocol { var: &'static str, value: String },
    #[error("OTLP span exporter: {0}")]
    Build(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// Exports spans; cheap to clone (the SDK's provider and tracer are handles).
#[derive(Clone, Debug)]
pub struct Exporter {
    provider: SdkTracerProvider,
    tracer: Tracer,
}

impl Exporter {
    /// The exporter the environment asks for, or `None` when it asks for none.
    pub fn from_env() -> Result<Option<Exporter>, OtelError> {
        Exporter::from_vars(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
    }

    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Exporter>, OtelError> {
        let Some(protocol) = wanted(&var)? else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .build()?;
        let mut resource = Resource::builder().build();
        let named = resource
            .get(&Key::from_static_str("service.name"))
            .is_some_and(|v| v.as_str() != "unknown_service");
        if !named {
            resource = Resource::builder().with_service_name("flowbroker").build();
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("flowbroker");
        Ok(Some(Exporter { provider, tracer }))
    }

    /// Queues finished spans for export.
    pub fn export(&self, spans: impl IntoIterator<Item = SpanRecord>) {
        for s in spans {
            self.export_one(s);
        }
    }

    fn export_one(&self, s: SpanRecord) {
        let flags = if s.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let trace_id = opentelemetry::trace::TraceId::from(s.trace_id.0);
        let parent = match s.parent {
            Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                trace_id,
                opentelemetry::trace::SpanId::from(p.0),
                flags,
                true,
                TraceState::default(),
            )),
            None => Context::new(),
        };
        let attributes: Vec<KeyValue> = s
            .attributes
            .into_iter()
            .map(|(k, v)| {
                KeyValue::new(
                    k,
                    match v {
                        Attr::Str(s) => Value::from(s),
                        Attr::Int(i) => Value::I64(i),
                    },
                )
            })
            .collect();
        let builder = SpanBuilder::from_name(s.name)
            .with_trace_id(trace_id)
            .with_span_id(opentelemetry::trace::SpanId::from(s.span_id.0))
            .with_kind(match s.kind {
                SpanKind::Internal => opentelemetry::trace::SpanKind::Internal,
                SpanKind::Client => opentelemetry::trace::SpanKind::Client,
                SpanKind::Producer => opentelemetry::trace::SpanKind::Producer,
            })
            .with_start_time(SystemTime::from(s.start))
            .with_attributes(attributes)
            .with_status(match s.error {
                Some(e) => Status::error(e),
                None => Status::Unset,
            });
        let mut span = self.tracer.build_with_context(builder, &parent);
        span.end_with_timestamp(SystemTime::from(s.end));
    }

    /// Sends what is queued and stops (at shutdown).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "OTLP span export did not shut down cleanly");
        }
    }
}

/// The protocol to export with, or `None` when export is off.
fn wanted(var: &impl Fn(&str) -> Option<String>) -> Result<Option<Protocol>, OtelError> {
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let exporter = var("OTEL_TRACES_EXPORTER").map(|v| v.trim().to_ascii_lowercase());
    let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .is_some();
    match exporter.as_deref() {
        Some("none") => return Ok(None),
        Some("otlp") => {}
        _ if endpoint => {}
        _ => return Ok(None),
    }
    let (name, value) = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        Some(v) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Some(v)),
        None => (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            var("OTEL_EXPORTER_OTLP_PROTOCOL"),
        ),
    };
    match value.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Ok(Some(Protocol::HttpBinary)),
        Some("http/json") => Ok(Some(Protocol::HttpJson)),
        Some(other) => Err(OtelError::Protocol {
            var: name,
            value: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Result<Option<Protocol>, OtelError> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        wanted(&|k: &str| m.get(k).cloned())
    }

    #[test]
    fn export_is_on_only_when_asked_for() {
        assert!(matches!(with(&[]), Ok(None)), "nothing configured: off");
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert!(matches!(with(&[on]), Ok(Some(Protocol::HttpBinary))));
        assert!(matches!(
            with(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://c:4318/v1/traces"
            )]),
            Ok(Some(_))
        ));
        assert!(matches!(
            with(&[("OTEL_TRACES_EXPORTER", "otlp")]),
            Ok(Some(_))
        ));
        assert!(matches!(
            with(&[on, ("OTEL_TRACES_EXPORTER", "none")]),
            Ok(None)
        ));
        assert!(matches!(
            with(&[on, ("OTEL_SDK_DISABLED", "TRUE")]),
            Ok(None)
        ));
        assert!(matches!(
            with(&[on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]),
            Ok(Some(Protocol::HttpJson))
        ));
        // the traces variable wins over the general one
        assert!(matches!(
            with(&[
                on,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            ]),
            Ok(Some(Protocol::HttpBinary))
        ));
        let err = with(&[on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\"")
                && err.to_string().contains("http/protobuf"),
            "{err}"
        );
    }
}
