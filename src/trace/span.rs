//! A finished span as plain data: what the core and the invoker saw an instance do (an
//! instance's life, a state visit, a function call, an event sent), with ids from
//! [`TraceContext`] and times from the batch's clock. [`crate::otel`] exports them over OTLP
//! when an endpoint is configured; nothing builds them otherwise. Pure: no clock, no I/O.

use super::{SpanId, TraceContext, TraceId};
use chrono::{DateTime, Utc};

/// What a span stands for, as OpenTelemetry's span kinds say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// An instance or a state visit.
    Internal,
    /// A function call over HTTP.
    Client,
    /// An event sent to Kafka.
    Producer,
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Attr {
        Attr::Str(s.to_string())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Attr {
        Attr::Str(s)
    }
}

impl From<i64> for Attr {
    fn from(v: i64) -> Attr {
        Attr::Int(v)
    }
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    pub name: String,
    pub kind: SpanKind,
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    /// The trace's sampled flag (an upstream that did not sample is followed).
    pub sampled: bool,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub attributes: Vec<(&'static str, Attr)>,
    /// Set when what the span stands for failed.
    pub error: Option<String>,
}

impl SpanRecord {
    /// Adds an attribute.
    pub fn attr(mut self, key: &'static str, value: impl Into<Attr>) -> SpanRecord {
        self.attributes.push((key, value.into()));
        self
    }

    /// Marks the span failed with `message`.
    pub fn failed(mut self, message: impl Into<String>) -> SpanRecord {
        self.error = Some(message.into());
        self
    }
}

/// Attribute keys (OpenTelemetry semantic conventions where one fits, `flowbroker.*` else).
pub mod key {
    pub const INSTANCE: &str = "flowbroker.instance.id";
    pub const WORKFLOW: &str = "flowbroker.workflow.id";
    pub const VERSION: &str = "flowbroker.workflow.version";
    pub const STATUS: &str = "flowbroker.instance.status";
    pub const PARENT_INSTANCE: &str = "flowbroker.instance.parent";
    pub const STATE: &str = "flowbroker.state.name";
    pub const OPERATION: &str = "flowbroker.operation.id";
    pub const OPERATION_TYPE: &str = "flowbroker.operation.type";
    pub const OPERATION_SUBTYPE: &str = "flowbroker.operation.subtype";
    pub const OPERATION_STATUS: &str = "flowbroker.operation.status";
    pub const STATE_TYPE: &str = "flowbroker.state.type";
    pub const VISIT: &str = "flowbroker.state.visit";
    pub const FUNCTION: &str = "flowbroker.function.name";
    pub const ATTEMPT: &str = "flowbroker.call.attempt";
    pub const IDEMPOTENCY_KEY: &str = "flowbroker.call.key";
    pub const HTTP_METHOD: &str = "http.request.method";
    pub const HTTP_STATUS: &str = "http.response.status_code";
    pub const URL: &str = "url.full";
    pub const MESSAGING_SYSTEM: &str = "messaging.system";
    pub const DESTINATION: &str = "messaging.destination.name";
    pub const EVENT_ID: &str = "cloudevents.event_id";
    pub const EVENT_TYPE: &str = "cloudevents.event_type";
    pub const EVENT_SOURCE: &str = "cloudevents.event_source";
}

impl TraceContext {
    /// The span of state visit `visit_key` (`{instance}/{visit}`), a child of the instance's.
    pub fn state_span(&self, visit_key: &str) -> SpanId {
        self.span_of("state", visit_key)
    }

    /// The span of attempt `attempt` of the call with idempotency key `key`, a child of its
    /// state visit's span. A call sent again after a crash has the same span; a retry has
    /// its own.
    pub fn call_span(&self, key: &str, attempt: u32) -> SpanId {
        self.span_of("call", &format!("{key}#{attempt}"))
    }

    /// The span of a durable function's operation `id`: the child of its parent CONTEXT's
    /// span, or of the instance's.
    pub fn operation_span(&self, id: &str) -> SpanId {
        self.span_of("operation", id)
    }

    /// A span of this instance's trace, without attributes yet.
    pub fn record(
        &self,
        name: impl Into<String>,
        kind: SpanKind,
        (span_id, parent): (SpanId, Option<SpanId>),
        (start, end): (DateTime<Utc>, DateTime<Utc>),
    ) -> SpanRecord {
        SpanRecord {
            name: name.into(),
            kind,
            trace_id: self.trace_id,
            span_id,
            parent,
            sampled: self.sampled,
            start,
            end: end.max(start),
            attributes: Vec::new(),
            error: None,
        }
    }

    /// The instance's own span, parented to whatever it continues.
    pub fn instance_record(
        &self,
        name: impl Into<String>,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
    ) -> SpanRecord {
        self.record(
            name,
            SpanKind::Internal,
            (self.span_id, self.parent),
            (start, end),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_an_instance_nest_and_keep_their_ids() {
        let t = TraceContext::for_instance("p1-abc", None);
        let (t0, t1) = (
            "2026-01-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap(),
            "2026-01-01T00:00:02Z".parse::<DateTime<Utc>>().unwrap(),
        );
        let state = t.state_span("p1-abc/1");
        let s = t
            .record(
                "Pack",
                SpanKind::Internal,
                (state, Some(t.span_id)),
                (t0, t1),
            )
            .attr(key::VISIT, 1);
        assert_eq!((s.trace_id, s.parent), (t.trace_id, Some(t.span_id)));
        assert_eq!(s.attributes, vec![(key::VISIT, Attr::Int(1))]);
        // the two attempts of a call are two spans; each is the same on every re-send
        let (a1, a2) = (t.call_span("p1-abc/1/a0", 1), t.call_span("p1-abc/1/a0", 2));
        assert_ne!(a1, a2);
        assert_eq!(a1, t.call_span("p1-abc/1/a0", 1));
        assert_ne!(state, t.state_span("p1-abc/2"));
        // an end before the start (a clock stepped back) is clamped
        let i = t.instance_record("ship", (t1, t0));
        assert_eq!((i.span_id, i.parent, i.end), (t.span_id, None, t1));
    }
}
