//! The durable functions interpreter, input by input: what a checkpoint does to the
//! record, when the function is invoked again, what the backend drives (waits, step
//! retries, callbacks, children, the deadline, failed invocations, stop). Every step goes
//! through a store round trip (tests/common).

mod common;

use chrono::Duration;
use common::*;
use flowbroker::durable::arn;
use flowbroker::engine::{Action, EngineError, Input, Status};
use serde_json::{json, Value};

const FN: &str = "invoke: http://127.0.0.1:9100\nexecutionTimeout: 3600\n";

/// The (key, parameters) of the one invocation among `acts`.
fn invocation(acts: &[Action]) -> (String, Value) {
    let all = invokes(acts);
    assert_eq!(all.len(), 1, "one invocation expected: {acts:#?}");
    (all[0].0.clone(), all[0].2.clone())
}

fn token(params: &Value) -> String {
    params["CheckpointToken"].as_str().unwrap().to_string()
}

fn checkpoint(
    env: &mut Env,
    token: &str,
    client: Option<&str>,
    updates: Value,
) -> Result<Vec<Action>, EngineError> {
    env.try_feed(Input::Checkpoint {
        token: token.into(),
        client_token: client.map(str::to_string),
        updates,
    })
}

/// The answer the broker sends for the last checkpoint: (next token, operations by id).
fn answer(env: &Env) -> (Option<String>, Vec<Value>) {
    let v = serde_json::to_value(&env.inst.activity).unwrap();
    let run = &v["durable"];
    let last = &run["last"];
    let ids: Vec<&str> = last["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    let ops = run["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| ids.contains(&o["Id"].as_str().unwrap()))
        .cloned()
        .collect();
    (last["outbound"].as_str().map(str::to_string), ops)
}

fn op(env: &Env, id: &str) -> Value {
    let v = serde_json::to_value(&env.inst.activity).unwrap();
    v["durable"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["Id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no operation {id}"))
}

