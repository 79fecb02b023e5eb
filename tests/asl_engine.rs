//! The ASL interpreter through the pure engine: every state type through its happy path
//! and its error paths (retried then caught, unhandled, timeout), the data flow between
//! states, callbacks by task token, Parallel and Map lanes. The instance goes through a
//! store round trip after every input (`common::Env`).

mod common;
use chrono::Duration;
use common::*;
use flowbroker::engine::{Action, EngineError, Input, Status};
use serde_json::{json, Value};

fn error_of(env: &Env) -> (String, String) {
    let e = env.inst.error.clone().expect("failed with an error");
    (e.name, e.message)
}

fn cancelled(acts: &[Action]) -> Vec<String> {
    acts.iter()
        .filter_map(|a| match a {
            Action::CancelTimer { id } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

const CHOICE: &str = r#"{"StartAt": "Shape", "States": {
    "Shape": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.shaped", "Next": "Route"},
    "Route": {"Type": "Choice", "Choices": [
        {"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"},
        {"And": [{"Variable": "$.n", "NumericLessThan": 10}, {"Variable": "$.shaped.x", "NumericEquals": 1}], "Next": "Small"}
      ], "Default": "Ten"},
    "Big": {"Type": "Succeed", "OutputPath": "$.n"},
    "Small": {"Type": "Pass", "Parameters": {"n.$": "$.n", "machine.$": "$$.StateMachine.Id", "state.$": "$$.State.Name"}, "End": true},
    "Ten": {"Type": "Fail", "Error": "TenIsOdd", "Cause": "n is 10"}
}}"#;

#[test]
fn pass_choice_and_succeed_move_data_as_the_document_says() {
    let mut env = Env::asl(CHOICE);
    env.start(json!({"n": 12}));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!(12));
    assert_eq!(env.inst.state.as_deref(), Some("Big"));

    let mut env = Env::asl(CHOICE);
    env.start(json!({"n": 3}));
    assert_eq!(
        env.output(),
        json!({"n": 3, "machine": "machine", "state": "Small"})
    );
}

#[test]
fn a_choice_without_a_match_or_a_missing_variable_fails_the_run() {
    let text = r#"{"StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericEquals": 1, "Next": "D"}]},
        "D": {"Type": "Succeed"}
    }}"#;
    let mut env = Env::asl(text);
    let acts = env.start(json!({"n": 2}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(error_of(&env).0, "States.NoChoiceMatched");
    assert!(acts.iter().any(|a| matches!(a, Action::Fail { .. })));
    let mut env = Env::asl(text);
    env.start(json!({}));
    let (name, cause) = error_of(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("$.n"), "{cause}");
}

#[test]
fn the_fail_state_ends_the_run_with_its_error_and_cause() {
    let mut env = Env::asl(CHOICE);
    env.start(json!({"n": 10}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        error_of(&env),
        ("TenIsOdd".to_string(), "n is 10".to_string())
    );
}

const TASK: &str = r#"{"StartAt": "Charge", "States": {
    "Charge": {
        "Type": "Task",
        "Resource": "arn:aws:lambda:us-east-1:1:function:charge",
        "Parameters": {"amount.$": "$.amount", "run.$": "$$.Execution.Id", "try.$": "$$.State.RetryCount"},
        "ResultSelector": {"receipt.$": "$.id"},
        "ResultPath": "$.payment",
        "TimeoutSeconds": 30,
        "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 2, "MaxAttempts": 2, "BackoffRate": 3.0}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Apologise"}],
        "Next": "Done"
    },
    "Apologise": {"Type": "Pass", "Result": "sorry", "ResultPath": "$.note", "End": true},
    "Done": {"Type": "Succeed"}
}}"#;

