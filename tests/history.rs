//! Instance history stays bounded whatever the events carry (issue 11, item 3): payloads over
//! `history.inline_bytes` are stored beside their entry, which keeps a summary in their place;
//! an instance keeps at most `history.max_entries` entries; retention takes the payloads with
//! the instance; and the API still answers with every payload in full.

mod support;
use flowbroker::store::Table;
use serde_json::{json, Value};
use support::manual::Harness;
use support::*;

/// Each `loop.ping` is one history entry; `last: true` ends the instance.
const LOOP: &str = r#"
id: loop
name: loop
events:
- {name: Ping, type: loop.ping, source: /loop, correlation: [{contextAttributeName: lid}]}
states:
- name: Wait
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Ping]}]
  transition: {nextState: Check}
- name: Check
  type: switch
  dataConditions:
  - condition: "{{ $.[?(@.last == true)] }}"
    transition: {nextState: Done}
  default: {nextState: Wait}
- {name: Done, type: inject, data: {done: true}, end: {kind: default}}
"#;

fn blob(i: usize, bytes: usize) -> Value {
    json!({"n": i, "blob": "x".repeat(bytes), "last": false})
}

fn ping(h: &mut Harness, i: usize, data: Value) -> Value {
    h.event_with(
        &format!("p{i}"),
        "/loop",
        "loop.ping",
        &[("lid", "L1")],
        data,
    )
}

fn instance_of(outcome: &Value) -> String {
    let started = outcome["started"].as_array().unwrap();
    started[0].as_str().unwrap().to_string()
}

#[test]
fn large_payloads_are_kept_beside_the_entry_and_small_ones_inline() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |c| c.retention = "P1D".into());
    h.deploy("loop.yaml", LOOP);
    let id = instance_of(&ping(&mut h, 0, blob(0, 10_000)));
    ping(&mut h, 1, json!({"n": 1, "small": true}));
    let history = h.history(&id);
    assert_eq!(history.len(), 2);

    // the start event's 10 kB data: a summary in the entry, the payload in its own table
    let first = &history[0];
    let summary = &first["input"]["events"][0]["data"];
    assert_eq!(summary["$payload"], 0, "{first}");
    let bytes = summary["bytes"].as_u64().unwrap();
    assert!((10_000..10_100).contains(&bytes), "{summary}");
    assert_eq!(
        first["payloads"],
        json!([{"pointer": "/input/events/0/data"}])
    );
    assert!(
        serde_json::to_vec(first).unwrap().len() < 2_000,
        "the entry itself stays small: {first}"
    );
    // the small event stays in its entry as it came
    assert_eq!(
        history[1]["input"]["event"]["data"],
        json!({"n": 1, "small": true})
    );
    assert!(history[1].get("payloads").is_none());
    assert_eq!(h.table_len(Table::Payloads), 1);

    // retention takes the payloads with the instance
    let mut last = blob(2, 10);
    last["last"] = json!(true);
    ping(&mut h, 2, last);
    assert_eq!(h.stored(&id).unwrap()["instance"]["status"], "COMPLETED");
    h.clock.advance(chrono::Duration::days(2));
    h.tick();
    assert!(h.stored(&id).is_none());
    assert_eq!(h.history_len(&id), 0);
    assert_eq!(
        h.table_len(Table::Payloads),
        0,
        "payloads go with the instance"
    );
}

#[test]
fn an_instance_keeps_at_most_max_entries_and_drops_the_oldest_with_its_payloads() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |c| {
        c.history.max_entries = 3;
        c.history.inline_bytes = 100;
    });
    h.deploy("loop.yaml", LOOP);
    let id = instance_of(&ping(&mut h, 0, blob(0, 500)));
    for i in 1..10 {
        ping(&mut h, i, blob(i, 500));
        assert!(h.history_len(&id) <= 3);
        assert!(h.table_len(Table::Payloads) <= 3);
    }
    let history = h.history(&id);
    assert_eq!(history.len(), 3);
    // the newest three pings remain, each with its payload
    let kept: Vec<String> = history
        .iter()
        .map(|e| e["input"]["event"]["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept, ["p7", "p8", "p9"]);
    assert_eq!(h.table_len(Table::Payloads), 3);
    assert_eq!(
        h.stored(&id).unwrap()["history"],
        10,
        "entries keep counting"
    );
}

const CALL: &str = r#"
id: call
name: call
functions:
- {name: grow, resource: grow}
states:
- name: Grow
  type: operation
  start: {kind: default}
  actions:
  - functionRef: {refName: grow, parameters: {seed: "{{ $.seed }}"}}
  end: {kind: default}
"#;

#[test]
fn the_api_answers_with_payloads_in_full_on_request() {
    let kafka = Kafka::start();
    let big = "y".repeat(50_000);
    let fns = {
        let big = big.clone();
        Functions::start(move |_, body| (200, json!({"seed": body["seed"], "grown": big})))
    };
    let broker = Broker::start(
        &kafka,
        &[("call.yaml", CALL)],
        &[(
            "FLOWBROKER_FUNCTIONS",
            &format!("grow={}", fns.url("/grow")),
        )],
    );
    let (code, started) = broker.post("/v1/workflows/call/instances", json!({"seed": "s1"}));
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let done = broker.wait_status(&id, "COMPLETED", 60);

    // by default: the function's 50 kB result is a summary in its entry
    let history = done["history"].as_array().unwrap();
    let (seq, entry) = history
        .iter()
        .find(|e| e["input"]["kind"] == "actionResult")
        .map(|e| (e["seq"].as_u64().unwrap(), e))
        .expect("an actionResult entry");
    assert_eq!(entry["input"]["result"]["$payload"], 0, "{entry}");
    assert!(entry["input"]["result"]["bytes"].as_u64().unwrap() > 50_000);
    // the instance's own data holds the result as always
    assert_eq!(done["data"]["grown"], json!(big));

    // ?payloads=full puts it back, and so does the entry's own address
    let full = broker.get(&format!("/v1/instances/{id}?payloads=full")).1;
    let same = full["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["seq"] == seq)
        .unwrap();
    assert_eq!(same["input"]["result"], json!({"seed": "s1", "grown": big}));
    assert!(same.get("payloads").is_none());
    let (code, one) = broker.get(&format!("/v1/instances/{id}/history/{seq}"));
    assert_eq!(code, 200, "{one}");
    assert_eq!(one["input"]["result"]["grown"], json!(big));
    assert_eq!(one["seq"], seq);

    let (code, missing) = broker.get(&format!("/v1/instances/{id}/history/999"));
    assert_eq!(code, 404);
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("no history entry 999"),
        "{missing}"
    );
    let (code, bad) = broker.get(&format!("/v1/instances/{id}?payloads=some"));
    assert_eq!(code, 400, "{bad}");
}