fn timer_of(acts: &[Action]) -> Vec<(String, chrono::DateTime<chrono::Utc>)> {
    acts.iter()
        .filter_map(|a| match a {
            Action::ArmTimer { id, due } => Some((id.clone(), *due)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_start_invokes_with_the_execution_operation_first_and_a_deadline() {
    let mut env = Env::durable(FN);
    let acts = env.start(json!({"order": "o1"}));
    let (key, p) = invocation(&acts);
    assert_eq!(key, "i1/inv1");
    let arn = p["DurableExecutionArn"].as_str().unwrap();
    assert_eq!(arn::instance_of_arn(arn).unwrap(), "i1");
    assert_eq!(
        arn.rsplit('/').next().unwrap(),
        "i1",
        "the EXECUTION id is the ARN's last segment"
    );
    let ops = p["InitialExecutionState"]["Operations"].as_array().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["Id"], "i1");
    assert_eq!(ops[0]["Type"], "EXECUTION");
    assert_eq!(
        ops[0]["ExecutionDetails"]["InputPayload"],
        r#"{"order":"o1"}"#
    );
    // invocation inputs carry epoch milliseconds (the SDKs read them so)
    assert_eq!(ops[0]["StartTimestamp"], json!(env.now.timestamp_millis()));
    let timers = timer_of(&acts);
    assert_eq!(
        timers,
        vec![("i1/deadline".to_string(), env.now + Duration::seconds(3600))]
    );
    assert_eq!(env.status(), Status::Running);
}

#[test]
fn tokens_are_single_use_and_a_retried_checkpoint_gets_the_same_answer() {
    let mut env = Env::durable(FN);
    let (_, p) = invocation(&env.start(json!({})));
    let t1 = token(&p);
    let step = json!([{"Id": "s1", "Type": "STEP", "Action": "START", "Name": "load", "SubType": "Step"},
                      {"Id": "s1", "Type": "STEP", "Action": "SUCCEED", "Payload": "42"}]);
    checkpoint(&mut env, &t1, Some("c1"), step.clone()).unwrap();
    let (t2, ops) = answer(&env);
    let t2 = t2.expect("a next token");
    assert_ne!(t2, t1);
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["Status"], "SUCCEEDED");
    assert_eq!(ops[0]["StepDetails"]["Result"], "42");
    assert_eq!(ops[0]["StepDetails"]["Attempt"], 1);
    // the same call again (botocore retrying): answered again, applied once
    checkpoint(&mut env, &t1, Some("c1"), step.clone()).unwrap();
    assert_eq!(answer(&env).0.as_deref(), Some(t2.as_str()));
    assert_eq!(
        op(&env, "s1")["StepDetails"]["Attempt"],
        1,
        "not applied twice"
    );
    // the used token without the client token, or with another one: refused
    for client in [None, Some("c2")] {
        let e = checkpoint(&mut env, &t1, client, json!([])).unwrap_err();
        assert!(matches!(e, EngineError::InvalidCheckpointToken(_)), "{e}");
    }
    // an empty checkpoint is a poll: a new token, nothing unseen
    checkpoint(&mut env, &t2, Some("c3"), json!([])).unwrap();
    let (t3, ops) = answer(&env);
    assert!(t3.is_some() && ops.is_empty());
    // a token of another execution
    let other = arn::token("i2", 2);
    assert!(checkpoint(&mut env, &other, None, json!([])).is_err());
}

#[test]
fn a_step_retry_waits_on_a_durable_timer_then_invokes_again_with_the_step_ready() {
    let mut env = Env::durable(FN);
    let (k1, p) = invocation(&env.start(json!({})));
    let acts = checkpoint(
        &mut env,
        &token(&p),
        None,
        json!([{"Id": "s1", "Type": "STEP", "Action": "START", "Name": "flaky"},
               {"Id": "s1", "Type": "STEP", "Action": "RETRY",
                "Error": {"ErrorType": "ValueError", "ErrorMessage": "boom"},
                "StepOptions": {"NextAttemptDelaySeconds": 5}}]),
    )
    .unwrap();
    let due = env.now + Duration::seconds(5);
    assert_eq!(timer_of(&acts), vec![("i1/op/s1/retry".to_string(), due)]);
    let s1 = op(&env, "s1");
    assert_eq!(
        (s1["Status"].as_str(), s1["StepDetails"]["Attempt"].as_u64()),
        (Some("PENDING"), Some(1))
    );
    // the function suspends: nothing to do until the timer
    assert!(invokes(&env.result(&k1, json!({"Status": "PENDING"}))).is_empty());
    assert_eq!(env.status(), Status::Waiting);
    env.advance(Duration::seconds(5));
    let (k2, p2) = invocation(&env.fire("i1/op/s1/retry"));
    assert_eq!(k2, "i1/inv2");
    let ops = p2["InitialExecutionState"]["Operations"]
        .as_array()
        .unwrap();
    assert_eq!(ops[1]["Status"], "READY");
    assert_eq!(p2["UpdatedOperationIds"], json!(["s1"]));
    // the timer fired again (a redelivery) changes nothing
    assert!(env.fire("i1/op/s1/retry").is_empty());
    checkpoint(&mut env, &token(&p2), None,
        json!([{"Id": "s1", "Type": "STEP", "Action": "START"}, {"Id": "s1", "Type": "STEP", "Action": "SUCCEED", "Payload": "\"ok\""}])).unwrap();
    assert_eq!(op(&env, "s1")["StepDetails"]["Attempt"], 2);
    let acts = env.result(
        &k2,
        json!({"Status": "SUCCEEDED", "Result": "{\"done\": true}"}),
    );
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::Complete { output } if output == &json!({"done": true}))));
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::CancelTimer { id } if id == "i1/deadline")));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(op(&env, "i1")["Status"], "SUCCEEDED");
}