#[test]
fn a_task_calls_its_resource_and_places_the_selected_result() {
    let mut env = Env::asl(TASK);
    let acts = env.start(json!({"amount": 5}));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "i1/1/t0");
    assert_eq!(calls[0].1, "arn:aws:lambda:us-east-1:1:function:charge");
    assert_eq!(calls[0].2, json!({"amount": 5, "run": "i1", "try": 0}));
    assert_eq!(
        timers(&acts),
        vec![("i1/1/timeout0".to_string(), env.now + Duration::seconds(30))]
    );
    assert_eq!(env.status(), Status::Running);
    let acts = env.result("i1/1/t0", json!({"id": "r1", "junk": true}));
    assert_eq!(cancelled(&acts), vec!["i1/1/timeout0"]);
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!({"amount": 5, "payment": {"receipt": "r1"}})
    );
    assert_eq!(env.inst.state.as_deref(), Some("Done"));
}

#[test]
fn a_task_is_retried_with_backoff_then_caught() {
    let mut env = Env::asl(TASK);
    env.start(json!({"amount": 5}));
    // attempt 0 fails: retry after 2 s
    let acts = env.fail("i1/1/t0", "Busy");
    assert_eq!(
        timers(&acts),
        vec![("i1/1/retry1".to_string(), env.now + Duration::seconds(2))]
    );
    assert_eq!(env.status(), Status::Waiting);
    env.advance(Duration::seconds(2));
    let acts = env.fire("i1/1/retry1");
    let calls = invokes(&acts);
    assert_eq!(calls[0].0, "i1/1/t1", "each attempt has its own key");
    assert_eq!(calls[0].2["try"], json!(1), "$$.State.RetryCount");
    // attempt 1 fails: 2 x 3.0 = 6 s
    let acts = env.fail("i1/1/t1", "Busy");
    assert_eq!(
        timers(&acts),
        vec![("i1/1/retry2".to_string(), env.now + Duration::seconds(6))]
    );
    // a late answer to attempt 0 changes nothing
    assert!(env.result("i1/1/t0", json!({"id": "late"})).is_empty());
    env.advance(Duration::seconds(6));
    env.fire("i1/1/retry2");
    // MaxAttempts 2 used up: the catcher takes it, Error Output at $.error
    env.fail("i1/1/t2", "Busy");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!({"amount": 5, "note": "sorry",
               "error": {"Error": "Busy", "Cause": "Busy happened"}})
    );
}

#[test]
fn an_unhandled_task_error_fails_the_run_and_a_timeout_is_states_timeout() {
    let text = r#"{"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "http://svc/t", "TimeoutSeconds": 5,
              "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Slow"}], "End": true},
        "Slow": {"Type": "Fail", "Error": "TooSlow"}
    }}"#;
    let mut env = Env::asl(text);
    env.start(json!({}));
    env.fail("i1/1/t0", "Boom");
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        error_of(&env),
        ("Boom".to_string(), "Boom happened".to_string())
    );

    let mut env = Env::asl(text);
    env.start(json!({}));
    env.advance(Duration::seconds(5));
    env.fire("i1/1/timeout0");
    assert_eq!(error_of(&env).0, "TooSlow", "States.Timeout was caught");
    // the call's answer after the timeout is refused as finished, nothing else
    assert!(matches!(
        env.try_feed(Input::ActionResult {
            key: "i1/1/t0".into(),
            result: json!(1)
        }),
        Err(EngineError::Finished { .. })
    ));
}

#[test]
fn task_failed_does_not_match_timeouts_and_all_does_not_match_runtime_errors() {
    let mut env = Env::asl(
        r#"{"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "http://svc/t", "TimeoutSeconds": 5,
              "Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Caught"}], "End": true},
        "Caught": {"Type": "Succeed"}
    }}"#,
    );
    env.start(json!({}));
    env.fire("i1/1/timeout0");
    assert_eq!(error_of(&env).0, "States.Timeout");
    let mut env = Env::asl(
        r#"{"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "http://svc/t", "InputPath": "$.missing",
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}], "End": true},
        "Caught": {"Type": "Succeed"}
    }}"#,
    );
    env.start(json!({}));
    assert_eq!(error_of(&env).0, "States.Runtime");
}

