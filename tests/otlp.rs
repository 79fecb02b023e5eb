//! OTLP span export (issue 12, item 2): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the broker
//! exports a span for the instance, each state visit, each function call attempt and each
//! event it sends, to a small OTLP/HTTP receiver here. The spans nest as a trace viewer shows
//! them: upstream span -> instance -> state visit -> call attempt / sent event, with the ids
//! the function saw in its `traceparent` header and the consumer in the event's.

mod support;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span};
use prost::Message as _;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use support::*;

const SHIP: &str = r#"
id: ship
name: ship
events:
- {name: Ordered, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Shipped, type: order.shipped, kind: produced}
functions:
- {name: pack, resource: pack}
states:
- name: Pack
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Ordered]
    actions: [{functionRef: {refName: pack, parameters: {order: "{{ $.orderid }}"}}}]
  retry:
  - expression: "{{ $.errors[?(@.name == 'Busy')] }}"
    interval: PT1S
    maxAttempts: 3
  transition: {nextState: Note}
- name: Note
  type: inject
  data: {noted: true}
  end:
    kind: event
    produceEvent: {eventRef: Shipped, data: "{{ $ }}"}
"#;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const UPSTREAM_SPAN: &str = "00f067aa0ba902b7";

/// A span as received, with hex ids and string attributes.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    kind: i32,
    trace: String,
    span: String,
    parent: String,
    attrs: BTreeMap<String, String>,
    error: bool,
    start: u64,
    end: u64,
    service: String,
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
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Got>>>,
    requests: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
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

    fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }
}

