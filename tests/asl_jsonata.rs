//! ASL states in JSONata (`QueryLanguage: "JSONata"`) through the pure engine: `Arguments`,
//! `Output`, `Assign` and `$states` in every state type, `Condition`, `Items`, expressions in
//! number and text fields, catchers, errors, and what is refused at deploy. Every instance
//! goes through a store round trip after every input (`common::Env`).

mod common;
use common::*;
use flowbroker::engine::Status;
use serde_json::json;

const ORDER: &str = r#"{"QueryLanguage": "JSONata", "StartAt": "Start", "States": {
    "Start": {"Type": "Pass", "Assign": {"customer": "{% $states.input.customer %}", "limit": 100},
              "Output": {"items": "{% $states.input.items %}"}, "Next": "Price"},
    "Price": {"Type": "Task", "Resource": "arn:aws:lambda:::function:price",
              "Arguments": {"who": "{% $customer %}", "skus": "{% $states.input.items.sku %}"},
              "Assign": {"total": "{% $sum($states.result.prices) %}"},
              "Output": "{% $states.result.prices %}",
              "TimeoutSeconds": "{% 10 * 3 %}", "Next": "Big?"},
    "Big?": {"Type": "Choice", "Choices": [
                {"Condition": "{% $total > $limit %}", "Next": "Split", "Assign": {"size": "big"}}],
             "Default": "Split", "Assign": {"size": "small"}},
    "Split": {"Type": "Map", "Items": "{% $states.input %}",
              "ItemSelector": {"price": "{% $states.context.Map.Item.Value %}", "at": "{% $states.context.Map.Item.Index %}"},
              "ItemProcessor": {"StartAt": "Tax", "States": {
                  "Tax": {"Type": "Pass", "Output": "{% $states.input.price * 2 + $states.input.at %}", "End": true}}},
              "Output": {"taxed": "{% $states.result %}", "size": "{% $size %}", "total": "{% $total %}"},
              "End": true}
}}"#;

#[test]
fn a_jsonata_machine_moves_data_with_expressions_and_variables() {
    let mut env = Env::asl(ORDER);
    let acts = env.start(json!({"customer": "ann", "items": [{"sku": "a"}, {"sku": "b"}]}));
    let calls = invokes(&acts);
    assert_eq!(calls[0].2, json!({"who": "ann", "skus": ["a", "b"]}));
    // the timeout came from an expression
    assert_eq!(timers(&acts)[0].1, env.now + chrono::Duration::seconds(30));
    env.result(&calls[0].0, json!({"prices": [70, 40]}));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!({"taxed": [140, 81], "size": "big", "total": 110})
    );
}

#[test]
fn a_jsonata_catcher_sees_the_error_output_and_fail_makes_its_texts() {
    let mut env = Env::asl(
        r#"{"StartAt": "T", "States": {
        "T": {"Type": "Task", "QueryLanguage": "JSONata", "Resource": "arn:aws:lambda:::function:f",
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F",
                         "Assign": {"why": "{% $states.errorOutput.Error %}"},
                         "Output": {"input": "{% $states.input %}", "cause": "{% $states.errorOutput.Cause %}"}}],
              "End": true},
        "F": {"Type": "Fail", "QueryLanguage": "JSONata",
              "Error": "{% 'Order.' & $why %}", "Cause": "{% $states.input.cause & ' (' & $string($states.input.input.n) & ')' %}"}
    }}"#,
    );
    env.start(json!({"n": 3}));
    env.fail("i1/1/t0", "Boom");
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        failure(&env),
        ("Order.Boom".into(), "Boom happened (3)".into())
    );
}