#[test]
fn a_result_path_that_cannot_apply_is_result_path_match_failure_and_catchable() {
    let mut env = Env::asl(
        r#"{"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "http://svc/t", "ResultPath": "$.a.b",
              "Catch": [{"ErrorEquals": ["States.ResultPathMatchFailure"], "ResultPath": null, "Next": "Caught"}], "End": true},
        "Caught": {"Type": "Pass", "Result": "caught", "End": true}
    }}"#,
    );
    env.start(json!({"a": "not an object"}));
    env.result("i1/1/t0", json!(1));
    assert_eq!(env.output(), json!("caught"));
}

const TOKEN: &str = r#"{"StartAt": "Approve", "States": {
    "Approve": {
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"order.$": "$.order", "token.$": "$$.Task.Token"},
        "TimeoutSeconds": 3600,
        "HeartbeatSeconds": 60,
        "Catch": [{"ErrorEquals": ["Rejected"], "ResultPath": "$.why", "Next": "No"}],
        "ResultPath": "$.approval",
        "End": true
    },
    "No": {"Type": "Pass", "End": true}
}}"#;

fn answer(ty: &str, token: &str, data: Value) -> Input {
    Input::Event {
        event: event("/approver", ty, data, &[("tasktoken", token)]),
    }
}

#[test]
fn a_task_token_callback_is_an_event_out_and_an_event_back() {
    let mut env = Env::asl(TOKEN);
    let acts = env.start(json!({"order": 7}));
    assert!(invokes(&acts).is_empty(), "no call for .waitForTaskToken");
    let sent = produced(&acts);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].event_type, "flowbroker.task.requested");
    assert_eq!(sent[0].attribute("tasktoken").as_deref(), Some("i1/1/t0"));
    assert_eq!(
        sent[0].attribute("taskresource").as_deref(),
        Some("arn:aws:states:::sqs:sendMessage")
    );
    assert_eq!(sent[0].data, Some(json!({"order": 7, "token": "i1/1/t0"})));
    let mut armed = timers(&acts);
    armed.sort();
    assert_eq!(
        armed,
        vec![
            (
                "i1/1/heartbeat0".to_string(),
                env.now + Duration::seconds(60)
            ),
            (
                "i1/1/timeout0".to_string(),
                env.now + Duration::seconds(3600)
            ),
        ]
    );
    assert_eq!(env.status(), Status::Waiting);
    // a heartbeat restarts the heartbeat clock
    env.advance(Duration::seconds(50));
    let acts = env.feed(answer("flowbroker.task.heartbeat", "i1/1/t0", json!({})));
    assert_eq!(
        timers(&acts),
        vec![(
            "i1/1/heartbeat0".to_string(),
            env.now + Duration::seconds(60)
        )]
    );
    let acts = env.feed(answer(
        "flowbroker.task.success",
        "i1/1/t0",
        json!({"ok": true}),
    ));
    assert_eq!(cancelled(&acts).len(), 2);
    assert_eq!(env.output(), json!({"order": 7, "approval": {"ok": true}}));
}

#[test]
fn a_token_failure_is_caught_a_stale_token_refused_and_a_silent_worker_times_out() {
    let mut env = Env::asl(TOKEN);
    env.start(json!({"order": 7}));
    let e = env
        .try_feed(answer("flowbroker.task.success", "i1/9/t0", json!(1)))
        .unwrap_err();
    assert!(matches!(e, EngineError::TokenNotAwaited(_)), "{e}");
    env.feed(answer(
        "flowbroker.task.failure",
        "i1/1/t0",
        json!({"error": "Rejected", "cause": "over budget"}),
    ));
    assert_eq!(
        env.output(),
        json!({"order": 7, "why": {"Error": "Rejected", "Cause": "over budget"}})
    );

    let mut env = Env::asl(TOKEN);
    env.start(json!({"order": 7}));
    env.advance(Duration::seconds(60));
    let acts = env.fire("i1/1/heartbeat0");
    assert_eq!(cancelled(&acts), vec!["i1/1/timeout0"]);
    let (name, cause) = error_of(&env);
    assert_eq!(name, "States.Timeout");
    assert!(cause.contains("heartbeat"), "{cause}");
}

