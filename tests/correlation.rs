//! Correlation through the real core and store (manual clock, no Kafka): keys on several
//! attributes with a fixed value, case-insensitive names, one active instance per key, early
//! events buffered with a TTL, and events that match nothing.

mod support;
use chrono::Duration;
use serde_json::json;
use support::manual::{list, Harness};
use support::metric_sum;

const CLAIMS: &str = r#"
id: claims
name: claims
events:
- name: Filed
  type: claim.filed
  source: /claims
  correlation:
  - {contextAttributeName: customerId}
  - {contextAttributeName: region}
  - {contextAttributeName: channel, contextAttributeValue: web}
- name: Documented
  type: claim.documented
  source: /claims
  correlation:
  - {contextAttributeName: customerId}
  - {contextAttributeName: region}
  - {contextAttributeName: channel, contextAttributeValue: web}
  metadata: {bufferTtl: PT1H}
states:
- name: Filed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Filed]}]
  transition: {nextState: Pause}
- name: Pause
  type: delay
  timeDelay: PT10M
  transition: {nextState: Docs}
- name: Docs
  type: event
  eventsActions:
  - eventRefs: [Documented]
    eventDataFilter: {dataOutputPath: "{{ $.data.doc }}"}
  end: {kind: default}
"#;

#[test]
fn several_attributes_fixed_values_one_active_instance_and_early_events() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |_| {});
    h.deploy("claims.yaml", CLAIMS);
    let web = |c: &'static str, r: &'static str| {
        vec![("customerid", c), ("region", r), ("channel", "web")]
    };
    // two keys differing in one attribute: two instances
    let a = h.event_with("f1", "/claims", "claim.filed", &web("c1", "eu"), json!({}));
    let b = h.event_with("f2", "/claims", "claim.filed", &web("c1", "us"), json!({}));
    let (a, b) = (
        list(&a, "started")[0].clone(),
        list(&b, "started")[0].clone(),
    );
    assert_ne!(a, b);
    // the same key again while active: no second instance (it is buffered for the first, and
    // dropped when that one finishes without waiting for it)
    let again = h.event_with("f3", "/claims", "claim.filed", &web("c1", "eu"), json!({}));
    assert!(list(&again, "started").is_empty(), "{again}");
    assert_eq!(list(&again, "buffered"), vec![a.clone()]);
    // the wrong fixed value, or a missing attribute: matches nothing
    let wrong = h.event_with(
        "d0",
        "/claims",
        "claim.documented",
        &[("customerid", "c1"), ("region", "eu"), ("channel", "phone")],
        json!({}),
    );
    assert!(
        !wrong["rejected"].is_string()
            && list(&wrong, "buffered").is_empty()
            && list(&wrong, "delivered").is_empty(),
        "{wrong}"
    );
    let missing = h.event_with(
        "d00",
        "/claims",
        "claim.documented",
        &[("customerid", "c1")],
        json!({}),
    );
    assert!(list(&missing, "buffered").is_empty() && list(&missing, "delivered").is_empty());
    // early: documents arrive during the delay, attribute names in another case
    let early = h.event_with(
        "d1",
        "/claims",
        "claim.documented",
        &[("CustomerId", "c1"), ("REGION", "eu"), ("channel", "web")],
        json!({"doc": "A"}),
    );
    assert_eq!(list(&early, "buffered"), vec![a.clone()]);
    let early_b = h.event_with(
        "d2",
        "/claims",
        "claim.documented",
        &web("c1", "us"),
        json!({"doc": "B"}),
    );
    assert_eq!(list(&early_b, "buffered"), vec![b.clone()]);
    // both delays end within the TTL: each buffered event goes to its own instance
    h.clock.advance(Duration::minutes(10));
    h.tick();
    let ia = h.stored(&a).unwrap();
    assert_eq!(ia["instance"]["status"], "COMPLETED", "{ia}");
    assert_eq!(ia["instance"]["data"]["doc"], "A");
    assert_eq!(
        ia["instance"]["data"]["region"], "eu",
        "correlation values join the data"
    );
    let ib = h.stored(&b).unwrap();
    assert_eq!(ib["instance"]["status"], "COMPLETED", "{ib}");
    // f3, buffered for `a` and never waited for, went when `a` finished; the count that
    // spares scans of an empty buffer agrees with the table
    assert!(h.counter_with("flowbroker_buffered_events_total", "outcome=\"dropped\"") >= 1);
    assert_eq!(h.table_len(flowbroker::store::Table::Buffer), 0);
    assert_eq!(metric_sum(&h.gauges(), "flowbroker_buffered_events", ""), 0);
    // keys are index entries: a finished instance frees its key for a new start
    let c = h.event_with("f4", "/claims", "claim.filed", &web("c1", "eu"), json!({}));
    assert_eq!(list(&c, "started").len(), 1, "{c}");
}

