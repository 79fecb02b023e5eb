//! ASL variables (`Assign`, `$name`) through the pure engine: what each state type assigns
//! from, when new values are seen, Catch and Choice assignments, scopes across Parallel and
//! Map, and the deploy-time checks. Every instance goes through a store round trip after
//! every input (`common::Env`), so variables survive it.

mod common;
use common::*;
use flowbroker::definition::Definition;
use flowbroker::engine::Status;
use flowbroker::load::Format;
use serde_json::json;

#[test]
fn a_pass_assigns_from_its_result_and_later_states_read_the_variables() {
    let mut env = Env::asl(
        r#"{"StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Result": {"price": 10, "name": "hat"},
                "Assign": {"item.$": "$", "count": 2, "label": "$literal"},
                "OutputPath": "$.name", "Next": "Swap"},
        "Swap": {"Type": "Pass", "Assign": {"count.$": "$item.price", "first.$": "$count"},
                "Parameters": {"seen.$": "$count"}, "Next": "Use"},
        "Use": {"Type": "Pass", "Parameters": {"item.$": "$item.name", "count.$": "$count",
                "first.$": "$first", "label.$": "$label", "in.$": "$"}, "End": true}
    }}"#,
    );
    env.start(json!({}));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!({
            "item": "hat",
            // Swap's assignments read the values from before Swap, and all at once
            "count": 10,
            "first": 2,
            // a value without `.$` is a literal, even if it looks like a path
            "label": "$literal",
            // Swap's Parameters still saw count = 2: new values take effect after the state
            "in": {"seen": 2}
        })
    );
}

const TASK: &str = r#"{"StartAt": "Call", "States": {
    "Call": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
             "ResultSelector": {"only.$": "$.a"},
             "Assign": {"raw.$": "$", "where.$": "$$.State.Name"},
             "Catch": [{"ErrorEquals": ["States.ALL"], "Assign": {"why.$": "$.Error"}, "ResultPath": "$.err", "Next": "Caught"}],
             "Next": "Done"},
    "Done": {"Type": "Pass", "Parameters": {"raw.$": "$raw", "where.$": "$where", "out.$": "$"}, "End": true},
    "Caught": {"Type": "Pass", "Parameters": {"why.$": "$why", "raw.$": "States.ArrayLength(States.Array())"}, "End": true}
}}"#;

#[test]
fn a_task_assigns_from_its_raw_result_and_a_catch_from_the_error_output() {
    let mut env = Env::asl(TASK);
    env.start(json!({}));
    env.result("i1/1/t0", json!({"a": 1, "b": 2}));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!({"raw": {"a": 1, "b": 2}, "where": "Call", "out": {"only": 1}})
    );

    let mut env = Env::asl(TASK);
    env.start(json!({}));
    env.fail("i1/1/t0", "Boom");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!({"why": "Boom", "raw": 0}));
}

#[test]
fn a_failed_state_does_not_assign_and_an_unset_variable_fails_the_read() {
    let mut env = Env::asl(
        r#"{"StartAt": "Call", "States": {
        "Call": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
                 "Assign": {"raw.$": "$"},
                 "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Read"}], "Next": "Read"},
        "Read": {"Type": "Pass", "Parameters": {"raw.$": "$raw"}, "End": true}
    }}"#,
    );
    env.start(json!({}));
    env.fail("i1/1/t0", "Boom");
    assert_eq!(env.status(), Status::Failed);
    let e = env.inst.error.clone().unwrap();
    assert_eq!(e.name, "States.ParameterPathFailure");
    assert!(e.message.contains("$raw is not set"), "{}", e.message);
}

#[test]
fn a_choice_assigns_from_the_matching_rule_or_else_for_its_default() {
    let text = r#"{"StartAt": "C", "States": {
        "C": {"Type": "Choice", "InputPath": "$.in",
              "Choices": [{"Variable": "$.n", "NumericGreaterThan": 5, "Assign": {"size": "big", "n.$": "$.n"}, "Next": "D"}],
              "Default": "D", "Assign": {"size": "small", "n": 0}},
        "D": {"Type": "Pass", "Parameters": {"size.$": "$size", "n.$": "$n"}, "End": true}
    }}"#;
    let mut env = Env::asl(text);
    env.start(json!({"in": {"n": 9}}));
    assert_eq!(env.output(), json!({"size": "big", "n": 9}));
    let mut env = Env::asl(text);
    env.start(json!({"in": {"n": 1}}));
    assert_eq!(env.output(), json!({"size": "small", "n": 0}));
}

