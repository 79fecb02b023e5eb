//! The four language rules the spec's own examples need (SEMANTICS.md "Parsing", "Data flow",
//! "States"), through the pure engine: subflows wait by default, enumerations in any case,
//! sub-workflows inherit their parent's definitions, state data is always an object.

mod common;
use chrono::Duration;
use common::*;
use flowbroker::definition::Definition;
use flowbroker::engine::{Action, Input, Status};
use flowbroker::family::Family;
use flowbroker::load::{parse_workflow, Format};
use serde_json::json;

#[test]
fn a_subflow_without_wait_for_completion_waits_for_its_child() {
    let mut env = Env::yaml(
        "id: p\nname: p\nstates:\n- {name: Visa, type: subflow, workflowId: visa, start: {kind: default}, transition: {nextState: After}}\n- {name: After, type: inject, data: {after: true}, end: {kind: default}}\n",
    );
    let warned: Vec<String> = env.def.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        warned
            .iter()
            .any(|w| w.contains("$.states[0].waitForCompletion: subflow state \"Visa\"")),
        "{warned:#?}"
    );
    let acts = env.start(json!({"x": 1}));
    assert!(
        matches!(&acts[..], [Action::StartChild { wait: true, .. }]),
        "{acts:?}"
    );
    assert!(!env.status().is_final(), "the parent waits for its child");
    assert_eq!(env.inst.state.as_deref(), Some("Visa"));
    env.feed(Input::ChildCompleted {
        id: "i1/1/sub".into(),
        output: json!({"visa": "granted"}),
        terminated: false,
    });
    assert_eq!(
        env.output(),
        json!({"x": 1, "visa": "granted", "after": true})
    );
}

#[test]
fn enumerations_in_any_case_run_like_the_specs_spelling() {
    let lower = "id: s\nname: s\nstates:\n- name: Check\n  type: switch\n  start: {kind: default}\n  dataConditions:\n  - {condition: \"{{ $[?(@.n > 1)] }}\", transition: {nextState: Big}}\n  default: {nextState: Small}\n- {name: Big, type: inject, data: {big: true}, end: {kind: terminate}}\n- {name: Small, type: operation, actionMode: parallel, actions: [], end: {kind: default}}\n";
    let upper = lower
        .replace("type: switch", "type: SWITCH")
        .replace("type: inject", "type: Inject")
        .replace(
            "kind: default}\n  dataConditions",
            "kind: DEFAULT}\n  dataConditions",
        )
        .replace("kind: terminate", "kind: TERMINATE")
        .replace("actionMode: parallel", "actionMode: PARALLEL");
    assert_ne!(lower, upper);
    for n in [1, 2] {
        let mut a = Env::yaml(lower);
        let mut b = Env::yaml(&upper);
        let case = |e: &Env| {
            e.def
                .warnings
                .iter()
                .filter(|w| w.message.contains(" read as "))
                .count()
        };
        assert_eq!((case(&a), case(&b)), (0, 5), "{:#?}", b.def.warnings);
        a.start(json!({"n": n}));
        b.start(json!({"n": n}));
        assert_eq!(a.output(), b.output());
        assert_eq!(a.status(), b.status());
    }
}

const PARENT: &str = "id: parent\nname: p\nfunctions:\n- {name: audit, resource: \"http://parent/audit\"}\n- {name: shared, resource: \"http://parent/shared\"}\nevents:\n- {name: Approved, type: approved, source: desk, kind: consumed}\nstates:\n- {name: Run, type: subflow, workflowId: child, start: {kind: default}, end: {kind: default}}\n";
const CHILD: &str = "id: child\nname: c\nfunctions:\n- {name: shared, resource: \"http://child/shared\"}\nstates:\n- name: Call\n  type: operation\n  start: {kind: default}\n  actions: [{functionRef: {refName: audit}}, {functionRef: {refName: shared}}]\n  transition: {nextState: Wait}\n- name: Wait\n  type: event\n  eventsActions: [{eventRefs: [Approved]}]\n  end: {kind: default}\n";