#[test]
fn wait_states_arm_durable_timers_from_every_field() {
    let text = r#"{"StartAt": "W1", "States": {
        "W1": {"Type": "Wait", "Seconds": 10, "Next": "W2"},
        "W2": {"Type": "Wait", "SecondsPath": "$.pause", "Next": "W3"},
        "W3": {"Type": "Wait", "TimestampPath": "$.at", "Next": "W4"},
        "W4": {"Type": "Wait", "Timestamp": "2019-01-01T00:00:00Z", "OutputPath": "$.pause", "End": true}
    }}"#;
    let mut env = Env::asl(text);
    let acts = env.start(json!({"pause": 5, "at": "2020-01-01T01:00:00Z"}));
    assert_eq!(
        timers(&acts),
        vec![("i1/1/wait0".to_string(), env.now + Duration::seconds(10))]
    );
    assert_eq!(env.status(), Status::Waiting);
    env.advance(Duration::seconds(10));
    let acts = env.fire("i1/1/wait0");
    assert_eq!(
        timers(&acts),
        vec![("i1/2/wait0".to_string(), env.now + Duration::seconds(5))]
    );
    env.advance(Duration::seconds(5));
    let acts = env.fire("i1/2/wait0");
    // a timer that fires twice (redelivered) is applied once
    assert!(env.fire("i1/2/wait0").is_empty());
    assert_eq!(
        timers(&acts),
        vec![(
            "i1/3/wait0".to_string(),
            "2020-01-01T01:00:00Z".parse().unwrap()
        )]
    );
    env.advance(Duration::hours(1));
    env.fire("i1/3/wait0");
    // W4's timestamp is in the past: it goes on at once
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!(5));

    let mut env = Env::asl(text);
    env.start(json!({"pause": "soon"}));
    env.fire("i1/1/wait0");
    let (name, cause) = error_of(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("SecondsPath"), "{cause}");
}

const PARALLEL: &str = r#"{"StartAt": "Both", "States": {
    "Both": {
        "Type": "Parallel",
        "Branches": [
            {"StartAt": "Add", "States": {"Add": {"Type": "Task", "Resource": "http://math/add", "End": true}}},
            {"StartAt": "Sub", "States": {
                "Sub": {"Type": "Task", "Resource": "http://math/sub", "Next": "Wait"},
                "Wait": {"Type": "Wait", "Seconds": 1, "End": true}}}
        ],
        "ResultPath": "$.results",
        "Catch": [{"ErrorEquals": ["States.BranchFailed"], "Next": "Broken"}],
        "End": true
    },
    "Broken": {"Type": "Pass", "End": true}
}}"#;

#[test]
fn parallel_branches_run_as_lanes_and_give_their_outputs_in_order() {
    let mut env = Env::asl(PARALLEL);
    let acts = env.start(json!({"n": [3, 2]}));
    let calls = invokes(&acts);
    let keys: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(keys, vec!["i1/2/t0", "i1/3/t0"]);
    assert_eq!(calls[0].2, json!({"n": [3, 2]}));
    // the second branch answers first, then waits
    env.result("i1/3/t0", json!(1));
    assert_eq!(env.status(), Status::Running);
    env.result("i1/2/t0", json!(5));
    assert_eq!(env.status(), Status::Waiting, "only a Wait is left");
    env.advance(Duration::seconds(1));
    env.fire("i1/4/wait0");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!({"n": [3, 2], "results": [5, 1]}));
}

