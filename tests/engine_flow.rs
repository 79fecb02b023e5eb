//! Delay, switch data conditions, parallel, subflow, foreach, end kinds, cancellation and
//! determinism.

mod common;
use chrono::Duration;
use common::*;
use flowbroker::engine::{Action, ErrorInfo, Input, Status};
use serde_json::json;

#[test]
fn delay_fires_once_and_survives_a_store_round_trip() {
    let mut env = Env::yaml(
        "id: d\nname: d\nstates:\n- {name: Wait, type: delay, start: {kind: default}, timeDelay: PT5S, transition: {nextState: Go}}\n- {name: Go, type: inject, data: {went: true}, end: {kind: default}}\n",
    );
    let acts = env.start(json!({}));
    assert_eq!(
        timers(&acts),
        vec![("i1/1/timeout".to_string(), env.now + Duration::seconds(5))]
    );
    assert_eq!(env.status(), Status::Waiting);
    env.fire("i1/1/timeout");
    assert_eq!(env.output(), json!({"went": true}));
}

#[test]
fn switch_data_conditions_first_true_wins_else_default() {
    let wf = r#"
id: s
name: s
states:
- name: Check
  type: switch
  start: {kind: default}
  dataConditions:
  - {condition: "{{ $.applicants[?(@.age >= 18)] }}", transition: {nextState: Adult}}
  - {condition: "{{ $.applicants }}", transition: {nextState: Minor}}
  default: {nextState: Nobody}
- {name: Adult, type: inject, data: {route: adult}, end: {kind: default}}
- {name: Minor, type: inject, data: {route: minor}, end: {kind: default}}
- {name: Nobody, type: inject, data: {route: nobody}, end: {kind: default}}
"#;
    for (input, route) in [
        (json!({"applicants": [{"age": 30}, {"age": 12}]}), "adult"),
        (json!({"applicants": [{"age": 12}]}), "minor"),
        (json!({}), "nobody"),
    ] {
        let mut env = Env::yaml(wf);
        env.start(input);
        assert_eq!(env.output()["route"], json!(route));
    }
}

fn parallel(completion: &str) -> String {
    format!(
        r#"
id: p
name: p
functions: [{{name: f, resource: "http://x/f"}}]
states:
- name: Par
  type: parallel
  start: {{kind: default}}
  {completion}
  branches:
  - {{name: B0, actions: [{{functionRef: {{refName: f, parameters: {{b: 0}}}}}}]}}
  - {{name: B1, actions: [{{functionRef: {{refName: f, parameters: {{b: 1}}}}}}, {{functionRef: {{refName: f, parameters: {{b: 11}}}}}}]}}
  - {{name: B2, workflowId: child}}
  onError:
  - expression: "{{{{ $.error }}}}"
    transition: {{nextState: Caught}}
  end: {{kind: default}}
- {{name: Caught, type: inject, data: {{caught: true}}, end: {{kind: default}}}}
"#
    )
}

#[test]
fn parallel_and_waits_for_every_branch_and_merges_in_order() {
    let mut env = Env::yaml(&parallel("completionType: and"));
    let acts = env.start(json!({"base": 1}));
    let calls = invokes(&acts);
    assert_eq!(
        calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        vec!["i1/1/b0.a0", "i1/1/b1.a0"]
    );
    assert!(acts.iter().any(|a| matches!(a, Action::StartChild { id, workflow_id, wait: true, .. } if id == "i1/1/b2" && workflow_id == "child")));
    env.result("i1/1/b1.a0", json!({"v": "b1-first"}));
    let acts = env.result("i1/1/b0.a0", json!({"v": "b0"}));
    assert!(invokes(&acts).is_empty());
    env.feed(Input::ChildCompleted {
        id: "i1/1/b2".into(),
        output: json!({"child": true}),
        terminated: false,
    });
    assert_eq!(env.status(), Status::Running);
    env.result("i1/1/b1.a1", json!({"v": "b1-second"}));
    assert_eq!(
        env.output(),
        json!({"base": 1, "v": "b1-second", "child": true})
    );
}

#[test]
fn parallel_xor_takes_the_first_and_cancels_the_rest() {
    let mut env = Env::yaml(&parallel("completionType: xor"));
    env.start(json!({}));
    let acts = env.result("i1/1/b0.a0", json!({"winner": 0}));
    assert!(acts.contains(&Action::CancelChild {
        id: "i1/1/b2".into()
    }));
    assert_eq!(env.output(), json!({"winner": 0}));
}

#[test]
fn parallel_n_of_m() {
    let mut env = Env::yaml(&parallel("completionType: n_of_m\n  n: 2"));
    env.start(json!({}));
    env.result("i1/1/b0.a0", json!({"a": 1}));
    assert_eq!(env.status(), Status::Running);
    env.feed(Input::ChildCompleted {
        id: "i1/1/b2".into(),
        output: json!({"c": 1}),
        terminated: false,
    });
    assert_eq!(env.output(), json!({"a": 1, "c": 1}));
}

