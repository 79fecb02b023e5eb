//! Amazon SWF's decider model on the real broker over tansu, driven by boto3's `swf`
//! client (botocore 1.44.5) exactly as an application written for AWS drives it: the
//! scripts in tests/fixtures/swf register their domain and types, start executions, and
//! run deciders and activity workers that long-poll the broker.

mod support;

use serde_json::Value;
use std::process::Command;
use support::*;

/// Runs `tests/fixtures/swf/<script>` against the broker at `http`; its JSON output.
fn run(script: &str, http: &str) -> Value {
    let dir = support::root().join("tests/fixtures/swf");
    let out = Command::new(support::durable::python())
        .arg(dir.join(script))
        .arg(format!("http://{http}"))
        .current_dir(&dir)
        .output()
        .expect("run the script");
    assert!(
        out.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed {:?}: {e}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn types(history: &Value) -> Vec<String> {
    history
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["eventType"].as_str().unwrap().to_string())
        .collect()
}

/// The attributes of event `id` (1-based) of a history.
fn attrs(history: &Value, id: usize) -> &Value {
    let e = &history[id - 1];
    assert_eq!(
        e["eventId"], id as u64,
        "events are numbered from 1 in order"
    );
    let kind = e["eventType"].as_str().unwrap();
    let field = format!("{}{}EventAttributes", kind[..1].to_lowercase(), &kind[1..]);
    &e[field]
}

#[test]
fn the_deciders_guide_e_commerce_order_runs_to_completion() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[], &[]);
    let lifecycle = kafka.collect(&["flowbroker.lifecycle"]);
    let out = run("ecommerce.py", &broker.http);
    let h = &out["history"];
    let mut expected = vec!["WorkflowExecutionStarted".to_string()];
    for _ in 0..4 {
        for t in [
            "DecisionTaskScheduled",
            "DecisionTaskStarted",
            "DecisionTaskCompleted",
            "ActivityTaskScheduled",
            "ActivityTaskStarted",
            "ActivityTaskCompleted",
        ] {
            expected.push(t.into());
        }
    }
    for t in [
        "DecisionTaskScheduled",
        "DecisionTaskStarted",
        "DecisionTaskCompleted",
        "WorkflowExecutionCompleted",
    ] {
        expected.push(t.into());
    }
    assert_eq!(types(h), expected);
    // every activity ran once, in order
    assert_eq!(
        out["worked"],
        serde_json::json!([
            "VerifyOrder",
            "ChargeCreditCard",
            "ShipOrder",
            "RecordOrderCompletion"
        ])
    );
    // the links SWF records between events
    let started = attrs(h, 1);
    assert_eq!(started["input"], "4321-0001-0002-1234");
    assert_eq!(started["taskList"]["name"], "decisions");
    assert_eq!(started["executionStartToCloseTimeout"], "300");
    assert_eq!(started["childPolicy"], "TERMINATE");
    assert_eq!(attrs(h, 3)["scheduledEventId"], 2);
    assert_eq!(attrs(h, 3)["identity"], "decider");
    assert_eq!(attrs(h, 4)["startedEventId"], 3);
    let scheduled = attrs(h, 5);
    assert_eq!(scheduled["decisionTaskCompletedEventId"], 4);
    assert_eq!(scheduled["activityType"]["name"], "VerifyOrder");
    assert_eq!(
        scheduled["taskList"]["name"], "activities",
        "the registered default"
    );
    assert_eq!(scheduled["heartbeatTimeout"], "NONE");
    assert_eq!(attrs(h, 7)["scheduledEventId"], 5);
    assert_eq!(attrs(h, 7)["startedEventId"], 6);
    assert_eq!(attrs(h, 7)["result"], "4321-0001-0002-1234|VerifyOrder");
    let result = "4321-0001-0002-1234|VerifyOrder|ChargeCreditCard|ShipOrder|RecordOrderCompletion";
    assert_eq!(attrs(h, 29)["result"], result);
    assert_eq!(attrs(h, 29)["decisionTaskCompletedEventId"], 28);
    // described and listed as closed
    let info = &out["describe"]["executionInfo"];
    assert_eq!(info["executionStatus"], "CLOSED");
    assert_eq!(info["closeStatus"], "COMPLETED");
    assert_eq!(out["describe"]["openCounts"]["openActivityTasks"], 0);
    let closed = out["closed"].as_array().unwrap();
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0]["execution"]["runId"], out["runId"]);
    // and seen like any instance
    let (code, list) = broker.get("/v1/instances?workflow=swf");
    assert_eq!(code, 200, "{list}");
    assert!(list.to_string().contains("COMPLETED"), "{list}");
    let run_id = out["runId"].as_str().unwrap();
    let id = list["instances"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["id"].as_str())
        .find(|i| i.ends_with(run_id))
        .expect("the run is an instance")
        .to_string();
    lifecycle.lifecycle(&id, "started", 30);
    let done = lifecycle.lifecycle(&id, "completed", 30);
    assert_eq!(done.data.unwrap()["output"], result);
}

