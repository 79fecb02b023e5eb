//! Amazon States Language machines on the running broker over a real Kafka-protocol broker
//! (tansu): Task calls with Retry and Catch, Parallel and Map, a callback completed by an
//! event carrying the task token, machines (and a Serverless Workflow) started by a
//! CloudEvent, a Wait that survives a SIGKILL, and a machine written with intrinsic
//! functions, variables and a Map's tolerated failures.

mod support;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::*;

const ORDER: &str = r#"{
  "Comment": "charge with retries, ship every item, decline politely",
  "StartAt": "Charge",
  "States": {
    "Charge": {
      "Type": "Task",
      "Resource": "arn:aws:lambda:eu-west-1:123456789012:function:charge",
      "Parameters": {"amount.$": "$.amount", "order.$": "$$.Execution.Input.order"},
      "ResultPath": "$.charge",
      "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 1.0}],
      "Catch": [{"ErrorEquals": ["Declined"], "ResultPath": "$.declined", "Next": "Sorry"}],
      "Next": "Prepare"
    },
    "Prepare": {
      "Type": "Parallel",
      "Branches": [
        {"StartAt": "Label", "States": {"Label": {"Type": "Task", "Resource": "LABEL_URL", "End": true}}},
        {"StartAt": "Invoice", "States": {"Invoice": {"Type": "Pass", "Parameters": {"total.$": "$.amount"}, "End": true}}}
      ],
      "ResultPath": "$.prepared",
      "Next": "Ship"
    },
    "Ship": {
      "Type": "Map",
      "ItemsPath": "$.items",
      "MaxConcurrency": 2,
      "ItemSelector": {"sku.$": "$$.Map.Item.Value", "n.$": "$$.Map.Item.Index"},
      "ItemProcessor": {"StartAt": "Pack", "States": {
        "Pack": {"Type": "Task", "Resource": "PACK_URL", "End": true}}},
      "ResultPath": "$.parcels",
      "End": true
    },
    "Sorry": {"Type": "Pass", "Result": "declined", "ResultPath": "$.note", "End": true}
  }
}"#;

#[test]
fn tasks_retry_and_catch_and_parallel_and_map_run_on_the_broker() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let busy = Arc::new(AtomicUsize::new(0));
    let b2 = busy.clone();
    let fns = Functions::start(move |path, body| match path {
        // the first two charges of order o1 are busy; o2 is declined
        "/charge" if body["order"] == json!("o2") => {
            (402, json!({"name": "Declined", "message": "card declined"}))
        }
        "/charge" if b2.fetch_add(1, Ordering::SeqCst) < 2 => {
            (503, json!({"name": "Busy", "message": "try later"}))
        }
        "/charge" => (
            200,
            json!({"receipt": format!("r-{}", body["order"].as_str().unwrap_or("?"))}),
        ),
        "/label" => (200, json!({"label": "L1"})),
        "/pack" => (200, json!({"parcel": body["sku"], "at": body["n"]})),
        _ => (404, json!({})),
    });
    let machine = ORDER
        .replace("LABEL_URL", &fns.url("/label"))
        .replace("PACK_URL", &fns.url("/pack"));
    let broker = Broker::start(
        &kafka,
        &[("order.asl.json", &machine)],
        &[(
            "FLOWBROKER_FUNCTIONS",
            &format!(
                "arn:aws:lambda:eu-west-1:123456789012:function:charge={}",
                fns.url("/charge")
            ),
        )],
    );
    let (code, wf) = wait_for(30, "the machine to deploy", || {
        let (code, v) = broker.get("/v1/workflows/order");
        (code == 200).then_some((code, v))
    });
    assert_eq!(code, 200);
    assert_eq!(wf["language"], json!("asl"));
    assert_eq!(wf["states"][2], json!({"name": "Ship", "type": "Map"}));

    let (code, started) = broker.post(
        "/v1/workflows/order/instances",
        json!({"order": "o1", "amount": 30, "items": ["a", "b", "c"]}),
    );
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let done = broker.wait_status(&id, "COMPLETED", 60);
    assert_eq!(
        done["output"],
        json!({
            "order": "o1", "amount": 30, "items": ["a", "b", "c"],
            "charge": {"receipt": "r-o1"},
            "prepared": [{"label": "L1"}, {"total": 30}],
            "parcels": [{"parcel": "a", "at": 0}, {"parcel": "b", "at": 1}, {"parcel": "c", "at": 2}]
        })
    );
    // three charge attempts, each with its own idempotency key (the attempt is in it)
    let charges: Vec<String> = fns
        .calls()
        .into_iter()
        .filter(|(p, ..)| p == "/charge")
        .map(|(_, k, _)| k)
        .collect();
    assert_eq!(charges.len(), 3, "{charges:?}");
    for (n, k) in charges.iter().enumerate() {
        assert_eq!(*k, format!("{id}/1/t{n}"));
    }
    let completed = out.lifecycle(&id, "completed", 30);
    assert_eq!(
        completed.data.unwrap()["output"]["charge"],
        json!({"receipt": "r-o1"})
    );

    // a declined charge is caught: no retry (Busy only), the catcher's state ends the run
    let (_, started) = broker.post(
        "/v1/workflows/order/instances",
        json!({"order": "o2", "amount": 5, "items": []}),
    );
    let id2 = started["id"].as_str().unwrap().to_string();
    let done = broker.wait_status(&id2, "COMPLETED", 60);
    assert_eq!(done["output"]["note"], json!("declined"));
    assert_eq!(
        done["output"]["declined"],
        json!({"Error": "Declined", "Cause": "card declined"})
    );
    let graph = broker
        .request(
            reqwest::Method::GET,
            &format!("/v1/instances/{id2}/graph?format=mermaid"),
        )
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(graph.contains("Sorry"), "{graph}");
}

