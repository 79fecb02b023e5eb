//! Over the real Kafka-protocol broker: subflows and foreach children, retries over real HTTP
//! with durable retry timers, onError after retries, an event-switch timeout, and cancel.

mod support;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use support::*;

const PARENT: &str = r#"
id: parent
name: parent
states:
- name: Each
  type: foreach
  start: {kind: default}
  inputCollection: "{{ $.orders }}"
  iterationParam: order
  outputCollection: "{{ $.handled }}"
  workflowId: child
  transition: {nextState: Summary}
- name: Summary
  type: subflow
  workflowId: child
  waitForCompletion: true
  end: {kind: default}
"#;

const CHILD: &str = r#"
id: child
name: child
states:
- name: Mark
  type: inject
  start: {kind: default}
  data: {handledBy: child}
  end: {kind: default}
"#;

const FLAKY: &str = r#"
id: flaky
name: flaky
functions:
- {name: charge, resource: charge}
states:
- name: Charge
  type: operation
  start: {kind: default}
  actions: [{functionRef: {refName: charge, parameters: {amount: "{{ $.amount }}"}}}]
  retry:
  - expression: "{{ $.errors[?(@.name == 'Busy')] }}"
    interval: PT1S
    maxAttempts: 3
  onError:
  - expression: "{{ $.errors[?(@.name == 'Busy')] }}"
    transition: {nextState: GaveUp}
  end: {kind: default}
- {name: GaveUp, type: inject, data: {gaveUp: true}, end: {kind: default}}
"#;

const SWITCH: &str = r#"
id: visa
name: visa
events:
- {name: Approved, type: visa.approved, source: /visa}
states:
- name: Decide
  type: switch
  start: {kind: default}
  eventConditions:
  - eventRef: Approved
    transition: {nextState: Yes}
  eventTimeout: PT1S
  default: {nextState: NoAnswer}
- {name: Yes, type: inject, data: {visa: approved}, end: {kind: default}}
- {name: NoAnswer, type: inject, data: {visa: unknown}, end: {kind: default}}
"#;

const HOLD: &str = r#"
id: hold
name: hold
events:
- {name: Release, type: hold.release, source: /hold}
states:
- name: Hold
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Release]}]
  end: {kind: default}
"#;

#[test]
fn children_retries_timeouts_and_cancel() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    // `charge` answers 503 Busy twice per amount, then succeeds; amount 0 is always busy
    let attempts: Arc<Mutex<HashMap<i64, u32>>> = Arc::default();
    let a2 = attempts.clone();
    let fns = Functions::start(move |_, body| {
        let amount = body["amount"].as_i64().unwrap();
        let mut a = a2.lock().unwrap();
        let n = a.entry(amount).or_default();
        *n += 1;
        if amount == 0 || *n <= 2 {
            (503, json!({"name": "Busy", "message": "try later"}))
        } else {
            (200, json!({"charged": amount}))
        }
    });
    let broker = Broker::start(
        &kafka,
        &[
            ("parent.yaml", PARENT),
            ("child.yaml", CHILD),
            ("flaky.yaml", FLAKY),
            ("visa.yaml", SWITCH),
            ("hold.yaml", HOLD),
        ],
        &[
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("charge={}", fns.url("/charge")),
            ),
            // lifecycle events in structured mode (application/cloudevents+json)
            ("FLOWBROKER_KAFKA_OUTPUT_MODE", "structured"),
        ],
    );
    let start = |wf: &str, input: serde_json::Value| {
        let (code, v) = broker.post(&format!("/v1/workflows/{wf}/instances"), input);
        assert_eq!(code, 201, "{v}");
        v["id"].as_str().unwrap().to_string()
    };

    // foreach over child workflows, then a subflow; children are instances of their own
    let p = start(
        "parent",
        json!({"orders": [{"id": 1}, {"id": 2}, {"id": 3}]}),
    );
    let done = broker.wait_status(&p, "COMPLETED", 30);
    assert_eq!(done["output"]["handled"].as_array().unwrap().len(), 3);
    assert_eq!(done["output"]["handled"][0]["order"], json!({"id": 1}));
    assert_eq!(done["output"]["handledBy"], json!("child"));
    let children = broker.instances("child");
    assert_eq!(children.len(), 4);
    assert!(children
        .iter()
        .all(|c| c["parentId"] == json!(p) && c["status"] == json!("COMPLETED")));
    // child ids contain `/`; the API takes them as they are
    let child = children[0]["id"].as_str().unwrap();
    assert!(child.contains('/'));
    assert_eq!(broker.instance(child)["parentId"], json!(p));
    let (code, _) = broker.post(&format!("/v1/instances/{child}/cancel"), json!({}));
    assert_eq!(code, 409, "a finished child cannot be cancelled");

    // retries wait on durable timers, then succeed; an always-busy call ends in onError
    let ok = start("flaky", json!({"amount": 5}));
    let done = broker.wait_status(&ok, "COMPLETED", 30);
    assert_eq!(done["output"]["charged"], json!(5));
    assert_eq!(attempts.lock().unwrap()[&5], 3);
    let busy = start("flaky", json!({"amount": 0}));
    let done = broker.wait_status(&busy, "COMPLETED", 30);
    assert_eq!(done["output"]["gaveUp"], json!(true));
    assert_eq!(
        attempts.lock().unwrap()[&0],
        4,
        "first try and three retries"
    );
    let keys: std::collections::BTreeSet<String> = fns
        .calls()
        .into_iter()
        .filter(|c| c.2["amount"] == json!(0))
        .map(|c| c.1)
        .collect();
    assert_eq!(keys.len(), 1, "retries carry the same idempotency key");

    // an event switch with no event takes its default after eventTimeout
    let v = start("visa", json!({}));
    let done = broker.wait_status(&v, "COMPLETED", 30);
    assert_eq!(done["output"]["visa"], json!("unknown"));

    // cancel a waiting instance
    let c = start("hold", json!({}));
    let (code, _) = broker.post(&format!("/v1/instances/{c}/cancel"), json!({}));
    assert_eq!(code, 202);
    broker.wait_status(&c, "CANCELLED", 10);
    out.lifecycle(&c, "cancelled", 10);
    let structured = out.all().into_iter().find(|r| r.event.is_some()).unwrap();
    assert!(structured.headers["content-type"].starts_with("application/cloudevents+json"));
    assert!(!structured.headers.contains_key("ce_id"));
    let (code, _) = broker.post(&format!("/v1/instances/{c}/cancel"), json!({}));
    assert_eq!(code, 409, "already finished");
}