#[test]
fn branches_and_iterations_read_outer_variables_and_keep_their_own() {
    let mut env = Env::asl(
        r#"{"StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"base": 100}, "Next": "Fan"},
        "Fan": {"Type": "Map", "ItemsPath": "$.xs",
                "ItemProcessor": {"StartAt": "Own", "States": {
                    "Own": {"Type": "Pass", "Assign": {"mine.$": "$"}, "Next": "Sum"},
                    "Sum": {"Type": "Pass", "Parameters": {"v.$": "States.MathAdd($mine, $base)"}, "OutputPath": "$.v", "End": true}
                }},
                "Assign": {"all.$": "$"}, "Next": "Par"},
        "Par": {"Type": "Parallel", "Branches": [
                    {"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"b.$": "$base", "all.$": "$all"}, "End": true}}},
                    {"StartAt": "B", "States": {"B": {"Type": "Pass", "Assign": {"mine": "b"}, "Parameters": {"m": 1}, "End": true}}}
                ], "End": true}
    }}"#,
    );
    env.start(json!({"xs": [1, 2, 3]}));
    assert_eq!(env.status(), Status::Completed);
    // each iteration had its own $mine; the Map's Assign saw the raw results
    assert_eq!(
        env.output(),
        json!([{"b": 100, "all": [101, 102, 103]}, {"m": 1}])
    );
}

#[test]
fn an_inner_scope_cannot_assign_an_outer_variable() {
    let d = rejected(
        r#"{"StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"x": 1}, "Next": "Par"},
        "Par": {"Type": "Parallel", "Branches": [
            {"StartAt": "A", "States": {"A": {"Type": "Pass", "Assign": {"x": 2}, "End": true}}}
        ], "End": true}
    }}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.Par.Branches[0].States.A.Assign.x"
                && m.contains("assigned in an outer scope")),
        "{d:?}"
    );
}

#[test]
fn malformed_assignments_are_located() {
    for (assign, at, want) in [
        (r#"{"a.b": 1}"#, "$.States.P.Assign['a.b']", "cannot be set"),
        (
            r#"{"1x": 1}"#,
            "$.States.P.Assign['1x']",
            "start with a letter",
        ),
        (r#"{"states": 1}"#, "$.States.P.Assign.states", "reserved"),
        (r#"[1]"#, "$.States.P.Assign", "must be an object"),
        (
            r#"{"x.$": "States.Nope(1)"}"#,
            "$.States.P.Assign['x.$']",
            "States.Nope",
        ),
    ] {
        let text = format!(
            r#"{{"StartAt": "P", "States": {{"P": {{"Type": "Pass", "Assign": {assign}, "End": true}}}}}}"#
        );
        let d = rejected(&text);
        assert!(
            d.iter().any(|(p, m)| p == at && m.contains(want)),
            "{assign}: {d:?}"
        );
    }
    let d = rejected(
        r#"{"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E", "Assign": {"x": 1}}}}"#,
    );
    assert!(d.iter().any(|(p, _)| p == "$.States.F.Assign"), "{d:?}");
}

#[test]
fn reading_a_variable_no_state_assigns_is_warned_at_deploy() {
    let def = Definition::parse(
        "m.asl.json",
        r#"{"StartAt": "P", "States": {
            "P": {"Type": "Pass", "Assign": {"total": 1}, "Next": "Q"},
            "Q": {"Type": "Pass", "Parameters": {"t.$": "$totl"}, "End": true}
        }}"#,
        Format::Json,
    )
    .expect("a warning, not an error");
    let w = &def.warnings;
    assert!(
        w.iter()
            .any(|d| d.path == "$.States.Q" && d.message.contains("did you mean \"total\"")),
        "{w:?}"
    );
}

#[test]
fn result_path_cannot_name_a_variable() {
    let d = rejected(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "ResultPath": "$result", "End": true}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.P.ResultPath" && m.contains("names a variable")),
        "{d:?}"
    );
}

#[test]
fn an_iteration_stores_only_its_own_variables() {
    let mut env = Env::asl(
        r#"{"StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"big.$": "$.big"}, "Next": "Fan"},
        "Fan": {"Type": "Map", "ItemsPath": "$.xs",
                "ItemProcessor": {"StartAt": "Own", "States": {
                    "Own": {"Type": "Pass", "Assign": {"mine.$": "$"}, "Next": "Call"},
                    "Call": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f",
                             "Parameters": {"big.$": "$big", "mine.$": "$mine"}, "End": true}
                }}, "End": true}
    }}"#,
    );
    let big = "x".repeat(10_000);
    let acts = env.start(json!({"big": big, "xs": [1, 2, 3]}));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 3);
    for (n, c) in calls.iter().enumerate() {
        assert_eq!(c.2, json!({"big": big, "mine": n + 1}));
    }
    // the outer variable is stored once, in the root thread, not in every iteration: the
    // record holds the input three times (the instance's, the execution's, the Map state's)
    // and $big once; a copy per iteration would make it 7
    let stored = serde_json::to_string(&env.inst).unwrap();
    assert_eq!(stored.matches(&big).count(), 4);
    // after the store round trip the iterations still read it
    env.result(&calls[2].0, json!("c"));
    env.result(&calls[0].0, json!("a"));
    env.result(&calls[1].0, json!("b"));
    assert_eq!(env.output(), json!(["a", "b", "c"]));
}
