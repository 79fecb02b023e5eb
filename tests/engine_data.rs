//! Data flow through the engine, including the spec's worked data-filter example.

mod common;
use common::*;
use flowbroker::engine::{Activity, Status};
use serde_json::json;

/// The spec's "Using multiple filters" example (customer greeting), step by step, under the
/// rules of SEMANTICS.md: filters replace data without wrapping, the event filter falls back to
/// the event's `data`, a filtered result is stored under the path's last member name.
#[test]
fn spec_customer_greeting_step_by_step() {
    let mut env = Env::json_file("tests/fixtures/spec/L3227.json");
    // (1) Workflow starts: stateDataFilter.dataInputPath selects the greetings.
    let acts = env.start(json!({
        "hello": {"english": "Hello", "spanish": "Hola", "german": "Hallo", "russian": ""},
        "goodbye": {"english": "Goodbye", "spanish": "Adis", "german": "Auf Wiedersehen", "russian": ""}
    }));
    assert!(acts.is_empty());
    assert_eq!(env.status(), Status::Waiting);
    assert_eq!(
        env.inst.data,
        json!({"english": "Hello", "spanish": "Hola", "german": "Hallo", "russian": ""})
    );

    // (2) The CloudEvent arrives: its filter `$.customer` selects from the event's data.
    let customer = json!({"name": "John Michaels", "address": "111 Some Street, SomeCity, SomeCountry", "age": 40});
    let acts = env.event(event(
        "customer-arrival-event-source",
        "customer-arrival-type",
        json!({"customer": customer}),
        &[],
    ));
    assert_eq!(env.inst.data["customer"], customer);
    assert_eq!(env.inst.data["spanish"], json!("Hola"));

    // (3) The action runs with its parameters evaluated against the state data.
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "greetingFunction");
    assert_eq!(
        calls[0].2,
        json!({"greeting": null, "customerName": "John Michaels"})
    );
    assert_eq!(env.status(), Status::Running);

    // (4) The result is placed under `finalCustomerGreeting`; dataOutputPath selects it.
    let acts = env.result(
        &calls[0].0,
        json!({"finalCustomerGreeting": "Hola John Michaels!"}),
    );
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!("Hola John Michaels!"));
    assert!(matches!(
        acts.last(),
        Some(flowbroker::engine::Action::Complete { .. })
    ));
}

#[test]
fn input_must_be_an_object_and_defaults_to_empty() {
    let wf = "id: w\nname: w\nstates:\n- name: A\n  type: inject\n  start: {kind: default}\n  data: {x: 1}\n  end: {kind: default}\n";
    let mut env = Env::yaml(wf);
    assert!(env
        .try_feed(flowbroker::engine::Input::Start {
            input: json!([1]),
            events: vec![]
        })
        .is_err());
    env.start(serde_json::Value::Null);
    assert_eq!(env.output(), json!({"x": 1}));
}

#[test]
fn inject_then_output_filter_selects_people_under_40() {
    let mut env = Env::yaml(
        r#"
id: inject
name: inject
states:
- name: SimpleInjectState
  type: inject
  start: {kind: default}
  data:
    people:
    - {fname: John, age: 40}
    - {fname: Marry, age: 25}
    - {fname: Kelly, age: 30}
  stateDataFilter:
    dataOutputPath: "{{ $.people[?(@.age < 40)] }}"
  end: {kind: default}
"#,
    );
    env.start(json!({"keep": true}));
    assert_eq!(
        env.output(),
        json!([{"fname": "Marry", "age": 25}, {"fname": "Kelly", "age": 30}])
    );
}

#[test]
fn action_filters_narrow_input_and_select_results() {
    let mut env = Env::yaml(
        r#"
id: f
name: f
functions: [{name: breads, resource: "http://x/breads"}]
states:
- name: Op
  type: operation
  start: {kind: default}
  actions:
  - functionRef: {refName: breads, parameters: {lang: "{{ $.code }}", note: "lang={{ $.code }}"}}
    actionDataFilter:
      dataInputPath: "{{ $.language }}"
      dataResultsPath: "{{ $.breads }}"
  end: {kind: default}
"#,
    );
    let acts = env.start(json!({"language": {"code": "es"}, "other": 1}));
    let calls = invokes(&acts);
    assert_eq!(calls[0].2, json!({"lang": "es", "note": "lang=es"}));
    env.result(
        &calls[0].0,
        json!({"breads": ["baguette", "rye"], "pasta": ["penne"]}),
    );
    assert_eq!(
        env.output(),
        json!({"language": {"code": "es"}, "other": 1, "breads": ["baguette", "rye"]})
    );
}

#[test]
fn non_object_results_go_under_result() {
    let mut env = Env::yaml(
        r#"
id: r
name: r
functions: [{name: f, resource: "http://x/f"}]
states:
- name: Op
  type: operation
  start: {kind: default}
  actions: [{functionRef: {refName: f}}]
  end: {kind: default}
"#,
    );
    let acts = env.start(json!({}));
    env.result(&invokes(&acts)[0].0, json!(42));
    assert_eq!(env.output(), json!({"result": 42}));
    assert_eq!(env.inst.activity, Activity::Idle);
}