#[test]
fn buffered_events_expire_after_their_ttl() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |_| {});
    h.deploy(
        "claims.yaml",
        &CLAIMS.replace("timeDelay: PT10M", "timeDelay: PT2H"),
    );
    let web = [("customerid", "c9"), ("region", "eu"), ("channel", "web")];
    let s = h.event_with("f1", "/claims", "claim.filed", &web, json!({}));
    let id = list(&s, "started")[0].clone();
    let e = h.event_with(
        "d1",
        "/claims",
        "claim.documented",
        &web,
        json!({"doc": "late"}),
    );
    assert_eq!(list(&e, "buffered"), vec![id.clone()]);
    h.clock.advance(Duration::minutes(61));
    h.tick(); // sweeps the expired event
    h.clock.advance(Duration::minutes(60));
    h.tick(); // the delay ends; nothing buffered is left
    let inst = h.stored(&id).unwrap();
    assert_eq!(inst["instance"]["state"], "Docs");
    assert_eq!(inst["instance"]["status"], "WAITING", "{inst}");
}

#[test]
fn an_event_that_arrives_before_its_instance_starts_is_held_for_it() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |_| {});
    h.deploy("claims.yaml", CLAIMS);
    let web = [("customerid", "c7"), ("region", "eu"), ("channel", "web")];
    // the documents overtake the filing (another partition, a slow producer)
    let early = h.event_with(
        "d1",
        "/claims",
        "claim.documented",
        &web,
        json!({"doc": "first"}),
    );
    assert_eq!(list(&early, "held").len(), 1, "{early}");
    assert!(list(&early, "started").is_empty());
    let s = h.event_with("f1", "/claims", "claim.filed", &web, json!({}));
    let id = list(&s, "started")[0].clone();
    h.clock.advance(Duration::minutes(10));
    h.tick();
    let inst = h.stored(&id).unwrap();
    assert_eq!(inst["instance"]["status"], "COMPLETED", "{inst}");
    assert_eq!(inst["instance"]["data"]["doc"], "first");
    // a held event for a key that never starts expires with its TTL (1 h here)
    let lone = [
        ("customerid", "nobody"),
        ("region", "eu"),
        ("channel", "web"),
    ];
    let r = h.event_with(
        "d2",
        "/claims",
        "claim.documented",
        &lone,
        json!({"doc": "x"}),
    );
    assert_eq!(list(&r, "held").len(), 1);
    assert!(
        metric_sum(&h.gauges(), "flowbroker_buffered_events", "") == 1,
        "{}",
        h.gauges()
    );
    h.clock.advance(Duration::minutes(61));
    h.tick();
    assert!(
        metric_sum(&h.gauges(), "flowbroker_buffered_events", "") == 0,
        "{}",
        h.gauges()
    );
    let s = h.event_with("f2", "/claims", "claim.filed", &lone, json!({}));
    let id = list(&s, "started")[0].clone();
    h.clock.advance(Duration::minutes(10));
    h.tick();
    let inst = h.stored(&id).unwrap();
    assert_eq!(
        inst["instance"]["status"], "WAITING",
        "the expired event is gone: {inst}"
    );
}

/// A sub-workflow waits for an event only its parent defines: the broker's index routes it to
/// the child instance (correlated on the key the child pins), and the parent, which waits for
/// its child by default, completes with the child's result.
#[test]
fn a_child_receives_an_event_only_its_parent_defines() {
    let parent = r#"
id: visa
name: visa
events:
- name: Approved
  type: visa.approved
  source: /desk
  correlation: [{contextAttributeName: applicantId}]
states:
- {name: Handle, type: SUBFLOW, workflowId: approval, start: {kind: default}, end: {kind: default}}
"#;
    let child = r#"
id: approval
name: approval
states:
- name: Wait
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Approved]}]
  end: {kind: default}
"#;
    let mut h = Harness::new("2026-01-01T00:00:00Z", |_| {});
    h.deploy("approval.yaml", child);
    h.deploy("visa.yaml", parent);
    h.sync();
    let id = h.start("visa").unwrap();
    let child_id = format!("{id}/1/sub");
    assert_eq!(
        h.stored(&child_id).unwrap()["instance"]["status"],
        "WAITING"
    );
    assert_eq!(h.stored(&id).unwrap()["instance"]["status"], "RUNNING");
    let routed = h.event_with(
        "e1",
        "/desk",
        "visa.approved",
        &[("applicantid", "a-7")],
        json!({"granted": true}),
    );
    assert_eq!(
        list(&routed, "delivered"),
        vec![child_id.clone()],
        "{routed}"
    );
    assert_eq!(
        h.stored(&child_id).unwrap()["instance"]["status"],
        "COMPLETED"
    );
    let done = h.stored(&id).unwrap();
    assert_eq!(done["instance"]["status"], "COMPLETED");
    assert_eq!(done["instance"]["output"]["granted"], json!(true), "{done}");
    assert_eq!(
        done["instance"]["output"]["applicantId"],
        json!("a-7"),
        "{done}"
    );
}

