//! Durable functions on two brokers in one consumer group against one tansu: executions
//! spread over the state partitions of both; the Python SDK checkpoints through broker b's
//! listener (requests about a's executions are relayed to a, as behind any load balancer);
//! broker a is SIGKILLed while its executions wait; b takes its partitions over, fires their
//! waits and invokes them again. Every execution completes once, each step's side effect
//! once. The waits end after the hand-off has settled: a step that runs while the group
//! moves its partition (an eager rebalance takes b's own partitions away for a moment too)
//! cannot checkpoint, and its invocation is run again (docs/durable.md, "One invocation at a
//! time"), which would run that step twice.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
use support::durable::Host;
use support::*;

const N: usize = 12;

/// Longer than the group takes to notice the kill (the tests' 6 s session timeout) and
/// move every partition to b.
const WAIT_SECS: u64 = 15;

#[test]
fn executions_of_a_killed_broker_complete_once_on_the_other() {
    let kafka = Kafka::start();
    let b_http = format!("127.0.0.1:{}", free_port());
    let host = Host::start(&b_http, &["steps"]);
    let (file, text) = host.definition("steps");
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "12"),
        ("FLOWBROKER_DEDUPE_WINDOW", "PT0S"),
    ];
    let mut a = Broker::start(&kafka, &[(&file, &text)], &env);
    let b_env = [env[0], env[1], ("FLOWBROKER_HTTP_LISTEN", b_http.as_str())];
    let b = Broker::start(&kafka, &[(&file, &text)], &b_env);
    wait_for(60, "both brokers to own partitions", || {
        (!a.owned().is_empty() && !b.owned().is_empty()).then_some(())
    });
    let p = kafka.producer();
    for i in 0..N {
        p.send(&event(
            &format!("start-{i}"),
            "/orders",
            "flowbroker.workflow.start",
            &[("workflowid", "steps")],
            json!({"order": format!("o{i}"), "wait": WAIT_SECS}),
        ));
    }
    // every execution has run its first step and waits
    let waiting = wait_for(90, "every execution to wait", || {
        let all = b.instances("steps");
        (all.len() == N && all.iter().all(|i| i["status"] == "WAITING")).then_some(all)
    });
    let ids: Vec<String> = waiting
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    let on_a: BTreeSet<&String> = {
        let mine = a.owned();
        ids.iter()
            .filter(|id| mine.contains(&partition_of(id)))
            .collect()
    };
    assert!(!on_a.is_empty(), "a owns waiting executions");
    let charged_before = host
        .effects()
        .iter()
        .filter(|e| e["what"] == "charge")
        .count();
    a.kill();
    assert_eq!(charged_before, 0, "a was killed before any wait ended");
    wait_for(60, "b to own every partition", || {
        (b.owned().len() == 12).then_some(())
    });
    let charged_at_hand_off = host
        .effects()
        .iter()
        .filter(|e| e["what"] == "charge")
        .count();
    assert_eq!(
        charged_at_hand_off, 0,
        "no wait ended before the hand-off settled"
    );
    for id in &ids {
        let v = b.wait_status(id, "COMPLETED", 120);
        assert_eq!(v["output"]["shipped"], json!(true), "{id}: {v}");
    }
    assert_eq!(b.owned().len(), 12, "b took every partition over");
    for i in 0..N {
        let order = json!(format!("o{i}"));
        let loads = host
            .effects()
            .iter()
            .filter(|e| e["what"] == "load" && e["id"] == order)
            .count();
        assert_eq!(loads, 1, "order {order} loaded {loads} times");
        let charges = host
            .effects()
            .iter()
            .filter(|e| e["what"] == "charge" && e["id"] == order)
            .count();
        if charges != 1 {
            let id = waiting
                .iter()
                .find(|w| w["data"]["order"] == order)
                .and_then(|w| w["id"].as_str())
                .unwrap_or_default();
            let v = b.instance(id);
            let effects: Vec<_> = host
                .effects()
                .into_iter()
                .filter(|e| e["id"] == order)
                .collect();
            panic!(
                "order {order} charged {charges} times; effects {effects:?}; history {:#}; b's log: {}",
                v["history"],
                b.log().lines().filter(|l| l.contains(id) || l.contains("taken over")).collect::<Vec<_>>().join("\n")
            );
        }
    }
    let charges = host
        .effects()
        .iter()
        .filter(|e| e["what"] == "charge")
        .count();
    assert_eq!(charges, N, "each execution charged once");
    for id in &ids {
        let v = b.instance(id);
        let fired = v["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| {
                h["input"]["kind"] == "timerFired"
                    && h["input"]["id"]
                        .as_str()
                        .is_some_and(|t| t.ends_with("/wait"))
            })
            .count();
        assert_eq!(fired, 1, "{id}: the wait's timer fired once");
    }
}
