//! Crash soak: a stream of correlated events and function calls while the broker is SIGKILLed
//! again and again at arbitrary moments. Sizes come from the environment so the same test
//! runs small in CI and big by hand:
//! `FLOWBROKER_SOAK_N=1000 FLOWBROKER_SOAK_KILLS=8 cargo test --release --test broker_soak`.

mod support;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::*;

const FLOW: &str = r#"
id: soak
name: soak
events:
- {name: Opened, type: case.opened, source: /soak, correlation: [{contextAttributeName: caseid}]}
- {name: Closed, type: case.closed, source: /soak, correlation: [{contextAttributeName: caseid}]}
- {name: Done, type: case.done, kind: produced}
functions:
- {name: check, resource: check}
states:
- name: Open
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Opened]
    actions:
    - {functionRef: {refName: check, parameters: {case: "{{ $.caseid }}", step: 1}}}
    - {functionRef: {refName: check, parameters: {case: "{{ $.caseid }}", step: 2}}}
  transition: {nextState: Close}
- name: Close
  type: event
  eventsActions:
  - eventRefs: [Closed]
    eventDataFilter: {dataOutputPath: "{{ $.data.verdict }}"}
  transition: {nextState: Settle}
- name: Settle
  type: delay
  timeDelay: PT0.5S
  end:
    kind: event
    produceEvent: {eventRef: Done, data: "{{ $ }}"}
"#;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn repeated_sigkills_under_load_lose_nothing_and_apply_nothing_twice() {
    let n = env_or("FLOWBROKER_SOAK_N", 60);
    let kills = env_or("FLOWBROKER_SOAK_KILLS", 3);
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    let fns = Functions::start(|_, body| {
        std::thread::sleep(Duration::from_millis(20));
        (200, json!({format!("step{}", body["step"]): body["case"]}))
    });
    let mut broker = Broker::start(
        &kafka,
        &[("soak.yaml", FLOW)],
        &[
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("check={}", fns.url("/check")),
            ),
            ("FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS", "3000"),
        ],
    );
    // the stream: opened, then closed a little later, for every case
    let sent = Arc::new(AtomicUsize::new(0));
    let publisher = {
        let p = kafka.producer();
        let sent = sent.clone();
        std::thread::spawn(move || {
            for i in 0..n {
                let case = format!("C{i:05}");
                p.send(&event(
                    &format!("o{i}"),
                    "/soak",
                    "case.opened",
                    &[("caseid", &case)],
                    json!({}),
                ));
                if i >= 3 {
                    let j = i - 3;
                    let c = format!("C{j:05}");
                    p.send(&event(
                        &format!("x{j}"),
                        "/soak",
                        "case.closed",
                        &[("caseid", &c)],
                        json!({"verdict": "ok"}),
                    ));
                }
                sent.store(i + 1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
            for j in n.saturating_sub(3)..n {
                let c = format!("C{j:05}");
                p.send(&event(
                    &format!("x{j}"),
                    "/soak",
                    "case.closed",
                    &[("caseid", &c)],
                    json!({"verdict": "ok"}),
                ));
            }
        })
    };
    // kill at spread-out points of the stream
    for k in 1..=kills {
        let at = n * k / (kills + 1);
        wait_for(120, "the stream to progress", || {
            (sent.load(Ordering::Relaxed) >= at).then_some(())
        });
        broker.kill();
        std::thread::sleep(Duration::from_millis(200)); // the stream goes on while it is down
        broker.restart();
    }
    publisher.join().unwrap();

    let done = wait_for(300, "every case to finish", || {
        let d = out.events("case.done");
        (d.len() >= n).then_some(d)
    });
    let instances = broker.instances("soak");
    assert_eq!(instances.len(), n, "one instance per case");
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    for i in &instances {
        assert_eq!(i["status"], json!("COMPLETED"), "{i}");
        let id = i["id"].as_str().unwrap();
        let full = broker.instance(id);
        let kinds: Vec<String> = full["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["input"]["kind"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "start",
                "actionResult",
                "actionResult",
                "event",
                "timerFired"
            ],
            "each input applied once for {id}"
        );
        let o = &full["output"];
        assert_eq!(o["step1"], o["caseid"]);
        assert_eq!(o["step2"], o["caseid"]);
        *per_kind.entry(o["verdict"].to_string()).or_default() += 1;
    }
    assert_eq!(per_kind.get("\"ok\""), Some(&n));
    let ids: BTreeSet<String> = done.iter().map(|e| e.id.clone()).collect();
    let expected: BTreeSet<String> = instances
        .iter()
        .map(|i| flowbroker::engine::produce_event_id(i["id"].as_str().unwrap(), 0))
        .collect();
    assert_eq!(
        ids, expected,
        "every produced id, each the deterministic one"
    );
    assert_eq!(out.events("flowbroker.instance.completed").len(), n);
    let keys: BTreeSet<String> = fns.calls().into_iter().map(|c| c.1).collect();
    assert_eq!(
        keys.len(),
        2 * n,
        "two actions per case, each with one idempotency key"
    );
}