#[test]
fn waits_and_parallels_take_expressions() {
    let mut env = Env::asl(
        r#"{"QueryLanguage": "JSONata", "StartAt": "W", "States": {
        "W": {"Type": "Wait", "Seconds": "{% $states.input.delay %}", "Next": "P"},
        "P": {"Type": "Parallel", "Arguments": {"n": "{% $states.input.delay %}"},
              "Branches": [
                {"StartAt": "A", "States": {"A": {"Type": "Pass", "Output": "{% $states.input.n + 1 %}", "End": true}}},
                {"StartAt": "B", "States": {"B": {"Type": "Succeed", "Output": "{% $now() %}"}}}
              ], "End": true}
    }}"#,
    );
    let acts = env.start(json!({"delay": 5}));
    let (id, due) = timers(&acts)[0].clone();
    assert_eq!(due, env.now + chrono::Duration::seconds(5));
    env.advance(chrono::Duration::seconds(5));
    env.fire(&id);
    assert_eq!(env.status(), Status::Completed);
    // $now() is the time of the input applied, not a clock read
    assert_eq!(env.output(), json!([6, "2020-01-01T00:00:05.000Z"]));
}

#[test]
fn expression_failures_are_query_evaluation_errors() {
    for (output, want) in [
        ("{% $states.input.missing %}", "returned nothing"),
        ("{% $number('x') %}", "threw an error"),
    ] {
        let text = format!(
            r#"{{"QueryLanguage": "JSONata", "StartAt": "P", "States": {{"P": {{"Type": "Pass", "Output": "{output}", "End": true}}}}}}"#
        );
        let mut env = Env::asl(&text);
        env.start(json!({}));
        let (name, cause) = failure(&env);
        assert_eq!(name, "States.QueryEvaluationError");
        assert!(cause.contains(want), "{cause}");
    }
    let mut env = Env::asl(
        r#"{"QueryLanguage": "JSONata", "StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [{"Condition": "{% 'yes' %}", "Next": "D"}]},
        "D": {"Type": "Succeed"}}}"#,
    );
    env.start(json!({}));
    assert_eq!(failure(&env).0, "States.QueryEvaluationError");
}

#[test]
fn the_two_languages_keep_their_own_fields() {
    let d = rejected(
        r#"{"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {"Type": "Pass", "InputPath": "$.a", "Parameters": {"x.$": "$.x"}, "End": true}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.P.InputPath" && m.contains("JSONPath field")),
        "{d:?}"
    );
    let d = rejected(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "Output": "{% 1 %}", "End": true}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.P.Output" && m.contains("QueryLanguage")),
        "{d:?}"
    );
    let d = rejected(
        r#"{"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {"Type": "Pass", "Output": {"x.$": "$.x", "y": "{% $x( %}"}, "End": true}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.P.Output['x.$']" && m.contains("JSONPath")),
        "{d:?}"
    );
    assert!(d.iter().any(|(p, _)| p == "$.States.P.Output.y"), "{d:?}");
    let d = rejected(
        r#"{"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": true}}}"#,
    );
    assert!(
        d.iter().any(|(p, _)| p == "$.States.P.QueryLanguage"),
        "{d:?}"
    );
    let d = rejected(
        r#"{"QueryLanguage": "JSONata", "StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": true, "Next": "D"}]}, "D": {"Type": "Succeed"}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.C.Choices[0]" && m.contains("Condition")),
        "{d:?}"
    );
    // an expression in a JSONPath state is only a string
    let d = rejected(
        r#"{"StartAt": "M", "States": {"M": {"Type": "Map", "ToleratedFailurePercentage": "{% 5 %}", "MaxConcurrency": "{% 1 %}", "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Succeed"}}}, "End": true}}}"#,
    );
    for f in ["ToleratedFailurePercentage", "MaxConcurrency"] {
        assert!(
            d.iter().any(|(p, _)| *p == format!("$.States.M.{f}")),
            "{f}: {d:?}"
        );
    }
    // a JSONPath machine runs a JSONata state among its own
    let mut env = Env::asl(
        r#"{"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "Next": "B"},
        "B": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.n * 10 %}", "End": true}}}"#,
    );
    env.start(json!({"n": 4}));
    assert_eq!(env.output(), json!(40));
}