/// Fifty instances wait for the same event definition, told apart by an expression value
/// (`{{ $.order }}`): an event reaches its one instance through the index, and no other
/// instance is tried and refused (the index holds the expression's value).
#[test]
fn an_expression_correlation_value_is_an_index_lookup() {
    let wf = r#"
id: shipping
name: shipping
events:
- name: Shipped
  type: order.shipped
  source: /warehouse
  correlation: [{contextAttributeName: orderid, contextAttributeValue: "{{ $.order }}"}]
states:
- name: Wait
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Shipped]}]
  end: {kind: default}
"#;
    let mut h = Harness::new("2026-01-01T00:00:00Z", |_| {});
    h.deploy("shipping.yaml", wf);
    h.sync();
    let ids: Vec<String> = (0..50)
        .map(|i| {
            h.start_with("shipping", json!({"order": format!("o-{i}")}))
                .unwrap()
        })
        .collect();
    let routed = h.event_with(
        "s7",
        "/warehouse",
        "order.shipped",
        &[("orderid", "o-7")],
        json!({}),
    );
    assert_eq!(list(&routed, "delivered"), vec![ids[7].clone()], "{routed}");
    assert_eq!(
        h.stored(&ids[7]).unwrap()["instance"]["status"],
        "COMPLETED"
    );
    assert_eq!(h.stored(&ids[8]).unwrap()["instance"]["status"], "WAITING");
    assert_eq!(h.counter("flowbroker_correlation_refused_total"), 0);
    // a value no instance expects reaches none
    let routed = h.event_with(
        "s99",
        "/warehouse",
        "order.shipped",
        &[("orderid", "o-99")],
        json!({}),
    );
    assert!(list(&routed, "delivered").is_empty(), "{routed}");
    assert_eq!(h.counter("flowbroker_correlation_refused_total"), 0);
    assert_eq!(h.gauge("WAITING"), 49);
}

/// Instances that pinned `customerId` (from their start event) and wait for an event that
/// also correlates on `region`, which none has pinned: an event reaches only the instance of
/// its customer, through the index, and pins the region.
#[test]
fn a_partly_pinned_key_is_an_index_lookup() {
    let wf = r#"
id: claims2
name: claims2
events:
- name: Filed
  type: claim.filed
  source: /claims
  correlation: [{contextAttributeName: customerId}]
- name: Assessed
  type: claim.assessed
  source: /claims
  correlation: [{contextAttributeName: customerId}, {contextAttributeName: region}]
- name: Paid
  type: claim.paid
  source: /claims
  correlation: [{contextAttributeName: customerId}, {contextAttributeName: region}]
states:
- name: Filed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Filed]}]
  transition: {nextState: Assess}
- name: Assess
  type: event
  eventsActions: [{eventRefs: [Assessed]}]
  transition: {nextState: Pay}
- name: Pay
  type: event
  eventsActions: [{eventRefs: [Paid]}]
  end: {kind: default}
"#;
    let mut h = Harness::new("2026-01-01T00:00:00Z", |_| {});
    h.deploy("claims2.yaml", wf);
    let ids: Vec<String> = (0..40)
        .map(|i| {
            let c = format!("c{i}");
            let r = h.event_with(
                &format!("f{i}"),
                "/claims",
                "claim.filed",
                &[("customerid", &c)],
                json!({}),
            );
            list(&r, "started")[0].clone()
        })
        .collect();
    let routed = h.event_with(
        "a3",
        "/claims",
        "claim.assessed",
        &[("customerid", "c3"), ("region", "eu")],
        json!({}),
    );
    assert_eq!(list(&routed, "delivered"), vec![ids[3].clone()], "{routed}");
    assert_eq!(h.counter("flowbroker_correlation_refused_total"), 0);
    // now fully pinned: a payment for another region does not reach it, the right one does
    let other = h.event_with(
        "p1",
        "/claims",
        "claim.paid",
        &[("customerid", "c3"), ("region", "us")],
        json!({}),
    );
    assert!(list(&other, "delivered").is_empty(), "{other}");
    let paid = h.event_with(
        "p2",
        "/claims",
        "claim.paid",
        &[("customerid", "c3"), ("region", "eu")],
        json!({}),
    );
    assert_eq!(list(&paid, "delivered"), vec![ids[3].clone()], "{paid}");
    assert_eq!(
        h.stored(&ids[3]).unwrap()["instance"]["status"],
        "COMPLETED"
    );
    assert_eq!(h.counter("flowbroker_correlation_refused_total"), 0);
    assert_eq!(h.gauge("WAITING"), 39);
}
