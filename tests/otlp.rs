//! OTLP span export (issue 12, item 2): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the broker
//! exports a span for the instance, each state visit, each function call attempt and each
//! event it sends, to a small OTLP/HTTP receiver here. The spans nest as a trace viewer shows
//! them: upstream span -> instance -> state visit -> call attempt / sent event, with the ids
//! the function saw in its `traceparent` header and the consumer in the event's.

mod support;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use support::otlp::{Got, Receiver};
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

#[test]
fn a_durable_execution_exports_a_span_per_operation_under_its_instance() {
    let kafka = Kafka::start();
    let otlp = Receiver::start();
    let http = format!("127.0.0.1:{}", free_port());
    let host = support::durable::Host::start(&http, &["steps"]);
    let (file, text) = host.definition("steps");
    let broker = Broker::start(
        &kafka,
        &[(&file, &text)],
        &[
            ("FLOWBROKER_HTTP_LISTEN", &http),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp.url),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    );
    wait_for(30, "steps to deploy", || {
        (broker.get("/v1/workflows/steps").0 == 200).then_some(())
    });
    let (code, v) = broker.post("/v1/workflows/steps/instances", json!({"order": "t1"}));
    assert_eq!(code, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    broker.wait_status(&id, "COMPLETED", 60);
    let spans = wait_for(30, "the execution's spans", || {
        let mine: Vec<Got> = otlp
            .spans()
            .into_iter()
            .filter(|s| s.attrs.get("flowbroker.instance.id") == Some(&id))
            .collect();
        mine.iter().any(|s| s.name == "steps").then_some(mine)
    });
    let instance = spans.iter().find(|s| s.name == "steps").unwrap();
    for (name, kind) in [
        ("load", "STEP"),
        ("cool-off", "WAIT"),
        ("charge", "STEP"),
        ("ship", "STEP"),
    ] {
        let op = spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span for operation {name}: {spans:#?}"));
        assert_eq!(op.parent, instance.span, "{name} is the instance's child");
        assert_eq!(op.attrs["flowbroker.operation.type"], kind);
        assert_eq!(op.attrs["flowbroker.operation.status"], "SUCCEEDED");
        assert!(
            op.start >= instance.start && op.end <= instance.end,
            "{name} inside the instance"
        );
    }
    let wait = spans.iter().find(|s| s.name == "cool-off").unwrap();
    assert!(
        wait.end - wait.start >= 990_000_000,
        "the wait's span lasts its second"
    );
    // the two invocations (before and after the wait) are calls under the instance
    let calls: Vec<&Got> = spans.iter().filter(|s| s.name == "call steps").collect();
    assert_eq!(calls.len(), 2, "{spans:#?}");
    assert!(calls.iter().all(|c| c.parent == instance.span));
    drop(host);
}