#[test]
fn a_wait_completes_by_its_timer_or_at_the_next_checkpoint_once_due() {
    let mut env = Env::durable(FN);
    let (k1, p) = invocation(&env.start(json!({})));
    let acts = checkpoint(
        &mut env,
        &token(&p),
        None,
        json!([{"Id": "w1", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 60}},
               {"Id": "w2", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 1}}]),
    )
    .unwrap();
    assert_eq!(timer_of(&acts).len(), 2);
    assert_eq!(answer(&env).1.len(), 2);
    let w1 = op(&env, "w1");
    assert_eq!(
        w1["WaitDetails"]["ScheduledEndTimestamp"].as_f64().unwrap(),
        (env.now + Duration::seconds(60)).timestamp() as f64
    );
    // while the invocation runs, a due wait is completed by the next checkpoint itself
    env.advance(Duration::seconds(2));
    let (t, _) = answer(&env);
    let acts = checkpoint(&mut env, &t.unwrap(), None, json!([])).unwrap();
    let (_, ops) = answer(&env);
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (ops[0]["Id"].as_str(), ops[0]["Status"].as_str()),
        (Some("w2"), Some("SUCCEEDED"))
    );
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::CancelTimer { id } if id == "i1/op/w2/wait")));
    env.result(&k1, json!({"Status": "PENDING"}));
    env.advance(Duration::seconds(58));
    let (_, p2) = invocation(&env.fire("i1/op/w1/wait"));
    let ops = p2["InitialExecutionState"]["Operations"]
        .as_array()
        .unwrap();
    assert_eq!(
        ops.iter()
            .map(|o| o["Status"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["STARTED", "SUCCEEDED", "SUCCEEDED"]
    );
}

#[test]
fn invalid_updates_are_refused_whole() {
    let mut env = Env::durable(FN);
    let (_, p) = invocation(&env.start(json!({})));
    let t = token(&p);
    for (updates, says) in [
        (
            json!([{"Id": "w", "Type": "WAIT", "Action": "START"}]),
            "WaitSeconds",
        ),
        (
            json!([{"Id": "s", "Type": "STEP", "Action": "START", "ParentId": "nope"}]),
            "Invalid parent",
        ),
        (
            json!([{"Id": "x", "Type": "CALLBACK", "Action": "SUCCEED"}]),
            "Invalid action",
        ),
        (
            json!([{"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 1}},
                {"Id": "w", "Type": "WAIT", "Action": "CANCEL"}]),
            "same ID",
        ),
        (
            json!([{"Id": "e", "Type": "EXECUTION", "Action": "SUCCEED"}, {"Id": "s", "Type": "STEP", "Action": "START"}]),
            "must be the last",
        ),
        (json!({"not": "a list"}), "not a list"),
        (
            json!([{"Id": "s", "Type": "STEP", "Action": "SUCCEED", "Payload": "x".repeat(6 * 1024 * 1024 + 1)}]),
            "the limit is 6291456",
        ),
    ] {
        let e = checkpoint(&mut env, &t, None, updates).unwrap_err();
        assert!(e.to_string().contains(says), "{e} should say {says}");
    }
    // nothing of them was kept: the token is still good and the record has one operation
    checkpoint(
        &mut env,
        &t,
        None,
        json!([{"Id": "s", "Type": "STEP", "Action": "START"}]),
    )
    .unwrap();
    let (_, p) = (0, serde_json::to_value(&env.inst.activity).unwrap());
    assert_eq!(p["durable"]["ops"].as_array().unwrap().len(), 2);
    // an operation of another type under the same id
    let t = answer(&env).0.unwrap();
    let e = checkpoint(
        &mut env,
        &t,
        None,
        json!([{"Id": "s", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 1}}]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("Inconsistent operation type"), "{e}");
}

#[test]
fn callbacks_succeed_verbatim_fail_time_out_and_heartbeat() {
    let mut env = Env::durable(FN);
    let (k1, p) = invocation(&env.start(json!({})));
    let acts = checkpoint(&mut env, &token(&p), None,
        json!([{"Id": "a", "Type": "CALLBACK", "Action": "START", "CallbackOptions": {"TimeoutSeconds": 0}},
               {"Id": "b", "Type": "CALLBACK", "Action": "START", "CallbackOptions": {"TimeoutSeconds": 30, "HeartbeatTimeoutSeconds": 10}},
               {"Id": "c", "Type": "CALLBACK", "Action": "START", "CallbackOptions": {"TimeoutSeconds": 5}}])).unwrap();
    let ids: Vec<String> = answer(&env)
        .1
        .iter()
        .map(|o| {
            o["CallbackDetails"]["CallbackId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(
        arn::read_callback(&ids[0]).unwrap(),
        ("i1".to_string(), "a".to_string())
    );
    assert_eq!(
        timer_of(&acts).len(),
        3,
        "b: timeout + heartbeat, c: timeout"
    );
    env.result(&k1, json!({"Status": "PENDING"}));
    // a: success, with a body that is not JSON, kept verbatim
    let mut ev = event(
        "/x",
        "flowbroker.callback.success",
        json!("approved, with notes"),
        &[("callbackid", &ids[0])],
    );
    ev.datacontenttype = Some("text/plain".into());
    let (k2, _) = invocation(&env.event(ev.clone()));
    assert_eq!(
        op(&env, "a")["CallbackDetails"]["Result"],
        "approved, with notes"
    );
    // answered twice: refused
    assert!(matches!(
        env.try_feed(Input::Event { event: ev }),
        Err(EngineError::CallbackNotActive(_))
    ));
    // b: a heartbeat arms its timer again; then the heartbeat timeout
    env.advance(Duration::seconds(8));
    let acts = env.event(event(
        "/x",
        "flowbroker.callback.heartbeat",
        json!(null),
        &[("callbackid", &ids[1])],
    ));
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::CancelTimer { id } if id == "i1/op/b/heartbeat0")));
    assert_eq!(
        timer_of(&acts),
        vec![(
            "i1/op/b/heartbeat1".to_string(),
            env.now + Duration::seconds(10)
        )]
    );
    assert!(invokes(&acts).is_empty(), "a heartbeat invokes nothing");
    env.advance(Duration::seconds(2));
    assert!(
        env.fire("i1/op/b/heartbeat0").is_empty(),
        "the earlier heartbeat timer is gone"
    );
    // c: its timeout (the invocation for a is still in flight: recorded, no second invocation)
    let acts = env.fire("i1/op/c/timeout");
    assert!(invokes(&acts).is_empty());
    let c = op(&env, "c");
    assert_eq!(
        (
            c["Status"].as_str(),
            c["CallbackDetails"]["Error"]["ErrorType"].as_str()
        ),
        (Some("TIMED_OUT"), Some("Callback.Timeout"))
    );
    // the invocation returns PENDING with c unseen: invoked again at once
    let (k3, _) = invocation(&env.result(&k2, json!({"Status": "PENDING"})));
    env.result(&k3, json!({"Status": "PENDING"}));
    env.advance(Duration::seconds(10));
    invocation(&env.fire("i1/op/b/heartbeat1"));
    assert_eq!(
        op(&env, "b")["CallbackDetails"]["Error"]["ErrorType"],
        "Callback.Heartbeat"
    );
}

#[test]
fn a_callback_failure_by_event_takes_the_error_object() {
    let mut env = Env::durable(FN);
    let (k1, p) = invocation(&env.start(json!({})));
    checkpoint(
        &mut env,
        &token(&p),
        None,
        json!([{"Id": "a", "Type": "CALLBACK", "Action": "START"}]),
    )
    .unwrap();
    let id = answer(&env).1[0]["CallbackDetails"]["CallbackId"]
        .as_str()
        .unwrap()
        .to_string();
    env.result(&k1, json!({"Status": "PENDING"}));
    invocation(&env.event(event(
        "/x",
        "flowbroker.callback.failure",
        json!({"ErrorType": "Rejected", "ErrorMessage": "no"}),
        &[("callbackid", &id)],
    )));
    let a = op(&env, "a");
    assert_eq!(a["Status"], "FAILED");
    assert_eq!(
        a["CallbackDetails"]["Error"],
        json!({"ErrorType": "Rejected", "ErrorMessage": "no"})
    );
    // an event of another type for a durable execution
    let e = env
        .try_feed(Input::Event {
            event: event("/x", "order.placed", json!({}), &[]),
        })
        .unwrap_err();
    assert!(matches!(e, EngineError::NotWaiting { .. }));
}

#[test]
fn a_chained_invoke_starts_a_child_whose_end_completes_the_operation() {
    let mut env = Env::durable(FN);
    let (k1, p) = invocation(&env.start(json!({})));
    let acts = checkpoint(&mut env, &token(&p), None,
        json!([{"Id": "inv", "Type": "CHAINED_INVOKE", "Action": "START", "Payload": "{\"x\": 1}",
                "ChainedInvokeOptions": {"FunctionName": "arn:aws:lambda:us-east-1:000000000000:function:child:$LATEST"}}])).unwrap();
    let child = acts
        .iter()
        .find_map(|a| match a {
            Action::StartChild {
                id,
                workflow_id,
                input,
                wait,
            } => Some((id.clone(), workflow_id.clone(), input.clone(), *wait)),
            _ => None,
        })
        .expect("a child");
    assert_eq!(
        child,
        (
            "i1/c1".to_string(),
            "child".to_string(),
            json!({"x": 1}),
            true
        )
    );
    env.result(&k1, json!({"Status": "PENDING"}));
    let (_, p2) = invocation(&env.feed(Input::ChildCompleted {
        id: "i1/c1".into(),
        output: json!({"y": 2}),
        terminated: false,
    }));
    let ops = p2["InitialExecutionState"]["Operations"]
        .as_array()
        .unwrap();
    assert_eq!(ops[1]["Status"], "SUCCEEDED");
    assert_eq!(ops[1]["ChainedInvokeDetails"]["Result"], r#"{"y":2}"#);
}

#[test]
fn failed_invocations_are_retried_with_backoff_then_fail_the_execution() {
    let mut env = Env::durable(FN);
    let (mut key, _) = invocation(&env.start(json!({})));
    let mut delays = vec![];
    for n in 1..5 {
        let acts = env.fail(&key, "Runtime.Unavailable");
        let (id, due) = timer_of(&acts)[0].clone();
        delays.push((due - env.now).num_seconds());
        env.now = due;
        let (k, _) = invocation(&env.fire(&id));
        assert_eq!(k, format!("i1/inv{}", n + 1));
        key = k;
    }
    assert_eq!(delays, [1, 2, 4, 8]);
    let acts = env.fail(&key, "Runtime.Unavailable");
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::Fail { error } if error.name == "Runtime.Unavailable")));
    assert_eq!(env.status(), Status::Failed);
    // a late answer of an earlier invocation changes nothing
    assert!(env
        .try_feed(Input::ActionResult {
            key: "i1/inv1".into(),
            result: json!({"Status": "SUCCEEDED"})
        })
        .is_err());
}

