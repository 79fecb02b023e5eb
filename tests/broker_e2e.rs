//! End to end over a real Kafka-protocol broker (tansu) with the real `flowbroker` binary:
//! event starts, correlation, early events, the all-events start join, callbacks routed by
//! `workflowinstanceid`, foreach over HTTP functions, eventRef request/reply, deterministic
//! produced ids, lifecycle events and the dead-letter topic.

mod support;
use serde_json::{json, Value};
use support::*;

const ORDERS: &str = r#"
id: orders
name: orders
events:
- {name: Created, type: order.created, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Done, type: order.done, kind: produced}
functions:
- {name: reserve, resource: reserveStock}
states:
- name: Received
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Created]
    actions: [{functionRef: {refName: reserve, parameters: {order: "{{ $.orderid }}"}}}]
  transition: {nextState: AwaitPayment}
- name: AwaitPayment
  type: event
  eventsActions:
  - eventRefs: [Paid]
    eventDataFilter: {dataOutputPath: "{{ $.data.amount }}"}
  end:
    kind: event
    produceEvent: {eventRef: Done, data: "{{ $ }}"}
"#;

/// A function server whose `/reserve` answers after `delay_ms`.
fn reserve_server(delay_ms: u64) -> Functions {
    Functions::start(move |path, body| {
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        match path {
            "/reserve" => (200, json!({"reserved": body["order"]})),
            _ => (404, json!({"error": "NotFound", "message": path})),
        }
    })
}