const APPROVAL: &str = r#"{
  "StartAt": "Approve",
  "States": {
    "Approve": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"request.$": "$.request", "token.$": "$$.Task.Token"},
      "HeartbeatSeconds": 600,
      "TimeoutSeconds": 3600,
      "ResultPath": "$.approval",
      "End": true
    }
  }
}"#;

const HELLO_SW: &str = r#"
id: hello
name: hello
states:
- name: Say
  type: inject
  start: {kind: default}
  data: {said: hello}
  end: {kind: default}
"#;

#[test]
fn a_start_event_starts_a_machine_whose_callback_an_event_with_the_token_completes() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    let broker = Broker::start(
        &kafka,
        &[("approval.asl.json", APPROVAL), ("hello.yaml", HELLO_SW)],
        &[],
    );
    wait_for(30, "both workflows to deploy", || {
        let ok = broker.get("/v1/workflows/approval").0 == 200
            && broker.get("/v1/workflows/hello").0 == 200;
        ok.then_some(())
    });
    let p = kafka.producer();
    let start = event(
        "s1",
        "/requests",
        "flowbroker.workflow.start",
        &[("workflowid", "approval")],
        json!({"request": "more budget"}),
    );
    p.send(&start);
    // the task's event carries the token
    let asked = out.wait_events("flowbroker.task.requested", 1, 60);
    let token = asked[0]
        .attribute("tasktoken")
        .expect("tasktoken attribute");
    let id = asked[0].attribute("workflowinstanceid").unwrap();
    assert_eq!(
        asked[0].data,
        Some(json!({"request": "more budget", "token": token}))
    );
    assert_eq!(broker.instance(&id)["status"], json!("WAITING"));
    // the same start event again (redelivered) starts nothing new
    p.send(&start);
    // a heartbeat, then the answer, both addressed by the token alone
    p.send(&event(
        "hb1",
        "/approver",
        "flowbroker.task.heartbeat",
        &[("tasktoken", &token)],
        json!({}),
    ));
    p.send(&event(
        "ok1",
        "/approver",
        "flowbroker.task.success",
        &[("tasktoken", &token)],
        json!({"approved": true, "by": "ann"}),
    ));
    let done = broker.wait_status(&id, "COMPLETED", 60);
    assert_eq!(
        done["output"],
        json!({"request": "more budget", "approval": {"approved": true, "by": "ann"}})
    );
    out.lifecycle(&id, "completed", 30);
    assert_eq!(broker.instances("approval").len(), 1);

    // the same convention starts a Serverless Workflow
    p.send(&event(
        "s2",
        "/requests",
        "flowbroker.workflow.start",
        &[("workflowid", "hello")],
        json!({"who": "bob"}),
    ));
    let done = wait_for(60, "hello to be started and completed", || {
        broker
            .instances("hello")
            .into_iter()
            .find(|i| i["status"] == json!("COMPLETED"))
    });
    let id = done["id"].as_str().unwrap();
    assert_eq!(
        broker.instance(id)["output"],
        json!({"who": "bob", "said": "hello"})
    );
}

const PAUSE: &str = r#"{
  "StartAt": "Pause",
  "States": {
    "Pause": {"Type": "Wait", "SecondsPath": "$.pause", "Next": "Stamp"},
    "Stamp": {"Type": "Pass", "Parameters": {"entered.$": "$$.State.EnteredTime", "started.$": "$$.Execution.StartTime"}, "End": true}
  }
}"#;

