//! Retries, onError, unhandled errors, action timeouts and restricted transitions.

mod common;
use chrono::Duration;
use common::*;
use flowbroker::engine::{Action, Status};
use serde_json::json;

const OP: &str = r#"
id: op
name: op
functions: [{name: charge, resource: "http://pay/charge"}, {name: notify, resource: notifier}]
states:
- name: Charge
  type: operation
  start: {kind: default}
  actions:
  - functionRef: {refName: charge, parameters: {amount: "{{ $.amount }}"}}
    timeout: PT30S
  retry:
  - expression: "{{ $.errors[?(@.name == 'Busy')] }}"
    interval: R4/PT1M
    multiplier: PT2M
    maxAttempts: 4
  onError:
  - expression: "{{ $.errors[?(@.name == 'Busy')] }}"
    errorDataFilter: {dataOutputPath: "{{ $.exceptions[0] }}"}
    transition: {nextState: Apologise}
  - expression: "{{ $.errors[?(@.name == 'TimeoutError')] }}"
    transition: {nextState: Apologise}
  transition: {nextState: Done}
- name: Apologise
  type: inject
  data: {apologised: true}
  end: {kind: default}
- name: Done
  type: inject
  data: {charged: true}
  end: {kind: default}
"#;

#[test]
fn happy_path() {
    let mut env = Env::yaml(OP);
    let acts = env.start(json!({"amount": 5}));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "i1/1/a0");
    assert_eq!(calls[0].2, json!({"amount": 5}));
    assert_eq!(
        timers(&acts),
        vec![(
            "i1/1/a0/timeout".to_string(),
            env.now + Duration::seconds(30)
        )]
    );
    let acts = env.result("i1/1/a0", json!({"receipt": "r1"}));
    assert!(acts.contains(&Action::CancelTimer {
        id: "i1/1/a0/timeout".into()
    }));
    assert_eq!(
        env.output(),
        json!({"amount": 5, "receipt": "r1", "charged": true})
    );
}

/// The spec's retry example: R4/PT1M with multiplier PT2M waits 1, 3, 5, 7 minutes; after the
/// fourth retry fails, onError takes over with its error data filter.
#[test]
fn retried_then_caught_with_spec_waits() {
    let mut env = Env::yaml(OP);
    env.start(json!({"amount": 5}));
    let mut waits = vec![];
    for attempt in 0..4 {
        let acts = env.fail("i1/1/a0", "Busy");
        let armed = timers(&acts);
        assert_eq!(armed.len(), 1, "attempt {attempt}: {acts:?}");
        assert_eq!(armed[0].0, "i1/1/a0/retry");
        waits.push((armed[0].1 - env.now).num_minutes());
        env.now = armed[0].1;
        let acts = env.fire("i1/1/a0/retry");
        let calls = invokes(&acts);
        assert_eq!(
            calls[0].0, "i1/1/a0",
            "the idempotency key does not change across retries"
        );
        assert_eq!(calls[0].3, attempt + 1);
    }
    assert_eq!(waits, vec![1, 3, 5, 7]);
    env.fail("i1/1/a0", "Busy");
    assert_eq!(env.status(), Status::Completed);
    let out = env.output();
    assert_eq!(out["apologised"], json!(true));
    assert_eq!(out["exceptions"]["name"], json!("Busy"));
}

#[test]
fn unhandled_error_fails_the_instance() {
    let mut env = Env::yaml(OP);
    env.start(json!({}));
    let acts = env.fail("i1/1/a0", "Fatal");
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(env.inst.error.as_ref().unwrap().name, "Fatal");
    assert!(acts.iter().any(|a| matches!(a, Action::Fail { .. })));
    assert!(acts.contains(&Action::CancelTimer {
        id: "i1/1/a0/timeout".into()
    }));
}

#[test]
fn action_timeout_is_an_error_caught_by_on_error() {
    let mut env = Env::yaml(OP);
    env.start(json!({}));
    env.advance(Duration::seconds(30));
    env.fire("i1/1/a0/timeout");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output()["apologised"], json!(true));
    // A late answer to the timed-out call is refused: the instance has finished.
    let late = flowbroker::engine::Input::ActionResult {
        key: "i1/1/a0".into(),
        result: json!({}),
    };
    assert!(env.try_feed(late).is_err());
}

