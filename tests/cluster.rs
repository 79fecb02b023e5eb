//! Several brokers in one consumer group against one real tansu (docs/scale.md): state
//! partitions move between them while an order stream flows, with duplicate detection by event
//! id off (`dedupe_window = "PT0S"`), so only source positions keep inputs from applying twice.
//! One broker is SIGKILLed mid-stream, one is added, one stops gracefully, and the killed one
//! comes back. Then every order completes once, on one instance per key, each input once in
//! its history, one produced id per logical event and one idempotency key per call.

mod support;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use support::*;

const ORDER: &str = r#"
id: order
name: order
functions:
- {name: charge, resource: CHARGE}
events:
- {name: Placed, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Done, type: order.done, kind: produced}
states:
- name: Placed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Placed]}]
  transition: {nextState: Paid}
- name: Paid
  type: event
  eventsActions:
  - eventRefs: [Paid]
    actions: [{functionRef: {refName: charge, parameters: {order: "{{ $.orderid }}"}}}]
  transition: {nextState: Settle}
- name: Settle
  type: delay
  timeDelay: PT1S
  end: {kind: event, produceEvent: {eventRef: Done, data: "{{ $.orderid }}"}}
"#;

fn env() -> Vec<(&'static str, String)> {
    vec![
        ("FLOWBROKER_DEDUPE_WINDOW", "PT0S".into()),
        ("FLOWBROKER_CLUSTER_PARTITIONS", "12".into()),
    ]
}

fn start(kafka: &Kafka, wf: &str, extra: &[(&str, String)]) -> Broker {
    let env: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Broker::start(kafka, &[("order.yaml", wf)], &env)
}