#[test]
fn with_a_token_set_swf_takes_requests_signed_with_the_configured_key_pair() {
    let kafka = Kafka::start();
    let keys = [
        ("AWS_ACCESS_KEY_ID", "AKIDFLOWBROKER"),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t/key+example"),
    ];
    let broker = Broker::start(
        &kafka,
        &[],
        &[
            ("FLOWBROKER_HTTP_AUTH_TOKEN", "bearer-token"),
            ("FLOWBROKER_HTTP_AWS_ACCESS_KEY_ID", keys[0].1),
            ("FLOWBROKER_HTTP_AWS_SECRET_ACCESS_KEY", keys[1].1),
        ],
    );
    let http = broker.http.clone();
    let runs = step_with(&http, &["setup", "sig", "w"], &keys);
    assert!(runs["runs"]["w"].is_string(), "{runs}");
    let wrong = [keys[0], ("AWS_SECRET_ACCESS_KEY", "guess")];
    let e = step_with(&http, &["start", "sig", "w2"], &wrong);
    assert_eq!(e["error"], "InvalidSignatureException", "{e}");
    let stranger = [("AWS_ACCESS_KEY_ID", "AKIDOTHER"), keys[1]];
    let e = step_with(&http, &["start", "sig", "w2"], &stranger);
    assert_eq!(e["error"], "UnrecognizedClientException", "{e}");
    // neither signed nor with the bearer token
    let r = reqwest::blocking::Client::new()
        .post(format!("http://{http}/"))
        .header("x-amz-target", "SimpleWorkflowService.ListDomains")
        .body(r#"{"registrationStatus": "REGISTERED"}"#)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
}

#[test]
fn timeouts_redispatch_and_unhandled_decisions_are_recorded_as_swf_records_them() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[], &[]);
    let out = run("faults.py", &broker.http);
    let h = &out["history"];
    let t = types(h);
    let at = |kind: &str| t.iter().position(|x| x == kind).map(|i| i + 1);
    // the unanswered task timed out and a new one was scheduled and handed out
    let to = at("DecisionTaskTimedOut").expect("the decision task timed out");
    assert_eq!(attrs(h, to)["timeoutType"], "START_TO_CLOSE");
    assert_eq!(attrs(h, to)["scheduledEventId"], 2);
    assert_eq!(attrs(h, to)["startedEventId"], 3);
    assert_eq!(t[to], "DecisionTaskScheduled");
    assert!(out["redispatchSeconds"].as_f64().unwrap() >= 1.0);
    assert_eq!(out["staleToken"], "UnknownResourceFault");
    // the activity that never heartbeated
    let hb = at("ActivityTaskTimedOut").expect("the activity timed out");
    assert_eq!(attrs(h, hb)["timeoutType"], "HEARTBEAT");
    assert_eq!(out["lateActivity"], "UnknownResourceFault");
    // the close that raced the signal failed, then the retry completed
    let failed = at("CompleteWorkflowExecutionFailed").expect("the close failed");
    assert_eq!(attrs(h, failed)["cause"], "UNHANDLED_DECISION");
    let signaled = at("WorkflowExecutionSignaled").unwrap();
    assert!(signaled < failed);
    assert_eq!(attrs(h, signaled)["signalName"], "poke");
    assert_eq!(t[failed], "DecisionTaskScheduled");
    assert!(out["retrySees"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("CompleteWorkflowExecutionFailed")));
    assert_eq!(t.last().unwrap(), "WorkflowExecutionCompleted");
    assert_eq!(
        t.iter()
            .filter(|x| *x == "WorkflowExecutionCompleted")
            .count(),
        1
    );
}