#[test]
fn answers_of_the_function_end_the_execution_or_are_refused() {
    // FAILED: the error object's type is the instance error's name
    let mut env = Env::durable(FN);
    let (k, _) = invocation(&env.start(json!({})));
    env.result(&k, json!({"Status": "FAILED", "Error": {"ErrorType": "boom.PaymentDeclined", "ErrorMessage": "card declined"}}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        env.inst.error.as_ref().unwrap().name,
        "boom.PaymentDeclined"
    );
    // PENDING with nothing pending: retried as a failed invocation
    let mut env = Env::durable(FN);
    let (k, _) = invocation(&env.start(json!({})));
    let acts = env.result(&k, json!({"Status": "PENDING"}));
    assert_eq!(timer_of(&acts)[0].0, "i1/inv/retry1");
    // not an output at all
    let mut env = Env::durable(FN);
    let (k, _) = invocation(&env.start(json!({})));
    env.result(&k, json!("hello"));
    assert_eq!(
        env.inst.error.as_ref().unwrap().name,
        "InvalidParameterValueException"
    );
    // an answer from an invocation that is not the one in flight
    let mut env = Env::durable(FN);
    let (k, p) = invocation(&env.start(json!({})));
    checkpoint(
        &mut env,
        &token(&p),
        None,
        json!([{"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 1}}]),
    )
    .unwrap();
    env.result("i1/inv9", json!({"Status": "SUCCEEDED"}));
    assert_eq!(env.status(), Status::Running);
    env.result(&k, json!({"Status": "SUCCEEDED", "Result": "not json"}));
    assert_eq!(env.output(), json!("not json"));
}

#[test]
fn the_deadline_times_the_execution_out_and_stop_stops_it() {
    let mut env = Env::durable(FN);
    let (k, p) = invocation(&env.start(json!({})));
    checkpoint(&mut env, &token(&p), None, json!([{"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 7200}}])).unwrap();
    env.result(&k, json!({"Status": "PENDING"}));
    env.advance(Duration::seconds(3600));
    let acts = env.fire("i1/deadline");
    assert!(acts
        .iter()
        .any(|a| matches!(a, Action::CancelTimer { id } if id == "i1/op/w/wait")));
    assert_eq!(env.inst.error.as_ref().unwrap().name, "Execution.Timeout");
    assert_eq!(op(&env, "i1")["Status"], "TIMED_OUT");

    let mut env = Env::durable(FN);
    let (_, p) = invocation(&env.start(json!({})));
    env.feed(Input::Cancel);
    assert_eq!(env.status(), Status::Cancelled);
    assert_eq!(op(&env, "i1")["Status"], "STOPPED");
    // the invocation still running can checkpoint no more
    assert!(matches!(
        checkpoint(&mut env, &token(&p), None, json!([])),
        Err(EngineError::Finished { .. })
    ));
}

#[test]
fn children_of_a_finished_context_are_left_out_unless_it_replays_them() {
    let mut env = Env::durable(FN);
    let (k, p) = invocation(&env.start(json!({})));
    checkpoint(&mut env, &token(&p), None, json!([
        {"Id": "m", "Type": "CONTEXT", "Action": "START", "SubType": "Map"},
        {"Id": "m1", "Type": "STEP", "Action": "START", "ParentId": "m"},
        {"Id": "m1", "Type": "STEP", "Action": "SUCCEED", "ParentId": "m", "Payload": "1"},
        {"Id": "m", "Type": "CONTEXT", "Action": "SUCCEED", "Payload": "[1]", "ContextOptions": {"ReplayChildren": false}},
        {"Id": "r", "Type": "CONTEXT", "Action": "START"},
        {"Id": "r1", "Type": "STEP", "Action": "START", "ParentId": "r"},
        {"Id": "r1", "Type": "STEP", "Action": "SUCCEED", "ParentId": "r", "Payload": "2"},
        {"Id": "r", "Type": "CONTEXT", "Action": "SUCCEED", "Payload": "", "ContextOptions": {"ReplayChildren": true}},
        {"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 1}}
    ])).unwrap();
    env.result(&k, json!({"Status": "PENDING"}));
    env.advance(Duration::seconds(1));
    let (_, p2) = invocation(&env.fire("i1/op/w/wait"));
    let ids: Vec<&str> = p2["InitialExecutionState"]["Operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["Id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["i1", "m", "r", "r1", "w"]);
}

#[test]
fn an_execution_stamped_with_a_sub_millisecond_clock_reads_back_as_written() {
    // operations keep epoch milliseconds: the engine stamps in them, so the record read back
    // from the store is the record written (`Env::try_feed` checks every step; `broker::hot`
    // keeps records decoded)
    let mut env = Env::durable(FN);
    env.now = "2020-01-01T00:00:00.123456789Z".parse().unwrap();
    let (_, p) = invocation(&env.start(json!({})));
    env.advance(Duration::nanoseconds(2_000_999));
    let step = json!([{"Id": "s1", "Type": "STEP", "Action": "START", "Name": "load", "SubType": "Step"},
                      {"Id": "s1", "Type": "STEP", "Action": "SUCCEED", "Payload": "42"}]);
    checkpoint(&mut env, &token(&p), None, step).unwrap();
    let s1 = op(&env, "s1");
    assert_eq!(s1["StartTimestamp"], json!(1_577_836_800.125));
    assert_eq!(op(&env, "i1")["StartTimestamp"], json!(1_577_836_800.123));
}