fn id_of(e: &flowbroker::engine::Event) -> String {
    e.data.as_ref().unwrap()["instanceId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn event_start_correlated_continuation_early_event_and_lifecycle() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    // the function answers slowly, so an order's payment can arrive before the instance waits
    let fns = reserve_server(700);
    let reserve = fns.url("/reserve");
    let broker = Broker::start(
        &kafka,
        &[("orders.yaml", ORDERS)],
        &[("FLOWBROKER_FUNCTIONS", &format!("reserveStock={reserve}"))],
    );
    let p = kafka.producer();
    // A: created, then paid once it waits
    p.send(&event(
        "a1",
        "/shop",
        "order.created",
        &[("orderid", "A")],
        json!({"item": "x"}),
    ));
    let started = out.wait_events("flowbroker.instance.started", 1, 30);
    let a = id_of(&started[0]);
    wait_for(30, "A to wait for payment", || {
        (broker.instance(&a)["state"] == json!("AwaitPayment")
            && broker.instance(&a)["status"] == json!("WAITING"))
        .then_some(())
    });
    p.send(&event(
        "a2",
        "/shop",
        "order.paid",
        &[("orderid", "A")],
        json!({"amount": 10}),
    ));
    let done_a = broker.wait_status(&a, "COMPLETED", 30);
    assert_eq!(done_a["output"]["amount"], json!(10));
    assert_eq!(done_a["output"]["reserved"], json!("A"));
    assert_eq!(done_a["output"]["orderid"], json!("A"));

    // B: paid arrives while the function call is still out -> buffered, delivered later
    p.send(&event(
        "b1",
        "/shop",
        "order.created",
        &[("orderid", "B")],
        json!({}),
    ));
    p.send(&event(
        "b2",
        "/shop",
        "order.paid",
        &[("orderid", "B")],
        json!({"amount": 20}),
    ));
    let started = out.wait_events("flowbroker.instance.started", 2, 30);
    let b = started.iter().map(id_of).find(|i| *i != a).unwrap();
    let done_b = broker.wait_status(&b, "COMPLETED", 30);
    assert_eq!(done_b["output"]["amount"], json!(20));
    // metrics are counted just after the commit the status shows: wait for them
    wait_for(
        10,
        "the early payment to count as buffered and delivered",
        || {
            let m = reqwest::blocking::get(format!("http://{}/metrics", broker.http))
                .ok()?
                .text()
                .ok()?;
            (m.contains("flowbroker_buffered_events_total{outcome=\"buffered\"} 1")
                && m.contains("flowbroker_buffered_events_total{outcome=\"delivered\"} 1"))
            .then_some(())
        },
    );

    // A's function answer and payment each found A kept decoded since its last write (a
    // miss would decode it from the store: the same record, only slower); B's too
    wait_for(10, "inputs to find their instances kept decoded", || {
        let m = reqwest::blocking::get(format!("http://{}/metrics", broker.http))
            .ok()?
            .text()
            .ok()?;
        let hits = metric_sum(&m, "flowbroker_instance_cache_total", "outcome=\"hit\"");
        (hits >= 3).then_some(())
    });

    // produced events: deterministic ids, keyed by the correlation value, with extensions
    let done = out.wait_events("order.done", 2, 30);
    for e in &done {
        let inst = e.extensions["workflowinstanceid"].as_str().unwrap();
        assert_eq!(e.extensions["workflowid"], json!("orders"));
        assert_eq!(e.id, flowbroker::engine::produce_event_id(inst, 0));
    }
    let rec = out
        .all()
        .into_iter()
        .find(|r| {
            r.event.as_ref().is_some_and(|e| {
                e.event_type == "order.done" && e.data.as_ref().unwrap()["orderid"] == json!("A")
            })
        })
        .unwrap();
    assert_eq!(rec.key.as_deref(), Some("A"));
    // lifecycle: started and completed, once each per instance
    for i in [&a, &b] {
        let c = out.lifecycle(i, "completed", 10);
        assert_eq!(c.data.as_ref().unwrap()["workflowId"], json!("orders"));
    }
    assert_eq!(out.events("flowbroker.instance.completed").len(), 2);
    // the history lists inputs and decisions in order
    let h = broker.instance(&a)["history"].as_array().unwrap().clone();
    let kinds: Vec<&str> = h
        .iter()
        .map(|e| e["input"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "actionResult", "event"]);
    // consumer lag per input partition, from librdkafka statistics: everything consumed
    wait_for(20, "the consumer lag gauge", || {
        let m = reqwest::blocking::get(format!("http://{}/metrics", broker.http))
            .ok()?
            .text()
            .ok()?;
        let lags: Vec<&str> = m
            .lines()
            .filter(|l| {
                l.starts_with("flowbroker_kafka_consumer_lag{") && l.contains("flowbroker.in")
            })
            .collect();
        // (a partition nothing was consumed from has no committed offset, so no known lag)
        (!lags.is_empty() && lags.iter().all(|l| l.ends_with(" 0"))).then_some(())
    });
    // one call per order, each with its own idempotency key
    let keys: std::collections::BTreeSet<String> = fns.calls().into_iter().map(|c| c.1).collect();
    assert_eq!(keys.len(), 2);
}

const JOIN: &str = r#"
id: join
name: join
events:
- {name: Left, type: part.left, source: /parts, correlation: [{contextAttributeName: pairid}]}
- {name: Right, type: part.right, source: /parts, correlation: [{contextAttributeName: pairid}]}
states:
- name: Both
  type: event
  start: {kind: default}
  exclusive: false
  timeout: PT1H
  eventsActions:
  - eventRefs: [Left, Right]
  end: {kind: default}
"#;

const CALLBACK: &str = r#"
id: approval
name: approval
events:
- {name: Decision, type: approval.decided, source: /approver}
functions:
- {name: ask, resource: "http://myapis.org/approvals.json#ask"}
states:
- name: Ask
  type: callback
  start: {kind: default}
  action: {functionRef: {refName: ask, parameters: {who: "{{ $.who }}"}}}
  eventRef: Decision
  eventDataFilter: {dataOutputPath: "{{ $.data.decision }}"}
  timeout: PT1H
  end: {kind: default}
"#;

const FOREACH: &str = r#"
id: squares
name: squares
functions:
- {name: square, resource: "FN/square"}
states:
- name: Each
  type: foreach
  start: {kind: default}
  inputCollection: "{{ $.numbers }}"
  iterationParam: n
  outputCollection: "{{ $.squares }}"
  max: 2
  actions: [{functionRef: {refName: square, parameters: {n: "{{ $.n }}"}}}]
  end: {kind: default}
"#;

const REQUEST_REPLY: &str = r#"
id: quote
name: quote
events:
- {name: QuoteRequested, type: quote.requested, kind: produced}
- {name: QuoteGiven, type: quote.given, source: /pricing}
states:
- name: AskPrice
  type: operation
  start: {kind: default}
  actions:
  - eventRef:
      triggerEventRef: QuoteRequested
      resultEventRef: QuoteGiven
      data: {sku: "{{ $.sku }}"}
  end: {kind: default}
"#;

#[test]
fn join_callback_foreach_request_reply_and_dead_letters() {
    let kafka = Kafka::start();
    kafka.create_topic("flowbroker.requests", 3);
    let out = kafka.collect(&[
        "flowbroker.out",
        "flowbroker.lifecycle",
        "flowbroker.dlq",
        "flowbroker.requests",
    ]);
    let fns = Functions::start(|path, body| match path {
        "/ask" => (202, json!({"asked": body["who"]})),
        "/square" => {
            let n = body["n"].as_i64().unwrap();
            (200, json!(n * n))
        }
        _ => (404, json!({})),
    });
    // the callback's resource is an OpenAPI-style operation: the config maps it by name
    let ask = format!("ask={}", fns.url("/ask"));
    let foreach = FOREACH.replace("FN", &fns.base);
    let broker = Broker::start(
        &kafka,
        &[
            ("join.yaml", JOIN),
            ("approval.yaml", CALLBACK),
            ("squares.yaml", &foreach),
            ("quote.yaml", REQUEST_REPLY),
        ],
        &[
            ("FLOWBROKER_FUNCTIONS", &ask),
            // produced events of this type go to their own topic
            (
                "FLOWBROKER_KAFKA_TOPICS",
                "quote.requested=flowbroker.requests",
            ),
        ],
    );
    let p = kafka.producer();

    // all-events start join: one instance per key, created when both parts are in
    p.send(&event(
        "l1",
        "/parts",
        "part.left",
        &[("pairid", "P1")],
        json!({"left": 1}),
    ));
    p.send(&event(
        "l2",
        "/parts",
        "part.left",
        &[("pairid", "P2")],
        json!({"left": 2}),
    ));
    p.send_structured(&event(
        "r1",
        "/parts",
        "part.right",
        &[("pairid", "P1")],
        json!({"right": 1}),
    ));
    let started = out.wait_events("flowbroker.instance.started", 1, 30);
    let j = id_of(&started[0]);
    let done = broker.wait_status(&j, "COMPLETED", 30);
    assert_eq!(
        done["output"],
        json!({"left": 1, "right": 1, "pairid": "P1"})
    );
    assert_eq!(broker.instances("join").len(), 1, "P2 is still pending");

    // callback completed by an event routed by workflowinstanceid
    let (code, v) = broker.post("/v1/workflows/approval/instances", json!({"who": "ann"}));
    assert_eq!(code, 201, "{v}");
    let cb = v["id"].as_str().unwrap().to_string();
    wait_for(30, "the callback to wait", || {
        (broker.instance(&cb)["status"] == json!("WAITING")).then_some(())
    });
    assert_eq!(broker.instance(&cb)["data"]["asked"], json!("ann"));
    p.send(&event(
        "d1",
        "/approver",
        "approval.decided",
        &[("workflowinstanceid", &cb)],
        json!({"decision": "yes"}),
    ));
    let done = broker.wait_status(&cb, "COMPLETED", 30);
    assert_eq!(done["output"]["decision"], json!("yes"));

    // foreach over HTTP calls, at most two at once, results in input order
    let (code, v) = broker.post(
        "/v1/workflows/squares/instances",
        json!({"numbers": [1, 2, 3, 4, 5]}),
    );
    assert_eq!(code, 201, "{v}");
    let sq = v["id"].as_str().unwrap().to_string();
    let done = broker.wait_status(&sq, "COMPLETED", 30);
    // a non-object result is merged under `result` (SEMANTICS.md "Data flow")
    let squares: Vec<Value> = [1, 4, 9, 16, 25]
        .iter()
        .map(|n| json!({"result": n}))
        .collect();
    assert_eq!(done["output"]["squares"], json!(squares));
    let square_calls = fns.calls().into_iter().filter(|c| c.0 == "/square").count();
    assert_eq!(square_calls, 5);

    // eventRef request/reply: the trigger event goes out, the reply correlates back by
    // workflowinstanceid
    let (code, v) = broker.post("/v1/workflows/quote/instances", json!({"sku": "s-1"}));
    assert_eq!(code, 201, "{v}");
    let q = v["id"].as_str().unwrap().to_string();
    let req = out.wait_events("quote.requested", 1, 30).remove(0);
    assert!(out
        .all()
        .iter()
        .any(|r| r.topic == "flowbroker.requests"
            && r.event.as_ref().is_some_and(|e| e.id == req.id)));
    assert_eq!(req.data, Some(json!({"sku": "s-1"})));
    assert_eq!(req.extensions["workflowinstanceid"], json!(q));
    p.send(&event(
        "g1",
        "/pricing",
        "quote.given",
        &[("workflowinstanceid", &q)],
        json!({"price": 5}),
    ));
    let done = broker.wait_status(&q, "COMPLETED", 30);
    assert_eq!(done["output"]["price"], json!(5));

    // malformed records go to the DLQ with their origin; the stream moves on
    p.send_raw(b"this is not a cloudevent");
    let ce = [
        ("ce_specversion", Some("1.0")),
        ("ce_id", Some("bad1")),
        ("ce_source", Some("/parts")),
        ("ce_type", Some("part.left")),
        ("content-type", Some("application/json")),
    ];
    p.send_with_headers(b"{not json", &ce);
    let mut null_header = ce.to_vec();
    null_header[1] = ("ce_id", Some("bad2"));
    null_header.push(("ce_pairid", None));
    p.send_with_headers(b"{}", &null_header);
    // the store's key separator inside a correlation value (CloudEvents disallows it)
    let mut control = ce.to_vec();
    control[1] = ("ce_id", Some("bad3"));
    control.push(("ce_pairid", Some("P\u{1f}3")));
    p.send_with_headers(b"{}", &control);
    p.send(&event(
        "l3",
        "/parts",
        "part.left",
        &[("pairid", "P3")],
        json!({"left": 3}),
    ));
    p.send(&event(
        "r3",
        "/parts",
        "part.right",
        &[("pairid", "P3")],
        json!({"right": 3}),
    ));
    let dead = wait_for(30, "four dead letters", || {
        let d: Vec<Received> = out
            .all()
            .into_iter()
            .filter(|r| r.topic == "flowbroker.dlq")
            .collect();
        (d.len() >= 4).then_some(d)
    });
    // input records without a key land on any partition: find each by its reason
    let by_reason = |needle: &str| {
        dead.iter()
            .find(|r| r.headers["flowbroker-dlq-reason"].contains(needle))
            .unwrap_or_else(|| panic!("no dead letter with {needle:?}: {dead:?}"))
            .clone()
    };
    let bad = by_reason("not valid JSON");
    assert_eq!(bad.headers["flowbroker-dlq-kind"], "bad_data");
    assert_eq!(
        bad.headers["ce_id"], "bad1",
        "the original headers are kept"
    );
    let null = by_reason("has no value");
    assert_eq!(null.headers["flowbroker-dlq-kind"], "not_cloudevent");
    let control = by_reason("control character U+001F");
    assert_eq!(control.headers["flowbroker-dlq-kind"], "bad_attribute");
    assert_eq!(control.headers["ce_id"], "bad3");
    assert!(control.headers["flowbroker-dlq-reason"].contains("pairid"));
    let dlq = by_reason("not a structured CloudEvent");
    assert_eq!(
        dlq.payload.as_deref(),
        Some(&b"this is not a cloudevent"[..])
    );
    assert_eq!(dlq.headers["flowbroker-dlq-topic"], "flowbroker.in");
    assert_eq!(dlq.headers["flowbroker-dlq-kind"], "not_cloudevent");
    assert!(dlq.headers.contains_key("flowbroker-dlq-offset"));
    assert!(dlq.headers["flowbroker-dlq-reason"].contains("not a structured CloudEvent"));
    wait_for(30, "P3 to complete after the bad record", || {
        broker.instances("join").into_iter().find(|i| {
            i["correlation"]["pairid"] == json!("P3") && i["status"] == json!("COMPLETED")
        })
    });
}

#[test]
fn http_ingress_and_admin_errors() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[("join.yaml", JOIN)], &[]);
    let client = reqwest::blocking::Client::new();
    let post = |id: &str, ty: &str, pair: &str| {
        client
            .post(format!("http://{}/v1/events", broker.http))
            .header("ce-specversion", "1.0")
            .header("ce-id", id)
            .header("ce-source", "/parts")
            .header("ce-type", ty)
            .header("ce-pairid", pair)
            .header("content-type", "application/json")
            .body(r#"{"x": 1}"#)
            .send()
            .unwrap()
    };
    let r = post("h1", "part.left", "H");
    assert_eq!(r.status().as_u16(), 202);
    let v: Value = r.json().unwrap();
    assert_eq!(v["joined"].as_array().unwrap().len(), 1, "{v}");
    // the same event again (a client retry): dropped, never applied twice
    let v: Value = post("h1", "part.left", "H").json().unwrap();
    assert!(v["rejected"].as_str().unwrap().contains("duplicate"), "{v}");
    assert!(v["joined"].as_array().unwrap().is_empty(), "{v}");
    let v: Value = post("h2", "part.right", "H").json().unwrap();
    assert_eq!(v["started"].as_array().unwrap().len(), 1, "{v}");
    let id = v["started"][0].as_str().unwrap().to_string();
    broker.wait_status(&id, "COMPLETED", 10);
    // not a CloudEvent
    let r = client
        .post(format!("http://{}/v1/events", broker.http))
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // a control character in an attribute (structured: a header cannot carry one)
    let r = client
        .post(format!("http://{}/v1/events", broker.http))
        .header("content-type", "application/cloudevents+json")
        .body(
            r#"{"specversion": "1.0", "id": "h3", "source": "/parts", "type": "part.left",
                "pairid": "H\u001f2", "data": {}}"#,
        )
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let why = r.text().unwrap();
    assert!(why.contains("pairid") && why.contains("U+001F"), "{why}");
    // unknown workflow and instance
    let (code, v) = broker.post("/v1/workflows/nope/instances", json!({}));
    assert_eq!(code, 404);
    assert!(v["error"].as_str().unwrap().contains("nope"));
    assert_eq!(broker.get("/v1/instances/nope").0, 404);
    let (code, _) = broker.post("/v1/workflows/join/instances", json!([1]));
    assert_eq!(code, 400, "input must be an object");
    // list filters
    let (_, v) = broker.get("/v1/instances?workflowId=join&status=completed");
    assert_eq!(v["instances"].as_array().unwrap().len(), 1);
}