#[test]
fn a_sub_workflow_uses_its_parents_functions_and_events_and_its_own_win() {
    let mut family = Family::default();
    for t in [PARENT, CHILD] {
        family.add(&parse_workflow("t.yaml", t, Format::Yaml).workflow.unwrap());
    }
    let parent = Definition::parse("parent.yaml", PARENT, Format::Yaml).unwrap();
    let child = Definition::parse_in("child.yaml", CHILD, Format::Yaml, &family).unwrap();
    let def = child
        .inherit([&parent])
        .expect("the child lacks audit and Approved");
    let mut env = Env::with_definition(def);
    let acts = env.start(json!({}));
    let resources: Vec<(String, String)> = acts
        .iter()
        .filter_map(|a| match a {
            Action::Invoke {
                function, resource, ..
            } => Some((function.clone(), resource.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        resources,
        vec![("audit".to_string(), "http://parent/audit".to_string())]
    );
    let key = invokes(&acts)[0].0.clone();
    let acts = env.result(&key, json!({}));
    assert_eq!(
        acts.iter()
            .find_map(|a| match a {
                Action::Invoke { resource, .. } => Some(resource.clone()),
                _ => None,
            })
            .as_deref(),
        Some("http://child/shared"),
        "the child's own definition wins"
    );
    let key = invokes(&acts)[0].0.clone();
    env.result(&key, json!({}));
    assert_eq!(env.status(), Status::Waiting);
    env.event(event("desk", "approved", json!({"ok": true}), &[]));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!({"ok": true}));
}

#[test]
fn the_job_monitoring_example_polls_until_succeeded_then_reports_once() {
    let mut env = Env::json_file("tests/fixtures/examples/job-monitoring.json");
    let acts = env.start(json!({"job": {"name": "nightly"}}));
    let (key, f, params, _) = invokes(&acts).remove(0);
    assert_eq!(
        (f.as_str(), params),
        ("submitJob", json!({"name": "nightly"}))
    );
    let acts = env.result(&key, json!({"jobuid": "job-7"}));
    // `dataOutputPath: $.jobuid` selected a string: state data is {"jobuid": ...}
    assert_eq!(env.inst.data, json!({"jobuid": "job-7"}));
    let mut checks = 0;
    let mut reports = 0;
    let mut pending = acts;
    for status in ["RUNNING", "RUNNING", "SUCCEEDED"] {
        let (timer, _) = timers(&pending).remove(0);
        env.advance(Duration::seconds(5));
        let acts = env.fire(&timer);
        let (key, f, _, _) = invokes(&acts).remove(0);
        assert_eq!(f, "checkJobStatus");
        checks += 1;
        pending = env.result(&key, json!({"jobstatus": status}));
        assert!(env.inst.data.is_object(), "{}", env.inst.data);
        for (key, f, _, _) in invokes(&pending) {
            assert_eq!(f, "reportJobSuceeded");
            reports += 1;
            pending = env.result(&key, json!({"reported": true}));
        }
    }
    assert_eq!((checks, reports), (3, 1));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output()["jobstatus"], json!("SUCCEEDED"));
}

#[test]
fn a_final_output_selection_stays_as_it_is() {
    let mut env = Env::yaml(
        "id: g\nname: g\nstates:\n- {name: Greet, type: inject, start: {kind: default}, data: {greeting: hi}, stateDataFilter: {dataOutputPath: \"{{ $.greeting }}\"}, end: {kind: default}}\n",
    );
    env.start(json!({}));
    assert_eq!(env.output(), json!("hi"));
}

#[test]
fn a_data_input_path_selecting_a_string_is_stored_under_its_name() {
    let mut env = Env::yaml(
        "id: g\nname: g\nstates:\n- {name: Pick, type: inject, start: {kind: default}, data: {}, stateDataFilter: {dataInputPath: \"{{ $.name }}\"}, end: {kind: default}}\n",
    );
    env.start(json!({"name": "Ann", "other": 1}));
    assert_eq!(env.output(), json!({"name": "Ann"}));
}

/// The spec's state data filter examples ("State data filtering - State Data Filter"), re-read
/// under the rule that state data is always an object.
#[test]
fn the_specs_state_filter_examples_under_the_object_rule() {
    let input = json!({
        "fruits": ["apple", "orange", "pear"],
        "vegetables": [
            {"veggieName": "potato", "veggieLike": true},
            {"veggieName": "broccoli", "veggieLike": false}
        ]
    });
    let run = |filter: &str| {
        let mut env = Env::yaml(&format!(
            "id: f\nname: f\nstates:\n- {{name: S, type: inject, start: {{kind: default}}, data: {{}}, stateDataFilter: {filter}, transition: {{nextState: Next}}}}\n- {{name: Next, type: inject, data: {{}}, end: {{kind: default}}}}\n"
        ));
        env.start(input.clone());
        env.output()
    };
    // "The state data output then would include only the fruits data."
    assert_eq!(
        run("{dataInputPath: \"{{ $.fruits }}\"}"),
        json!({"fruits": ["apple", "orange", "pear"]})
    );
    // The direct way: only the veggie-like vegetables (`== true`: a bare `@.veggieLike` is
    // an existence test in Jayway JsonPath, docs/semantics.md). One match is that value, an
    // object, so it is the state data as it is; several go under the path's member name.
    assert_eq!(
        run("{dataInputPath: \"{{ $.vegetables[?(@.veggieLike == true)] }}\"}"),
        json!({"veggieName": "potato", "veggieLike": true})
    );
    assert_eq!(
        run("{dataInputPath: \"{{ $.vegetables[?(@.veggieName)] }}\"}"),
        json!({"vegetables": input["vegetables"].clone()})
    );
    // The two-step way: the input becomes {"vegetables": [...]}, on which the root filter
    // `$.[?(@.veggieLike)]` selects nothing, so the output is not filtered. This differs from
    // the prose, which assumed a bare array as state data (docs/semantics.md).
    assert_eq!(
        run("{dataInputPath: \"{{ $.vegetables }}\", dataOutputPath: \"{{ $.[?(@.veggieLike)] }}\"}"),
        json!({"vegetables": input["vegetables"].clone()})
    );
}
