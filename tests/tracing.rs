//! W3C trace context (issue 12, item 2): an event's `traceparent` (the CloudEvents
//! distributed-tracing extension) continues into the instance it starts: each function call
//! gets a `traceparent` header of the same trace with a span of its own, and every produced and
//! lifecycle event carries the trace on; a start over HTTP takes the request's `traceparent`.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
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
  end:
    kind: event
    produceEvent: {eventRef: Shipped, data: "{{ $ }}"}
"#;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const UPSTREAM_SPAN: &str = "00f067aa0ba902b7";

/// (trace id, span id) of a `traceparent`, checking its shape.
fn ids(tp: &str) -> (String, String) {
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(parts[0], "00", "{tp}");
    assert_eq!(parts[3], "01", "sampled, as upstream: {tp}");
    (parts[1].to_string(), parts[2].to_string())
}

#[test]
fn an_events_trace_continues_into_calls_and_produced_events() {
    let kafka = Kafka::start();
    let fns = Functions::start(|_, body| (200, json!({"packed": body["order"]})));
    let broker = Broker::start(
        &kafka,
        &[("ship.yaml", SHIP)],
        &[(
            "FLOWBROKER_FUNCTIONS",
            &format!("pack={}", fns.url("/pack")),
        )],
    );
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    let p = kafka.producer();
    let traceparent = format!("00-{TRACE}-{UPSTREAM_SPAN}-01");
    p.send(&event(
        "e1",
        "/shop",
        "order.placed",
        &[
            ("orderid", "A-1"),
            ("traceparent", &traceparent),
            ("tracestate", "vendor=abc"),
        ],
        json!({"orderid": "A-1"}),
    ));
    // one with no trace: the instance starts a trace of its own
    p.send(&event(
        "e2",
        "/shop",
        "order.placed",
        &[("orderid", "B-2")],
        json!({"orderid": "B-2"}),
    ));
    let shipped = out.wait_events("order.shipped", 2, 60);

    // the call: same trace, a span of its own, the tracestate passed on
    let calls = fns.calls();
    let headers = fns.call_headers();
    let traced = calls
        .iter()
        .position(|c| c.2["order"] == "A-1")
        .expect("the call for A-1");
    let h = &headers[traced];
    let (trace, call_span) = ids(&h["traceparent"]);
    assert_eq!(trace, TRACE, "{h:?}");
    assert_ne!(call_span, UPSTREAM_SPAN, "the call is a span of its own");
    assert_eq!(h["tracestate"], "vendor=abc");

    // produced and lifecycle events of A-1 carry the trace, each with its own span
    let a1 = shipped
        .iter()
        .find(|e| e.data.as_ref().unwrap()["orderid"] == "A-1")
        .unwrap();
    let (trace, event_span) = ids(a1.extensions["traceparent"].as_str().unwrap());
    assert_eq!(trace, TRACE);
    let a1_id = broker
        .instances("ship")
        .into_iter()
        .find(|i| i["correlation"]["orderid"] == "A-1")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut spans = BTreeSet::from([call_span.clone(), event_span]);
    for what in ["started", "completed"] {
        let e = out.lifecycle(&a1_id, what, 30);
        let (trace, span) = ids(e.extensions["traceparent"].as_str().unwrap());
        assert_eq!(trace, TRACE, "{what}");
        spans.insert(span);
    }
    assert_eq!(
        spans.len(),
        4,
        "every call and event has a span of its own: {spans:?}"
    );

    // B-2 had no trace: its call and events share a trace of their own
    let b2 = calls.iter().position(|c| c.2["order"] == "B-2").unwrap();
    let (own, _) = ids(&headers[b2]["traceparent"]);
    assert_ne!(own, TRACE);
    let b2_event = shipped
        .iter()
        .find(|e| e.data.as_ref().unwrap()["orderid"] == "B-2")
        .unwrap();
    assert_eq!(
        ids(b2_event.extensions["traceparent"].as_str().unwrap()).0,
        own
    );
}

const DIRECT: &str = r#"
id: direct
name: direct
functions:
- {name: pack, resource: pack}
states:
- name: Pack
  type: operation
  start: {kind: default}
  actions: [{functionRef: {refName: pack, parameters: {order: "{{ $.order }}"}}}]
  end: {kind: default}
"#;

#[test]
fn a_start_over_http_takes_the_requests_traceparent() {
    let kafka = Kafka::start();
    let fns = Functions::start(|_, _| (200, json!({})));
    let broker = Broker::start(
        &kafka,
        &[("direct.yaml", DIRECT)],
        &[(
            "FLOWBROKER_FUNCTIONS",
            &format!("pack={}", fns.url("/pack")),
        )],
    );
    let r = broker
        .request(reqwest::Method::POST, "/v1/workflows/direct/instances")
        .header("traceparent", format!("00-{TRACE}-{UPSTREAM_SPAN}-01"))
        .json(&json!({"order": "C-3"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<serde_json::Value>().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    broker.wait_status(&id, "COMPLETED", 60);
    let headers = fns.call_headers();
    assert_eq!(headers.len(), 1);
    let (trace, span) = ids(&headers[0]["traceparent"]);
    assert_eq!(trace, TRACE);
    assert_ne!(span, UPSTREAM_SPAN);
}
