//! A small OTLP/HTTP receiver for the span export tests: it decodes what the broker exports
//! (protobuf) into plain [`Got`] spans.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::{status::StatusCode, Span};
use prost::Message as _;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A span as received, with hex ids and string attributes.
#[derive(Debug, Clone)]
pub struct Got {
    pub name: String,
    pub kind: i32,
    pub trace: String,
    pub span: String,
    pub parent: String,
    pub attrs: BTreeMap<String, String>,
    pub error: bool,
    pub start: u64,
    pub end: u64,
    pub service: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn attr_value(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn flatten(req: ExportTraceServiceRequest) -> Vec<Got> {
    let mut out = Vec::new();
    for rs in req.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(|kv| attr_value(&kv.value))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(got(s, &service));
            }
        }
    }
    out
}

fn got(s: Span, service: &str) -> Got {
    Got {
        name: s.name,
        kind: s.kind,
        trace: hex(&s.trace_id),
        span: hex(&s.span_id),
        parent: hex(&s.parent_span_id),
        attrs: s
            .attributes
            .iter()
            .map(|kv| (kv.key.clone(), attr_value(&kv.value)))
            .collect(),
        error: s
            .status
            .as_ref()
            .is_some_and(|st| st.code == StatusCode::Error as i32),
        start: s.start_time_unix_nano,
        end: s.end_time_unix_nano,
        service: service.to_string(),
    }
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with protobuf bodies, as collectors take them.
pub struct Receiver {
    pub url: String,
    spans: Arc<Mutex<Vec<Got>>>,
    pub requests: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start() -> Receiver {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans: Arc<Mutex<Vec<Got>>> = Arc::default();
        let requests: Arc<AtomicUsize> = Arc::default();
        let (s2, r2) = (spans.clone(), requests.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let (spans, requests) = (s2.clone(), r2.clone());
                    async move {
                        let ct = headers
                            .get("content-type")
                            .and_then(|h| h.to_str().ok())
                            .unwrap_or_default()
                            .to_string();
                        assert_eq!(ct, "application/x-protobuf", "OTLP/HTTP protobuf");
                        let req = ExportTraceServiceRequest::decode(body.as_ref())
                            .expect("an OTLP trace export request");
                        spans.lock().unwrap().extend(flatten(req));
                        requests.fetch_add(1, Ordering::SeqCst);
                        (
                            [("content-type", "application/x-protobuf")],
                            Vec::<u8>::new(),
                        )
                    }
                },
            ),
        );
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver {
            url,
            spans,
            requests,
            _rt: rt,
        }
    }

    pub fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }
}