#[test]
fn a_wait_survives_a_sigkill_and_fires_once() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let mut broker = Broker::start(&kafka, &[("pause.asl.json", PAUSE)], &[]);
    wait_for(30, "the machine to deploy", || {
        (broker.get("/v1/workflows/pause").0 == 200).then_some(())
    });
    let t0 = std::time::Instant::now();
    let (code, started) = broker.post("/v1/workflows/pause/instances", json!({"pause": 4}));
    assert_eq!(code, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let waiting = broker.instance(&id);
    assert_eq!(waiting["status"], json!("WAITING"), "{waiting}");
    assert_eq!(waiting["state"], json!("Pause"));
    broker.kill();
    // the timer is due 4 s after the start, which came after t0: it had not fired
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(4),
        "the kill came too late to hit the wait mid-flight"
    );
    broker.start_again();
    let done = broker.wait_status(&id, "COMPLETED", 60);
    let o: &Value = &done["output"];
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    let waited = at(&o["entered"]) - at(&o["started"]);
    assert!(
        waited >= chrono::Duration::seconds(4),
        "the wait was cut short: {waited}"
    );
    out.lifecycle(&id, "completed", 30);
    pinned_across_an_edit(&broker);
    let completions = out
        .events("flowbroker.instance.completed")
        .into_iter()
        .filter(|e| {
            e.data
                .as_ref()
                .is_some_and(|d| d["instanceId"] == json!(id))
        })
        .count();
    assert_eq!(completions, 1);
}

/// An edited machine serves new runs; a run in flight finishes on the version it started on.
fn pinned_across_an_edit(broker: &Broker) {
    let version = || broker.get("/v1/workflows/pause").1["version"].clone();
    let v1 = version();
    let (_, started) = broker.post("/v1/workflows/pause/instances", json!({"pause": 6}));
    let old = started["id"].as_str().unwrap().to_string();
    let edited = PAUSE.replace(
        r#""started.$": "$$.Execution.StartTime""#,
        r#""started.$": "$$.Execution.StartTime", "v": 2"#,
    );
    std::fs::write(broker.workflow_path("pause.asl.json"), edited).unwrap();
    wait_for(30, "the edited machine to deploy", || {
        (version() != v1).then_some(())
    });
    assert_eq!(
        broker.instance(&old)["status"],
        json!("WAITING"),
        "the edit landed while the old run waited"
    );
    let (_, started) = broker.post("/v1/workflows/pause/instances", json!({"pause": 0}));
    let new = started["id"].as_str().unwrap().to_string();
    assert_eq!(
        broker.wait_status(&new, "COMPLETED", 30)["output"]["v"],
        json!(2)
    );
    let done = broker.wait_status(&old, "COMPLETED", 30);
    assert_eq!(done["version"], v1);
    assert!(done["output"].get("v").is_none(), "{}", done["output"]);
}

const QUOTE: &str = r#"{
  "StartAt": "Init",
  "States": {
    "Init": {"Type": "Pass", "Next": "Price",
      "Assign": {"customer.$": "$.customer",
                 "ref.$": "States.Format('Q-{}', States.Hash($.customer, 'SHA-256'))"}},
    "Price": {"Type": "Map", "ItemsPath": "$.items", "ToleratedFailureCount": 1,
      "ItemSelector": {"sku.$": "$$.Map.Item.Value", "who.$": "$customer"},
      "ItemProcessor": {"StartAt": "Quote", "States": {
        "Quote": {"Type": "Task", "Resource": "PRICE_URL", "End": true}}},
      "Assign": {"prices.$": "$[*].price"}, "Next": "Sum"},
    "Sum": {"Type": "Pass", "End": true, "Parameters": {
      "ref.$": "$ref",
      "count.$": "States.ArrayLength($prices)",
      "summary.$": "States.Format('{} pays {}', $customer, States.MathAdd($prices[0], $prices[-1]))",
      "parts.$": "States.ArrayPartition(States.ArrayRange(1, 5, 1), 2)"}}
  }
}"#;

#[test]
fn a_machine_with_intrinsics_and_variables_runs_from_a_start_event() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let fns = Functions::start(|path, body| match (path, body["sku"].as_str()) {
        ("/price", Some("gone")) => (500, json!({"name": "OutOfStock", "message": "no more"})),
        ("/price", Some(sku)) if body["who"] == json!("ann") => {
            (200, json!({"price": sku.len() * 10}))
        }
        _ => (404, json!({})),
    });
    let machine = QUOTE.replace("PRICE_URL", &fns.url("/price"));
    let broker = Broker::start(&kafka, &[("quote.asl.json", &machine)], &[]);
    wait_for(30, "the machine to deploy", || {
        (broker.get("/v1/workflows/quote").0 == 200).then_some(())
    });
    kafka.producer().send(&event(
        "q1",
        "/shop",
        "flowbroker.workflow.start",
        &[("workflowid", "quote")],
        json!({"customer": "ann", "items": ["hat", "gone", "boots"]}),
    ));
    let completed = out.wait_events("flowbroker.instance.completed", 1, 60);
    let data = completed[0].data.clone().unwrap();
    let hash = ring::digest::digest(&ring::digest::SHA256, b"ann");
    let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        data["output"],
        json!({
            "ref": format!("Q-{hex}"),
            // the failed item was tolerated: two prices
            "count": 2,
            "summary": "ann pays 80",
            "parts": [[1, 2], [3, 4], [5]]
        }),
        "{data}"
    );
    // every item was called, the failed one once (no retrier)
    let skus: Vec<Value> = fns
        .calls()
        .into_iter()
        .map(|(_, _, b)| b["sku"].clone())
        .collect();
    assert_eq!(skus.len(), 3, "{skus:?}");
}
