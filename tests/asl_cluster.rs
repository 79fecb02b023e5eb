//! ASL machines on two brokers in one consumer group against one real tansu (docs/scale.md):
//! machines started by CloudEvents wait on `.waitForTaskToken` tasks spread over the state
//! partitions of both brokers; one broker is SIGKILLed while they wait; the workers' answers,
//! addressed by the task token alone, reach the instances on the partitions the other broker
//! took over; then a Wait armed after the hand-off fires. Every machine completes once, each
//! token answer applied once.

mod support;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use support::*;

const REVIEW: &str = r#"{
  "StartAt": "Review",
  "States": {
    "Review": {
      "Type": "Task",
      "Resource": "arn:aws:states:::review.waitForTaskToken",
      "Parameters": {"doc.$": "$.doc"},
      "TimeoutSeconds": 600,
      "ResultPath": "$.verdict",
      "Next": "Cool"
    },
    "Cool": {"Type": "Wait", "Seconds": 1, "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}"#;

const N: usize = 24;

#[test]
fn token_answers_find_their_machines_after_a_broker_is_killed() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "12"),
        ("FLOWBROKER_DEDUPE_WINDOW", "PT0S"),
    ];
    let mut a = Broker::start(&kafka, &[("review.asl.json", REVIEW)], &env);
    let b = Broker::start(&kafka, &[("review.asl.json", REVIEW)], &env);
    wait_for(60, "both brokers to own partitions", || {
        (!a.owned().is_empty() && !b.owned().is_empty()).then_some(())
    });
    let p = kafka.producer();
    for i in 0..N {
        p.send(&event(
            &format!("start-{i}"),
            "/docs",
            "flowbroker.workflow.start",
            &[("workflowid", "review")],
            json!({"doc": i}),
        ));
    }
    // every machine has sent its task event: the token and the instance it belongs to
    let asked = out.wait_events("flowbroker.task.requested", N, 90);
    let tokens: BTreeMap<String, String> = asked
        .iter()
        .map(|e| {
            (
                e.attribute("workflowinstanceid").unwrap(),
                e.attribute("tasktoken").unwrap(),
            )
        })
        .collect();
    assert_eq!(tokens.len(), N, "one machine per start event");
    let on_a: BTreeSet<&String> = {
        let mine = a.owned();
        tokens
            .keys()
            .filter(|id| mine.contains(&partition_of(id)))
            .collect()
    };
    assert!(!on_a.is_empty(), "a owns machines waiting on their tokens");
    a.kill();
    // the answers carry only the token; the ones for a's machines reach b once it owns them
    for (n, token) in tokens.values().enumerate() {
        p.send(&event(
            &format!("verdict-{n}"),
            "/reviewers",
            "flowbroker.task.success",
            &[("tasktoken", token)],
            json!({"ok": true, "n": n}),
        ));
    }
    wait_for(120, "every machine to complete", || {
        let done: BTreeSet<String> = out
            .events("flowbroker.instance.completed")
            .iter()
            .filter_map(|e| e.data.as_ref()?["instanceId"].as_str().map(str::to_string))
            .collect();
        (done.len() == N).then_some(())
    });
    assert_eq!(b.owned().len(), 12, "b took every partition over");
    for id in tokens.keys() {
        let v = b.instance(id);
        assert_eq!(v["status"], "COMPLETED", "{id}: {v}");
        assert_eq!(v["output"]["verdict"]["ok"], json!(true), "{id}");
        let history = v["history"].as_array().unwrap();
        let answers = history
            .iter()
            .filter(|h| h["input"]["kind"] == "event")
            .count();
        let fired = history
            .iter()
            .filter(|h| h["input"]["kind"] == "timerFired")
            .count();
        assert_eq!((answers, fired), (1, 1), "{id}: {history:?}");
    }
    // every completion was sent once per machine (a re-send after the hand-off keeps its id)
    let completions = out.events("flowbroker.instance.completed");
    assert_eq!(completions.len(), N);
}