#[test]
fn a_failed_branch_stops_the_others_and_is_caught_as_branch_failed() {
    let mut env = Env::asl(PARALLEL);
    env.start(json!({}));
    env.result("i1/3/t0", json!(1)); // branch 2 now waits on its timer
    let acts = env.fail("i1/2/t0", "Overflow");
    assert!(
        cancelled(&acts).contains(&"i1/4/wait0".to_string()),
        "{acts:?}"
    );
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.inst.state.as_deref(), Some("Broken"));
    assert_eq!(
        env.output(),
        json!({"Error": "Overflow", "Cause": "Overflow happened"})
    );
}

#[test]
fn an_unhandled_branch_error_fails_the_run_with_the_branch_error() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "Nope", "Cause": "no"}}}
        ]}}}"#,
    );
    env.start(json!({}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(error_of(&env), ("Nope".to_string(), "no".to_string()));
}

const MAP: &str = r#"{"StartAt": "Each", "States": {
    "Each": {
        "Type": "Map",
        "ItemsPath": "$.orders",
        "MaxConcurrency": 1,
        "ItemSelector": {"order.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index", "customer.$": "$.customer"},
        "ItemProcessor": {"StartAt": "Ship", "States": {
            "Ship": {"Type": "Task", "Resource": "http://ship", "ResultPath": "$.label", "End": true}}},
        "ResultSelector": {"labels.$": "$[*].label"},
        "Retry": [{"ErrorEquals": ["States.BranchFailed"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        "End": true
    }
}}"#;

#[test]
fn a_map_runs_its_items_within_max_concurrency_and_keeps_their_order() {
    let mut env = Env::asl(MAP);
    let acts = env.start(json!({"customer": "c1", "orders": ["a", "b"]}));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1, "MaxConcurrency 1");
    assert_eq!(calls[0].0, "i1/2/t0");
    assert_eq!(
        calls[0].2,
        json!({"order": "a", "index": 0, "customer": "c1"})
    );
    let acts = env.result("i1/2/t0", json!("L-a"));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].2,
        json!({"order": "b", "index": 1, "customer": "c1"})
    );
    env.result(&calls[0].0, json!("L-b"));
    assert_eq!(env.output(), json!({"labels": ["L-a", "L-b"]}));
}

#[test]
fn a_map_is_retried_whole_when_an_item_fails_and_an_empty_map_is_done_at_once() {
    let mut env = Env::asl(MAP);
    env.start(json!({"customer": "c1", "orders": ["a"]}));
    let acts = env.fail("i1/2/t0", "NoStock");
    assert_eq!(timers(&acts)[0].0, "i1/1/retry1");
    let acts = env.fire("i1/1/retry1");
    assert_eq!(invokes(&acts)[0].0, "i1/3/t0", "a new lane, new keys");
    env.fail("i1/3/t0", "NoStock");
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(error_of(&env).0, "NoStock");

    let mut env = Env::asl(MAP);
    env.start(json!({"customer": "c1", "orders": []}));
    assert_eq!(env.output(), json!({"labels": []}));
    let mut env = Env::asl(MAP);
    env.start(json!({"customer": "c1", "orders": "none"}));
    assert_eq!(error_of(&env).0, "States.Runtime");
}

#[test]
fn the_machine_timeout_fails_the_run_and_cancel_disarms_everything() {
    let text = r#"{"StartAt": "W", "TimeoutSeconds": 100, "States": {
        "W": {"Type": "Wait", "Seconds": 1000, "End": true}}}"#;
    let mut env = Env::asl(text);
    let acts = env.start(json!({}));
    assert_eq!(timers(&acts).len(), 2);
    env.advance(Duration::seconds(100));
    let acts = env.fire("i1/0/deadline0");
    assert_eq!(cancelled(&acts), vec!["i1/1/wait0"]);
    assert_eq!(error_of(&env).0, "States.Timeout");

    // a run that ends in time takes its deadline with it
    let mut env = Env::asl(
        r#"{"StartAt": "W", "TimeoutSeconds": 100, "States": {
        "W": {"Type": "Wait", "Seconds": 10, "End": true}}}"#,
    );
    env.start(json!({}));
    let acts = env.fire("i1/1/wait0");
    assert_eq!(cancelled(&acts), vec!["i1/0/deadline0"]);
    assert_eq!(env.status(), Status::Completed);

    let mut env = Env::asl(text);
    env.start(json!({}));
    let acts = env.feed(Input::Cancel);
    assert_eq!(cancelled(&acts).len(), 2);
    assert_eq!(env.status(), Status::Cancelled);
}