#[test]
fn parallel_branch_error_goes_to_on_error() {
    let mut env = Env::yaml(&parallel("completionType: and"));
    env.start(json!({}));
    let acts = env.fail("i1/1/b1.a0", "Boom");
    assert!(acts.contains(&Action::CancelChild {
        id: "i1/1/b2".into()
    }));
    assert_eq!(env.output()["caught"], json!(true));
    assert_eq!(env.output()["error"]["name"], json!("Boom"));
}

const SUB: &str = r#"
id: parent
name: parent
states:
- name: Sub
  type: subflow
  start: {kind: default}
  workflowId: handleApprovedVisaWorkflowID
  waitForCompletion: WAIT
  onError:
  - expression: "{{ $.errors[?(@.name == 'SubflowNotFound')] }}"
    transition: {nextState: Missing}
  transition: {nextState: After}
- {name: After, type: inject, data: {after: true}, end: {kind: default}}
- {name: Missing, type: inject, data: {missing: true}, end: {kind: default}}
"#;

#[test]
fn subflow_waits_and_merges_child_output() {
    let mut env = Env::yaml(&SUB.replace("WAIT", "true"));
    let acts = env.start(json!({"x": 1}));
    assert_eq!(
        acts,
        vec![Action::StartChild {
            id: "i1/1/sub".into(),
            workflow_id: "handleApprovedVisaWorkflowID".into(),
            input: json!({"x": 1}),
            wait: true
        }]
    );
    env.feed(Input::ChildCompleted {
        id: "i1/1/sub".into(),
        output: json!({"visa": "ok"}),
        terminated: false,
    });
    assert_eq!(env.output(), json!({"x": 1, "visa": "ok", "after": true}));
}

#[test]
fn subflow_without_waiting_continues_at_once() {
    let mut env = Env::yaml(&SUB.replace("WAIT", "false"));
    let acts = env.start(json!({}));
    assert!(matches!(&acts[0], Action::StartChild { wait: false, .. }));
    assert_eq!(env.output(), json!({"after": true}));
}

#[test]
fn subflow_failure_and_termination() {
    let mut env = Env::yaml(&SUB.replace("WAIT", "true"));
    env.start(json!({}));
    env.feed(Input::ChildFailed {
        id: "i1/1/sub".into(),
        error: ErrorInfo::new("SubflowNotFound", "no such workflow"),
    });
    assert_eq!(env.output()["missing"], json!(true));

    let mut env = Env::yaml(&SUB.replace("WAIT", "true"));
    env.start(json!({"k": 1}));
    let acts = env.feed(Input::ChildCompleted {
        id: "i1/1/sub".into(),
        output: json!({}),
        terminated: true,
    });
    assert_eq!(env.status(), Status::Terminated);
    assert!(matches!(acts.last(), Some(Action::Terminate { .. })));
}

#[test]
fn spec_foreach_sends_one_confirmation_per_completed_order() {
    let mut env = Env::json_file("tests/fixtures/spec/L2223.json");
    let orders = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(common::root().join("tests/fixtures/spec/L2191.json")).unwrap(),
    )
    .unwrap();
    let acts = env.start(orders);
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].2,
        json!({"orderNumber": "1234", "email": "firstBuyer@buyer.com"})
    );
    assert_eq!(
        calls[1].2,
        json!({"orderNumber": "5678", "email": "secondBuyer@buyer.com"})
    );
    // Results arrive out of order; the collection keeps input order.
    env.result(&calls[1].0, json!({"sent": "5678"}));
    env.result(&calls[0].0, json!({"sent": "1234"}));
    assert_eq!(
        env.output()["confirmationresults"],
        json!([{"sent": "1234"}, {"sent": "5678"}])
    );
    assert_eq!(env.output()["orders"].as_array().unwrap().len(), 3);
}

const FOREACH: &str = r#"
id: fe
name: fe
functions: [{name: f, resource: "http://x/f"}]
states:
- name: Each
  type: foreach
  start: {kind: default}
  inputCollection: "{{ $.items }}"
  iterationParam: item
  outputCollection: "{{ $.out.results }}"
  max: 1
  actions: [{functionRef: {refName: f, parameters: {n: "{{ $.item }}"}}}]
  onError:
  - expression: "{{ $.errors[?(@.name == 'InvalidInputCollection')] }}"
    transition: {nextState: Bad}
  end: {kind: default}
- {name: Bad, type: inject, data: {bad: true}, end: {kind: default}}
"#;

#[test]
fn foreach_max_bounds_concurrency() {
    let mut env = Env::yaml(FOREACH);
    let acts = env.start(json!({"items": [1, 2, 3]}));
    assert_eq!(invokes(&acts).len(), 1);
    let acts = env.result("i1/1/i0.a0", json!("one"));
    assert_eq!(invokes(&acts)[0].2, json!({"n": 2}));
    env.result("i1/1/i1.a0", json!("two"));
    env.result("i1/1/i2.a0", json!("three"));
    assert_eq!(
        env.output()["out"]["results"],
        json!([{"result": "one"}, {"result": "two"}, {"result": "three"}])
    );
}