#[test]
fn instance_state_call_and_event_spans_are_exported_and_nest() {
    let kafka = Kafka::start();
    let otlp = Receiver::start();
    // the first attempt of each order's call is busy: two call spans, one failed
    let attempts: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let a2 = attempts.clone();
    let fns = Functions::start(move |_, body| {
        let order = body["order"].as_str().unwrap_or_default().to_string();
        let mut a = a2.lock().unwrap();
        let n = a.entry(order).or_default();
        *n += 1;
        if *n == 1 {
            (503, json!({"name": "Busy", "message": "try again"}))
        } else {
            (200, json!({"packed": true}))
        }
    });
    let broker = Broker::start(
        &kafka,
        &[("ship.yaml", SHIP)],
        &[
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("pack={}", fns.url("/pack")),
            ),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp.url),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ("OTEL_SERVICE_NAME", "flowbroker-under-test"),
        ],
    );
    let out = kafka.collect(&["flowbroker.out"]);
    let p = kafka.producer();
    p.send(&event(
        "e1",
        "/shop",
        "order.placed",
        &[
            ("orderid", "A-1"),
            ("traceparent", &format!("00-{TRACE}-{UPSTREAM_SPAN}-01")),
        ],
        json!({"orderid": "A-1"}),
    ));
    p.send(&event(
        "e2",
        "/shop",
        "order.placed",
        &[("orderid", "B-2")],
        json!({"orderid": "B-2"}),
    ));
    let shipped = out.wait_events("order.shipped", 2, 60);
    let ids: BTreeMap<String, String> = broker
        .instances("ship")
        .into_iter()
        .map(|i| {
            (
                i["correlation"]["orderid"].as_str().unwrap().to_string(),
                i["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let a1 = ids["A-1"].clone();
    // every span of both instances: 1 instance + 2 states + 2 calls + 3 events each
    let spans = wait_for(60, "16 spans exported", || {
        let s = otlp.spans();
        (s.len() >= 16).then_some(s)
    });
    let of_a1: Vec<&Got> = spans
        .iter()
        .filter(|s| s.attrs.get("flowbroker.instance.id") == Some(&a1))
        .collect();
    let one = |pred: &dyn Fn(&Got) -> bool, what: &str| -> Got {
        let found: Vec<&&Got> = of_a1.iter().filter(|s| pred(s)).collect();
        assert_eq!(found.len(), 1, "one {what} span: {of_a1:#?}");
        (*found[0]).clone()
    };
    assert_eq!(of_a1.len(), 8, "{of_a1:#?}");
    for s in &of_a1 {
        assert_eq!(s.trace, TRACE, "the upstream trace: {s:?}");
        assert_eq!(s.attrs["flowbroker.workflow.id"], "ship", "{s:?}");
        assert_eq!(s.service, "flowbroker-under-test");
        assert!(s.start > 0 && s.end >= s.start, "{s:?}");
    }

    // the instance continues the upstream span
    let inst = one(&|s| s.name == "ship", "instance");
    assert_eq!(inst.parent, UPSTREAM_SPAN);
    assert_eq!(inst.kind, SpanKind::Internal as i32);
    assert_eq!(inst.attrs["flowbroker.instance.status"], "COMPLETED");
    assert!(!inst.error);

    // its state visits are its children, in order
    let pack = one(&|s| s.name == "Pack", "Pack state");
    let note = one(&|s| s.name == "Note", "Note state");
    for (s, ty, visit) in [(&pack, "event", "1"), (&note, "inject", "2")] {
        assert_eq!(s.parent, inst.span, "{s:?}");
        assert_eq!(s.attrs["flowbroker.state.type"], ty);
        assert_eq!(s.attrs["flowbroker.state.visit"], visit);
    }
    assert!(pack.end <= note.start, "Pack ends before Note starts");
    assert!(inst.start <= pack.start && note.end <= inst.end);

    // each call attempt is a client span under Pack; the function saw the ids in traceparent
    let calls: Vec<&&Got> = of_a1.iter().filter(|s| s.name == "call pack").collect();
    assert_eq!(calls.len(), 2, "two attempts: {calls:#?}");
    let headers = fns.call_headers();
    let seen: Vec<String> = fns
        .calls()
        .iter()
        .zip(&headers)
        .filter(|(c, _)| c.2["order"] == "A-1")
        .map(|(_, h)| h["traceparent"].clone())
        .collect();
    assert_eq!(seen.len(), 2);
    for (attempt, tp) in seen.iter().enumerate() {
        // counted from 0, as the X-Flowbroker-Attempt header counts them
        let attempt = attempt.to_string();
        let call = calls
            .iter()
            .find(|s| s.attrs["flowbroker.call.attempt"] == attempt)
            .unwrap_or_else(|| panic!("attempt {attempt}: {calls:#?}"));
        assert_eq!(
            *tp,
            format!("00-{TRACE}-{}-01", call.span),
            "attempt {attempt}"
        );
        assert_eq!(call.parent, pack.span, "the call is Pack's child");
        assert_eq!(call.kind, SpanKind::Client as i32);
        assert_eq!(call.attrs["flowbroker.function.name"], "pack");
        let status = if attempt == "0" { "503" } else { "200" };
        assert_eq!(call.attrs["http.response.status_code"], status);
        assert_eq!(call.error, attempt == "0", "the busy attempt failed");
        assert!(pack.start <= call.start && call.end <= pack.end + 1_000_000);
    }
    assert_ne!(calls[0].span, calls[1].span);

    // the produced event is Note's producer span, with the id its traceparent carries
    let sent = one(
        &|s| s.attrs.get("cloudevents.event_type").map(String::as_str) == Some("order.shipped"),
        "order.shipped send",
    );
    assert_eq!(sent.parent, note.span);
    assert_eq!(sent.kind, SpanKind::Producer as i32);
    let event = shipped
        .iter()
        .find(|e| e.data.as_ref().unwrap()["orderid"] == "A-1")
        .unwrap();
    assert_eq!(
        event.extensions["traceparent"].as_str().unwrap(),
        format!("00-{TRACE}-{}-01", sent.span)
    );
    // lifecycle events hang under the instance
    for what in ["started", "completed"] {
        let ty = format!("flowbroker.instance.{what}");
        let s = one(&|s| s.attrs.get("cloudevents.event_type") == Some(&ty), &ty);
        assert_eq!(s.parent, inst.span, "{ty}");
    }

    // B-2 came without a trace: a trace of its own, with a root instance span
    let b2 = &ids["B-2"];
    let root: Vec<&Got> = spans
        .iter()
        .filter(|s| s.attrs.get("flowbroker.instance.id") == Some(b2) && s.name == "ship")
        .collect();
    assert_eq!(root.len(), 1);
    assert_eq!(root[0].parent, "", "a root span");
    assert_ne!(root[0].trace, TRACE);
    assert!(otlp.requests.load(Ordering::SeqCst) >= 1);
}