#[test]
fn unhandled_action_timeout_moves_the_state_on() {
    let wf = OP.replace("  - expression: \"{{ $.errors[?(@.name == 'TimeoutError')] }}\"\n    transition: {nextState: Apologise}\n", "");
    let mut env = Env::yaml(&wf);
    env.start(json!({}));
    env.fire("i1/1/a0/timeout");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output()["charged"], json!(true));
}

#[test]
fn stale_and_unknown_inputs_are_ignored() {
    let mut env = Env::yaml(OP);
    env.start(json!({}));
    assert!(env.result("i1/9/a0", json!({})).is_empty());
    assert!(env.fire("nope").is_empty());
    assert_eq!(env.status(), Status::Running);
}

const RESTRICTED: &str = r#"
id: rt
name: rt
functions: [{name: low, resource: "http://x/low"}]
states:
- name: lowRiskState
  type: operation
  start: {kind: default}
  actions: [{functionRef: {refName: low}}]
  transition:
    nextState: highRiskState
    expression: "{{ $.users[?(@.title == 'MANAGER')] }}"
- name: highRiskState
  type: inject
  end: {kind: default}
"#;

#[test]
fn restricted_transition_halts_with_a_named_error() {
    let mut env = Env::yaml(RESTRICTED);
    let acts = env.start(json!({"users": [{"title": "CLERK"}]}));
    env.result(&invokes(&acts)[0].0, json!({}));
    assert_eq!(env.status(), Status::Failed);
    let err = env.inst.error.clone().unwrap();
    assert_eq!(err.name, "TransitionConditionFailed");
    assert!(
        err.message.contains("lowRiskState") && err.message.contains("MANAGER"),
        "{}",
        err.message
    );

    let mut ok = Env::yaml(RESTRICTED);
    let acts = ok.start(json!({"users": [{"title": "MANAGER"}]}));
    ok.result(&invokes(&acts)[0].0, json!({}));
    assert_eq!(ok.status(), Status::Completed);
}

#[test]
fn max_attempts_zero_means_no_retry() {
    let wf = OP.replace("maxAttempts: 4", "maxAttempts: 0");
    let mut env = Env::yaml(&wf);
    env.start(json!({}));
    let acts = env.fail("i1/1/a0", "Busy");
    assert!(timers(&acts).iter().all(|(id, _)| !id.ends_with("/retry")));
    assert_eq!(env.output()["apologised"], json!(true));
}

const BIG: &str = r#"
id: big
name: big
events:
- {name: Report, type: report.ready, kind: produced}
states:
- name: Build
  type: inject
  start: {kind: default}
  data: {}
  transition:
    nextState: Done
    produceEvent: {eventRef: Report, data: "{{ $.blob }}"}
  onError:
  - expression: "{{ $.errors[?(@.name == 'EventTooLarge')] }}"
    transition: {nextState: TooBig}
- name: Done
  type: inject
  data: {sent: true}
  end: {kind: default}
- name: TooBig
  type: inject
  data: {sent: false}
  end:
    kind: event
    produceEvent: {eventRef: Report, data: "{{ $.blob }}"}
"#;

/// A produced event over the limit (`kafka.max_event_bytes`) is not produced: the state fails
/// with `EventTooLarge`, which its onError takes; an oversized event on the handler's own way
/// fails the instance instead of being handled again. Under the limit, the event goes out.
#[test]
fn an_oversized_produced_event_is_the_error_event_too_large() {
    let blob = "x".repeat(1_000_000);
    let mut env = Env::yaml(BIG);
    let acts = env.start(json!({"blob": blob}));
    assert!(
        !acts.iter().any(|a| matches!(a, Action::Produce { .. })),
        "{acts:?}"
    );
    assert_eq!(env.status(), Status::Failed);
    let error = env.inst.error.clone().unwrap();
    assert_eq!(error.name, "EventTooLarge");
    assert!(
        error.message.contains("1000") && error.message.contains("max_event_bytes"),
        "{}",
        error.message
    );
    assert_eq!(
        env.inst.state.as_deref(),
        Some("TooBig"),
        "the onError transition was taken"
    );

    let mut env = Env::yaml(BIG);
    let acts = env.start(json!({"blob": "small"}));
    assert!(acts.iter().any(|a| matches!(a, Action::Produce { .. })));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.inst.output.as_ref().unwrap()["sent"], json!(true));
}