#[test]
fn foreach_over_a_non_array_is_an_error() {
    let mut env = Env::yaml(FOREACH);
    env.start(json!({"items": {"not": "an array"}}));
    assert_eq!(env.output()["bad"], json!(true));
}

#[test]
fn foreach_over_an_empty_array_completes() {
    let mut env = Env::yaml(FOREACH);
    env.start(json!({"items": []}));
    assert_eq!(env.output()["out"]["results"], json!([]));
}

#[test]
fn foreach_with_a_workflow_runs_children() {
    let wf = FOREACH.replace(
        "  actions: [{functionRef: {refName: f, parameters: {n: \"{{ $.item }}\"}}}]\n",
        "  workflowId: perItem\n",
    );
    let mut env = Env::yaml(&wf.replace("max: 1", "max: 0"));
    let acts = env.start(json!({"items": ["a", "b"]}));
    let children: Vec<_> = acts
        .iter()
        .filter(|a| matches!(a, Action::StartChild { .. }))
        .collect();
    assert_eq!(children.len(), 2);
    env.feed(Input::ChildCompleted {
        id: "i1/1/i1".into(),
        output: json!({"r": "b"}),
        terminated: false,
    });
    env.feed(Input::ChildCompleted {
        id: "i1/1/i0".into(),
        output: json!({"r": "a"}),
        terminated: false,
    });
    assert_eq!(
        env.output()["out"]["results"],
        json!([{"r": "a"}, {"r": "b"}])
    );
}

const ENDS: &str = r#"
id: ends
name: ends
events:
- {name: stepDone, type: step.done, kind: produced}
- {name: allDone, type: all.done, kind: produced}
functions: [{name: f, resource: "http://x/f"}]
states:
- name: First
  type: inject
  start: {kind: default}
  data: {orders: [1, 2], buyerId: b-9}
  transition:
    nextState: Second
    produceEvent: {eventRef: stepDone, data: {count: "{{ $.orders.length() }}"}}
- name: Second
  type: operation
  actions: [{functionRef: {refName: f}}, {functionRef: {refName: f}}]
  actionMode: parallel
  end:
    kind: END_KIND
    produceEvent: {eventRef: allDone, data: "{{ $.orders }}", contextAttributes: [{buyerId: "{{ $.buyerId }}"}]}
"#;

#[test]
fn end_event_and_transition_events_have_deterministic_ids() {
    let run = || {
        let mut env = Env::yaml(&ENDS.replace("END_KIND", "event"));
        let acts = env.start(json!({}));
        assert_eq!(invokes(&acts).len(), 2, "parallel action mode starts both");
        env.result("i1/2/a1", json!({"b": 1}));
        env.result("i1/2/a0", json!({"a": 1}));
        (env.status(), produced(&env.log))
    };
    let (status, first) = run();
    assert_eq!(status, Status::Completed);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].event_type, "step.done");
    assert_eq!(first[0].data, Some(json!({"count": 2})));
    assert_eq!(first[1].event_type, "all.done");
    assert_eq!(first[1].data, Some(json!([1, 2])));
    assert_eq!(first[1].extensions["buyerid"], json!("b-9"));
    assert_eq!(first[1].extensions["workflowid"], json!("ends"));
    assert_ne!(first[0].id, first[1].id);
    let (_, second) = run();
    assert_eq!(
        first, second,
        "replaying the same inputs yields the same events, ids included"
    );
}

#[test]
fn terminate_end_and_cancel() {
    let mut env = Env::yaml(&ENDS.replace("END_KIND", "terminate"));
    env.start(json!({}));
    env.result("i1/2/a0", json!({}));
    let acts = env.result("i1/2/a1", json!({}));
    assert_eq!(env.status(), Status::Terminated);
    assert!(matches!(acts.last(), Some(Action::Terminate { .. })));

    let mut env = Env::yaml(&ENDS.replace("END_KIND", "default"));
    env.start(json!({}));
    let acts = env.feed(Input::Cancel);
    assert_eq!(acts, vec![Action::Cancelled]);
    assert_eq!(env.status(), Status::Cancelled);
    assert!(env.try_feed(Input::Cancel).is_err());
}

#[test]
fn a_loop_that_never_waits_fails_instead_of_spinning() {
    let mut env = Env::yaml(
        r#"
id: loop
name: loop
states:
- {name: A, type: inject, start: {kind: default}, data: {n: 1}, transition: {nextState: B}}
- name: B
  type: switch
  dataConditions: [{condition: "{{ $.n }}", transition: {nextState: A}}]
  default: {nextState: C}
- {name: C, type: inject, end: {kind: default}}
"#,
    );
    env.start(json!({}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        env.inst.error.as_ref().unwrap().name,
        "TransitionLimitExceeded"
    );
    // the data is the last state's output, as the failed entry found it
    assert_eq!(env.inst.data, json!({"n": 1}));
}