fn n() -> usize {
    std::env::var("FLOWBROKER_CLUSTER_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

#[test]
fn brokers_come_and_go_mid_stream_and_every_order_completes_once() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle", "flowbroker.out"]);
    let fns = Functions::start(|_, body| (200, json!({"charged": body["order"]})));
    let wf = ORDER.replace("CHARGE", &fns.url("/charge"));
    let mut a = start(&kafka, &wf, &env());
    let mut b = start(&kafka, &wf, &env());
    let c = start(&kafka, &wf, &env());
    let pubr = kafka.producer();
    let total = n();
    let mut rng = rand::rng();
    let mut d: Option<Broker> = None;
    let completed = |out: &Collector| out.events("flowbroker.instance.completed").len();
    let mut hit = BTreeMap::new();
    for i in 0..total {
        let order = format!("o-{i}");
        let placed = event(
            &format!("placed-{i}"),
            "/shop",
            "order.placed",
            &[("orderid", &order)],
            json!({"n": i}),
        );
        let paid = event(
            &format!("paid-{i}"),
            "/shop",
            "order.paid",
            &[("orderid", &order)],
            json!({"amount": i}),
        );
        // keyed at random: the two events of an order land on any input partitions, in any
        // order of consumption
        let (k1, k2): (u64, u64) = (rng.random(), rng.random());
        if rng.random_bool(0.5) {
            pubr.send_keyed(&placed, &k1.to_string());
            pubr.send_keyed(&paid, &k2.to_string());
        } else {
            pubr.send_keyed(&paid, &k2.to_string());
            pubr.send_keyed(&placed, &k1.to_string());
        }
        let faults = std::env::var("FLOWBROKER_CLUSTER_FAULTS")
            .unwrap_or_else(|_| "kill,add,stop,back".into());
        let at = |f: f64, what: &str| {
            i == (total as f64 * f) as usize && faults.split(',').any(|x| x == what)
        };
        if at(0.25, "kill") {
            hit.insert("kill", completed(&out));
            a.kill();
        }
        if at(0.45, "add") {
            hit.insert("add", completed(&out));
            d = Some(start(&kafka, &wf, &env()));
        }
        if at(0.65, "stop") {
            hit.insert("stop", completed(&out));
            b.terminate();
        }
        if at(0.8, "back") {
            hit.insert("back", completed(&out));
            a.start_again();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // the faults hit a stream in flight, not a finished one
    for (what, done) in &hit {
        assert!(*done < total, "{what} happened after every order completed");
    }
    assert!(
        a.log().contains("state partition taken over"),
        "the killed broker owned partitions before it died"
    );
    let live: Vec<&Broker> = [Some(&a), Some(&b), Some(&c), d.as_ref()]
        .into_iter()
        .flatten()
        .filter(|br| br.running())
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while completed(&out) < total {
        if std::time::Instant::now() > deadline {
            let mut report = String::new();
            let done: BTreeSet<String> = out
                .events("flowbroker.instance.completed")
                .iter()
                .map(|e| {
                    e.data.as_ref().unwrap()["instanceId"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect();
            for br in &live {
                let (_, v) = br.get("/v1/instances?workflowId=order&limit=100000");
                for i in v["instances"].as_array().cloned().unwrap_or_default() {
                    let id = i["id"].as_str().unwrap_or_default();
                    if !done.contains(id) {
                        report.push_str(&format!(
                            "{} {id} {} {} {}\n",
                            br.http, i["status"], i["state"], i["data"]
                        ));
                    }
                }
            }
            for br in &live {
                let m = reqwest::blocking::get(format!("http://{}/metrics", br.http))
                    .and_then(|r| r.text())
                    .unwrap_or_default();
                for l in m.lines().filter(|l| {
                    l.starts_with("flowbroker_buffered")
                        || l.starts_with("flowbroker_records_duplicate")
                        || l.starts_with("flowbroker_events_unmatched")
                }) {
                    report.push_str(&format!("{} {l}\n", br.http));
                }
            }
            panic!(
                "{} of {total} orders completed; not completed, per broker:\n{report}",
                completed(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // one instance per key: no more instances started than orders, each completed
    let started: BTreeSet<String> = out
        .events("flowbroker.instance.started")
        .iter()
        .map(|e| {
            e.data.as_ref().unwrap()["instanceId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(started.len(), total, "one instance per order");
    let mut by_order: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let ids: BTreeSet<String> = out
        .events("flowbroker.instance.completed")
        .iter()
        .map(|e| {
            e.data.as_ref().unwrap()["instanceId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), total, "distinct completed instances");
    // one produced id per logical event
    let mut done_ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in out.events("order.done") {
        done_ids
            .entry(e.data.clone().unwrap().as_str().unwrap().to_string())
            .or_default()
            .insert(e.id.clone());
    }
    assert_eq!(done_ids.len(), total, "every order produced its event");
    assert!(done_ids.values().all(|s| s.len() == 1), "{done_ids:?}");
    // a stable idempotency key per call
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, key, body) in fns.calls() {
        keys.entry(body["order"].as_str().unwrap().to_string())
            .or_default()
            .insert(key);
    }
    assert_eq!(keys.len(), total);
    assert!(keys.values().all(|s| s.len() == 1), "{keys:?}");
    // each input exactly once in its instance's history, read from the broker that owns it
    for id in &ids {
        let v = live
            .iter()
            .find_map(|br| {
                let (code, v) = br.get(&format!("/v1/instances/{id}"));
                (code == 200 && v["status"] == "COMPLETED").then_some(v)
            })
            .unwrap_or_else(|| panic!("no live broker shows {id} completed"));
        let order = v["data"]["orderid"].as_str().unwrap().to_string();
        by_order
            .entry(order.clone())
            .or_default()
            .insert(id.clone());
        let hist = v["history"].as_array().unwrap();
        let count = |pred: &dyn Fn(&Value) -> bool| hist.iter().filter(|h| pred(h)).count();
        let n = order.strip_prefix("o-").unwrap();
        for ev in [format!("placed-{n}"), format!("paid-{n}")] {
            let seen = count(&|h: &Value| {
                h["input"]["event"]["id"] == json!(ev) || h["input"]["events"][0]["id"] == json!(ev)
            });
            assert_eq!(seen, 1, "{ev} in {id}: {hist:#?}");
        }
        assert_eq!(
            count(&|h: &Value| h["input"]["kind"] == "timerFired"),
            1,
            "{id}"
        );
        assert_eq!(
            count(&|h: &Value| h["input"]["kind"] == "actionResult"),
            1,
            "{id}"
        );
    }
    assert_eq!(by_order.len(), total, "every order has its instance");
    assert!(by_order.values().all(|s| s.len() == 1), "{by_order:?}");
}