/// One `step.py` call against the broker at `http`.
fn step(http: &str, args: &[&str]) -> Value {
    step_with(http, args, &[])
}

/// [`step`] with environment variables (credentials).
fn step_with(http: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let dir = support::root().join("tests/fixtures/swf");
    let out = Command::new(support::durable::python())
        .arg(dir.join("step.py"))
        .arg(format!("http://{http}"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(&dir)
        .output()
        .expect("run step.py");
    assert!(
        out.status.success(),
        "step.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(types: &Value, kind: &str) -> usize {
    types
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| *t == kind)
        .count()
}

#[test]
fn a_kill_between_poll_and_response_loses_nothing_and_applies_nothing_twice() {
    let kafka = Kafka::start();
    let mut broker = Broker::start(&kafka, &[], &[]);
    let http = broker.http.clone();
    let runs = step(&http, &["setup", "k", "a", "b"]);
    let (run_a, run_b) = (
        runs["runs"]["a"].as_str().unwrap().to_string(),
        runs["runs"]["b"].as_str().unwrap().to_string(),
    );
    // a decider takes one of the two decision tasks; the broker dies before it answers
    let first = step(&http, &["poll-decision", "k"]);
    let token = first["taskToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty(), "{first}");
    let (taken, other) = if first["workflowExecution"]["workflowId"] == "a" {
        (("a", run_a), ("b", run_b))
    } else {
        (("b", run_b), ("a", run_a))
    };
    let h = step(&http, &["history", "k", taken.0, &taken.1]);
    assert_eq!(
        h["types"].as_array().unwrap().last().unwrap(),
        "DecisionTaskStarted"
    );
    broker.kill();
    broker.start_again();
    // the answer given after the restart is taken, once
    assert_eq!(
        step(&http, &["schedule", &token, "act-1"]),
        serde_json::json!({})
    );
    let again = step(&http, &["schedule", &token, "act-1"]);
    assert_eq!(again["error"], "UnknownResourceFault", "{again}");
    // the other execution's task, scheduled before the kill and never handed out, is
    // offered again by the restarted broker
    let second = step(&http, &["poll-decision", "k"]);
    assert_eq!(
        second["workflowExecution"]["workflowId"], other.0,
        "{second}"
    );
    // an activity taken, then a kill, then its result
    let act = step(&http, &["poll-activity", "k"]);
    let act_token = act["taskToken"].as_str().unwrap().to_string();
    assert_eq!(act["activityId"], "act-1");
    broker.kill();
    broker.start_again();
    assert_eq!(
        step(&http, &["activity-done", &act_token, "ok"]),
        serde_json::json!({})
    );
    let next = step(&http, &["poll-decision", "k"]);
    assert_eq!(next["workflowExecution"]["workflowId"], taken.0, "{next}");
    let done = next["taskToken"].as_str().unwrap().to_string();
    assert_eq!(
        step(&http, &["complete", &done, "r"]),
        serde_json::json!({})
    );
    let h = step(&http, &["history", "k", taken.0, &taken.1]);
    let types = &h["types"];
    assert_eq!(count(types, "ActivityTaskScheduled"), 1, "{types}");
    assert_eq!(count(types, "ActivityTaskStarted"), 1, "{types}");
    assert_eq!(count(types, "ActivityTaskCompleted"), 1, "{types}");
    assert_eq!(count(types, "DecisionTaskCompleted"), 2, "{types}");
    assert_eq!(count(types, "WorkflowExecutionCompleted"), 1, "{types}");
    // a new start of the finished workflow id runs; one of the open one is refused
    assert!(step(&http, &["start", "k", taken.0])["runId"].is_string());
    let dup = step(&http, &["start", "k", other.0]);
    assert_eq!(
        dup["error"], "WorkflowExecutionAlreadyStartedFault",
        "{dup}"
    );
}

#[test]
fn cloudevents_on_kafka_start_and_signal_runs_and_bad_ones_are_dead_lettered() {
    let kafka = Kafka::start();
    // an SWF event that cannot be carried out is dead-lettered as unmatched events are
    let broker = Broker::start(&kafka, &[], &[("FLOWBROKER_KAFKA_DLQ_UNMATCHED", "true")]);
    let http = broker.http.clone();
    step(&http, &["setup", "k"]);
    let out = kafka.collect(&["flowbroker.dlq"]);
    let publisher = kafka.producer();
    fn at(wid: &str) -> [(&str, &str); 2] {
        [("swfdomain", "k"), ("swfworkflowid", wid)]
    }
    let wf = serde_json::json!({"workflowType": {"name": "wf", "version": "1.0"}, "input": "from kafka"});
    let start = event(
        "s1",
        "/orders",
        "flowbroker.swf.start",
        &at("ev-1"),
        wf.clone(),
    );
    publisher.send(&start);
    publisher.send(&start); // redelivered: the same run
    let task = step(&http, &["poll-decision", "k"]);
    assert_eq!(task["workflowExecution"]["workflowId"], "ev-1", "{task}");
    let run = task["workflowExecution"]["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut signal = at("ev-1").to_vec();
    signal.push(("swfsignal", "paid"));
    publisher.send(&event(
        "g1",
        "/orders",
        "flowbroker.swf.signal",
        &signal,
        serde_json::json!({"amount": 3}),
    ));
    let h = wait_for(30, "the signal", || {
        let h = step(&http, &["history", "k", "ev-1", &run]);
        (!h["signals"].as_array().unwrap().is_empty()).then_some(h)
    });
    assert_eq!(h["input"], "from kafka");
    assert_eq!(h["signals"][0]["signalName"], "paid");
    assert_eq!(h["signals"][0]["input"], r#"{"amount":3}"#);
    assert_eq!(count(&h["types"], "WorkflowExecutionStarted"), 1);
    // another start of the open workflow id, an unknown domain, a signal to nobody
    publisher.send(&event(
        "s2",
        "/orders",
        "flowbroker.swf.start",
        &at("ev-1"),
        wf.clone(),
    ));
    let nowhere = [("swfdomain", "nope"), ("swfworkflowid", "x")];
    publisher.send(&event(
        "s3",
        "/orders",
        "flowbroker.swf.start",
        &nowhere,
        wf,
    ));
    let mut lost = at("ev-2").to_vec();
    lost.push(("swfsignal", "paid"));
    publisher.send(&event(
        "g2",
        "/orders",
        "flowbroker.swf.signal",
        &lost,
        Value::Null,
    ));
    let dead = wait_for(30, "three dead letters", || {
        let d: Vec<Received> = out
            .all()
            .into_iter()
            .filter(|r| r.topic == "flowbroker.dlq")
            .collect();
        (d.len() >= 3).then_some(d)
    });
    let reason = |id: &str| {
        dead.iter()
            .find(|r| {
                // the copy is the event as structured JSON
                let v: Value =
                    serde_json::from_slice(r.payload.as_deref().unwrap_or(b"{}")).unwrap();
                v["id"] == id
            })
            .unwrap_or_else(|| panic!("no dead letter for {id}: {dead:?}"))
            .headers["flowbroker-dlq-reason"]
            .clone()
    };
    assert!(reason("s2").contains("is open"), "{}", reason("s2"));
    assert!(reason("s3").contains("Unknown domain"), "{}", reason("s3"));
    assert!(reason("g2").contains("no open run"), "{}", reason("g2"));
}

/// The events of a history of type `kind` (with their 1-based ids).
fn all_of<'a>(h: &'a Value, kind: &str) -> Vec<(usize, &'a Value)> {
    let t = types(h);
    (1..=t.len())
        .filter(|i| t[i - 1] == kind)
        .map(|i| (i, attrs(h, i)))
        .collect()
}

fn one<'a>(h: &'a Value, kind: &str) -> (usize, &'a Value) {
    let all = all_of(h, kind);
    assert_eq!(all.len(), 1, "one {kind} in {:?}", types(h));
    all[0]
}

#[test]
fn every_decision_type_records_what_swf_records_across_parent_child_and_target_runs() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[], &[]);
    let out = run("decisions.py", &broker.http);
    let p = &out["p"]["history"];
    // the first decision task's decisions, in order, linked to its DecisionTaskCompleted (4)
    assert_eq!(
        types(p)[4..17],
        [
            "MarkerRecorded",
            "TimerStarted",
            "TimerStarted",
            "TimerCanceled",
            "ActivityTaskScheduled",
            "ActivityTaskScheduled",
            "ActivityTaskCancelRequested",
            "ActivityTaskCanceled",
            "StartChildWorkflowExecutionInitiated",
            "SignalExternalWorkflowExecutionInitiated",
            "RequestCancelExternalWorkflowExecutionInitiated",
            "SignalExternalWorkflowExecutionInitiated",
            "DecisionTaskScheduled",
        ]
    );
    for i in [5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16] {
        assert_eq!(attrs(p, i)["decisionTaskCompletedEventId"], 4, "event {i}");
    }
    assert_eq!(attrs(p, 5)["markerName"], "begin");
    assert_eq!(attrs(p, 8)["startedEventId"], 7);
    assert_eq!(attrs(p, 12)["scheduledEventId"], 10);
    assert_eq!(attrs(p, 12)["latestCancelRequestedEventId"], 11);
    // what came back from timers, the worker, the child and the other runs
    assert_eq!(one(p, "TimerFired").1["startedEventId"], 6);
    let (_, done) = one(p, "ActivityTaskCompleted");
    assert_eq!(done["scheduledEventId"], 9);
    assert_eq!(done["result"], "one done");
    let (started, s) = one(p, "ChildWorkflowExecutionStarted");
    assert_eq!(s["initiatedEventId"], 13);
    assert_eq!(s["workflowExecution"]["runId"], out["c"]["runId"]);
    let (_, c) = one(p, "ChildWorkflowExecutionCompleted");
    assert_eq!(c["initiatedEventId"], 13);
    assert_eq!(c["startedEventId"], started as u64);
    assert_eq!(c["result"], "child done");
    let (_, sig) = one(p, "ExternalWorkflowExecutionSignaled");
    assert_eq!(sig["initiatedEventId"], 14);
    assert_eq!(sig["workflowExecution"]["runId"], out["t"]["runId"]);
    assert_eq!(
        one(p, "ExternalWorkflowExecutionCancelRequested").1["initiatedEventId"],
        15
    );
    let (_, ghost) = one(p, "SignalExternalWorkflowExecutionFailed");
    assert_eq!(ghost["initiatedEventId"], 16);
    assert_eq!(ghost["cause"], "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION");
    assert_eq!(ghost["decisionTaskCompletedEventId"], 4);
    let (_, next) = one(p, "WorkflowExecutionContinuedAsNew");
    assert_eq!(next["newExecutionRunId"], out["p2"]["runId"]);
    assert_eq!(types(p).last().unwrap(), "WorkflowExecutionContinuedAsNew");
    // the next run
    let p2 = &out["p2"]["history"];
    assert_eq!(attrs(p2, 1)["continuedExecutionRunId"], out["p"]["runId"]);
    assert_eq!(attrs(p2, 1)["input"], "again");
    let (_, failed) = one(p2, "WorkflowExecutionFailed");
    assert_eq!(failed["reason"], "done");
    // the child knows its parent
    let c = &out["c"]["history"];
    assert_eq!(attrs(c, 1)["parentInitiatedEventId"], 13);
    assert_eq!(attrs(c, 1)["parentWorkflowExecution"]["workflowId"], "p");
    assert_eq!(attrs(c, 1)["input"], "kid");
    assert_eq!(types(c).last().unwrap(), "WorkflowExecutionCompleted");
    // the target saw who signalled and who asked it to cancel
    let t = &out["t"]["history"];
    let (_, got) = one(t, "WorkflowExecutionSignaled");
    assert_eq!(got["signalName"], "hello");
    assert_eq!(got["input"], "hi");
    assert_eq!(got["externalInitiatedEventId"], 14);
    assert_eq!(got["externalWorkflowExecution"]["workflowId"], "p");
    assert_eq!(
        one(t, "WorkflowExecutionCancelRequested").1["externalInitiatedEventId"],
        15
    );
    assert_eq!(types(t).last().unwrap(), "WorkflowExecutionCanceled");
}

#[test]
fn lambda_tasks_call_configured_functions_and_record_results_failures_and_timeouts() {
    let kafka = Kafka::start();
    let fns = Functions::start(|path, body| match path {
        "/double" => (
            200,
            serde_json::json!({"n": body["n"].as_i64().unwrap_or(0) * 2}),
        ),
        "/slow" => {
            std::thread::sleep(std::time::Duration::from_secs(3));
            (200, serde_json::json!("late"))
        }
        _ => (
            500,
            serde_json::json!({"error": "Boom", "message": "it broke"}),
        ),
    });
    let functions = format!("double={0}/double,boom={0}/boom,slow={0}/slow", fns.base);
    let broker = Broker::start(&kafka, &[], &[("FLOWBROKER_FUNCTIONS", &functions)]);
    let out = run("lambda.py", &broker.http);
    let h = &out["history"];
    let scheduled: Vec<(usize, &Value)> = all_of(h, "LambdaFunctionScheduled");
    assert_eq!(scheduled.len(), 4, "{:?}", types(h));
    let id_of = |i: u64| {
        scheduled
            .iter()
            .find(|(n, _)| *n as u64 == i)
            .map(|(_, a)| a["id"].as_str().unwrap().to_string())
            .unwrap()
    };
    let (_, dup) = one(h, "ScheduleLambdaFunctionFailed");
    assert_eq!(dup["cause"], "ID_ALREADY_IN_USE");
    assert_eq!(dup["id"], "l1");
    let (_, ok) = one(h, "LambdaFunctionCompleted");
    assert_eq!(id_of(ok["scheduledEventId"].as_u64().unwrap()), "l1");
    assert_eq!(ok["result"], r#"{"n":42}"#);
    let failed = all_of(h, "LambdaFunctionFailed");
    assert_eq!(failed.len(), 2, "{:?}", types(h));
    let reasons: Vec<(String, String)> = failed
        .iter()
        .map(|(_, a)| {
            (
                id_of(a["scheduledEventId"].as_u64().unwrap()),
                a["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        reasons.contains(&("l2".into(), "Boom".into())),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("l3".into(), "FunctionNotConfigured".into())),
        "{reasons:?}"
    );
    let (_, slow) = one(h, "LambdaFunctionTimedOut");
    assert_eq!(id_of(slow["scheduledEventId"].as_u64().unwrap()), "l4");
    assert_eq!(slow["timeoutType"], "START_TO_CLOSE");
    // the input reached the function as JSON, once per task
    let calls = fns.calls.lock().unwrap();
    assert_eq!(calls.iter().filter(|c| c.0 == "/double").count(), 1);
    assert_eq!(calls.iter().find(|c| c.0 == "/double").unwrap().2["n"], 21);
}

#[test]
fn simpleflow_runs_a_fan_out_chained_into_a_reduce() {
    let kafka = Kafka::start();
    let broker = Broker::start(&kafka, &[], &[]);
    let python = installed(
        "FLOWBROKER_SWF_PYTHON",
        "swf-sdk.sh",
        "simpleflow in a virtualenv; this test needs it",
    );
    let dir = support::root().join("tests/fixtures/swf");
    let out = Command::new(python)
        .arg(dir.join("sf_run.py"))
        .arg(format!("http://{}", broker.http))
        .arg("sf_canvas.FanOutThenChain")
        .arg("[1, 2, 3]")
        .current_dir(&dir)
        .output()
        .expect("run simpleflow");
    assert!(
        out.status.success(),
        "simpleflow failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out["info"]["closeStatus"], "COMPLETED", "{}", out["info"]);
    let h = &out["history"];
    let (_, done) = one(h, "WorkflowExecutionCompleted");
    // (1+1)*(2+1)*(3+1), as simpleflow serializes it
    assert_eq!(done["result"], "24");
    let scheduled = all_of(h, "ActivityTaskScheduled");
    assert_eq!(scheduled.len(), 4, "{:?}", types(h));
    // the three of the fan-out were scheduled by one decision, the reduce after them
    let decided: Vec<&Value> = scheduled
        .iter()
        .map(|(_, a)| &a["decisionTaskCompletedEventId"])
        .collect();
    assert_eq!(decided[0], decided[1]);
    assert_eq!(decided[1], decided[2]);
    assert_ne!(decided[2], decided[3]);
    assert_eq!(scheduled[3].1["activityType"]["name"], "sf_canvas.product");
    assert_eq!(all_of(h, "ActivityTaskCompleted").len(), 4);
}

#[test]
fn a_poll_on_one_broker_gets_the_tasks_of_runs_another_broker_owns() {
    let kafka = Kafka::start();
    let env = [("FLOWBROKER_CLUSTER_PARTITIONS", "12")];
    let a = Broker::start(&kafka, &[], &env);
    let b = Broker::start(&kafka, &[], &env);
    wait_for(60, "both brokers to own partitions", || {
        (!a.owned().is_empty() && !b.owned().is_empty()).then_some(())
    });
    let ids: Vec<String> = (0..8).map(|i| format!("x{i}")).collect();
    let mut args = vec!["setup", "two"];
    args.extend(ids.iter().map(String::as_str));
    step(&a.http, &args);
    // some of the runs live on b's partitions: their tasks are on b's board
    let parts = flowbroker::cluster::partition::Partitions::new(12).unwrap();
    let on_b = b.owned();
    let remote = ids
        .iter()
        .filter(|w| {
            let key = flowbroker::swf::RunKey {
                domain: "two".into(),
                workflow_id: w.to_string(),
            };
            on_b.contains(&key.partition(parts).0)
        })
        .count();
    assert!(remote > 0, "no run on b's partitions");
    // every decision task is handed out through a's polls, and answered through a
    let mut got = std::collections::BTreeSet::new();
    for _ in 0..ids.len() {
        let t = step(&a.http, &["poll-decision", "two"]);
        let token = t["taskToken"].as_str().unwrap_or_default().to_string();
        assert!(!token.is_empty(), "{t}");
        got.insert(
            t["workflowExecution"]["workflowId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        assert_eq!(
            step(&a.http, &["complete", &token, "ok"]),
            serde_json::json!({})
        );
    }
    assert_eq!(got.len(), ids.len(), "{got:?}");
}