#[test]
fn a_loop_that_never_waits_fails_instead_of_spinning() {
    let mut env = Env::asl(
        r#"{"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Next": "B"},
        "B": {"Type": "Choice", "Choices": [{"Variable": "$.stop", "IsPresent": true, "Next": "E"}], "Default": "A"},
        "E": {"Type": "Succeed"}}}"#,
    );
    env.start(json!({}));
    let (name, cause) = error_of(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("10000"), "{cause}");
}

#[test]
fn non_object_input_runs_and_the_execution_input_stays_in_the_context() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Parameters": {"first.$": "$$.Execution.Input[0]", "all.$": "$"}, "End": true}}}"#,
    );
    env.start(json!([4, 5]));
    assert_eq!(env.output(), json!({"first": 4, "all": [4, 5]}));
}

#[test]
fn a_parallel_state_is_retried_whole_and_then_succeeds() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": true,
            "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 5, "MaxAttempts": 1}],
            "Branches": [
                {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "http://a", "End": true}}},
                {"StartAt": "B", "States": {"B": {"Type": "Pass", "Result": "b", "End": true}}}
            ]}}}"#,
    );
    env.start(json!({}));
    let acts = env.fail("i1/2/t0", "Flaky");
    assert_eq!(
        timers(&acts),
        vec![("i1/1/retry1".to_string(), env.now + Duration::seconds(5))]
    );
    env.advance(Duration::seconds(5));
    let acts = env.fire("i1/1/retry1");
    let calls = invokes(&acts);
    assert_eq!(
        calls[0].0, "i1/4/t0",
        "the branches run again as new visits"
    );
    env.result("i1/4/t0", json!("a"));
    assert_eq!(env.output(), json!(["a", "b"]));
}

#[test]
fn a_map_item_failure_is_retried_then_caught() {
    let mut env = Env::asl(
        r#"{"StartAt": "M", "States": {
            "M": {"Type": "Map", "Next": "Ok", "ItemsPath": "$.items",
                  "Iterator": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "http://t", "End": true}}},
                  "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1}],
                  "Catch": [{"ErrorEquals": ["States.BranchFailed"], "ResultPath": "$.failed", "Next": "Failed"}]},
            "Ok": {"Type": "Succeed"},
            "Failed": {"Type": "Pass", "End": true}}}"#,
    );
    let acts = env.start(json!({"items": [1, 2]}));
    assert_eq!(
        invokes(&acts).len(),
        2,
        "no MaxConcurrency: every item at once"
    );
    // item 1 fails while item 0 is still out; the item-0 call's answer then counts for nothing
    env.fail("i1/3/t0", "Down");
    assert!(env.result("i1/2/t0", json!(1)).is_empty());
    env.fire("i1/1/retry1");
    env.fail("i1/5/t0", "Down");
    assert_eq!(env.inst.state.as_deref(), Some("Failed"));
    assert_eq!(
        env.output()["failed"],
        json!({"Error": "Down", "Cause": "Down happened"})
    );
}

#[test]
fn data_errors_in_states_without_handlers_fail_the_run() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {"x.$": "$.nope"}, "End": true}}}"#,
    );
    env.start(json!({}));
    assert_eq!(error_of(&env).0, "States.ParameterPathFailure");
    let mut env = Env::asl(
        r#"{"StartAt": "S", "States": {"S": {"Type": "Succeed", "OutputPath": "$.nope"}}}"#,
    );
    env.start(json!({}));
    let (name, cause) = error_of(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("OutputPath"), "{cause}");
}
