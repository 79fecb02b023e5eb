//! ASL fields Step Functions added after the reference document, through the pure engine:
//! a Fail state's `ErrorPath`/`CausePath`, a Map's `MaxConcurrencyPath` and tolerated
//! failures, the older `Iterator` with `ProcessorConfig`, intrinsic functions in a running
//! machine, the JsonPath forms AWS resolves, and `QueryLanguage`.

mod common;
use common::*;
use flowbroker::engine::Status;
use serde_json::json;

#[test]
fn a_fail_state_takes_its_error_and_cause_from_a_path_or_an_intrinsic() {
    let text = r#"{"StartAt": "F", "States": {"F": {"Type": "Fail",
        "ErrorPath": "$.code",
        "CausePath": "States.Format('order {} failed: {}', $.order, $.why)"}}}"#;
    let mut env = Env::asl(text);
    env.start(json!({"code": "OutOfStock", "order": 7, "why": "none left"}));
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(
        failure(&env),
        ("OutOfStock".into(), "order 7 failed: none left".into())
    );
    // a path that selects nothing, or not a string, is States.Runtime
    let mut env = Env::asl(text);
    env.start(json!({"order": 7, "why": "x"}));
    assert_eq!(failure(&env).0, "States.Runtime");
    let mut env = Env::asl(text);
    env.start(json!({"code": 5, "order": 7, "why": "x"}));
    let (name, cause) = failure(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("must make a string"), "{cause}");
}

#[test]
fn fail_paths_are_checked_at_deploy() {
    let d = rejected(
        r#"{"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.F.ErrorPath" && m.contains("both set")),
        "{d:?}"
    );
    let d = rejected(
        r#"{"StartAt": "F", "States": {"F": {"Type": "Fail", "CausePath": "States.ArrayLength($.a)"}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.States.F.CausePath" && m.contains("does not make a string")),
        "{d:?}"
    );
}

const MAP: &str = r#"{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemsPath": "$.items",
    "MaxConcurrencyPath": "$.limit", "ToleratedFailureCountPath": "$.tolerate",
    "Iterator": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}},
    "Catch": [{"ErrorEquals": ["States.ExceedToleratedFailureThreshold"], "ResultPath": "$.error", "Next": "Over"}],
    "End": true},
    "Over": {"Type": "Pass", "OutputPath": "$.error.Error", "End": true}}}"#;

/// The call keys among the log's invocations, in order.
fn calls(env: &Env) -> Vec<String> {
    invokes(&env.log).into_iter().map(|c| c.0).collect()
}

#[test]
fn a_map_reads_its_concurrency_and_tolerance_from_the_input() {
    let mut env = Env::asl(MAP);
    env.start(json!({"items": [1, 2, 3], "limit": 2, "tolerate": 1}));
    // two at once, as MaxConcurrencyPath says
    let first = calls(&env);
    assert_eq!(first.len(), 2, "{first:?}");
    env.fail(&first[0], "Boom");
    // one failure is tolerated: the third item starts
    let now = calls(&env);
    assert_eq!(now.len(), 3, "{now:?}");
    env.result(&first[1], json!("b"));
    env.result(&now[2], json!("c"));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!([{"Error": "Boom", "Cause": "Boom happened"}, "b", "c"])
    );

    // a second failure is one too many
    let mut env = Env::asl(MAP);
    env.start(json!({"items": [1, 2, 3], "limit": 0, "tolerate": 1}));
    let all = calls(&env);
    assert_eq!(all.len(), 3);
    env.fail(&all[0], "Boom");
    assert_eq!(env.status(), Status::Running);
    env.fail(&all[2], "Boom");
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(
        env.output(),
        json!("States.ExceedToleratedFailureThreshold")
    );
}

#[test]
fn a_map_path_that_selects_no_number_is_a_runtime_error() {
    let mut env = Env::asl(MAP);
    env.start(json!({"items": [1], "limit": "two", "tolerate": 0}));
    let (name, cause) = failure(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("MaxConcurrencyPath"), "{cause}");
}

#[test]
fn a_percentage_tolerates_a_share_of_the_items() {
    let text = r#"{"StartAt": "M", "States": {"M": {"Type": "Map",
        "ToleratedFailurePercentage": 50,
        "ItemProcessor": {"StartAt": "T", "States": {
            "T": {"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true}}},
        "End": true}}}"#;
    let mut env = Env::asl(text);
    env.start(json!([1, 2, 3, 4]));
    let all = calls(&env);
    env.fail(&all[0], "A");
    env.fail(&all[1], "B");
    assert_eq!(env.status(), Status::Running, "2 of 4 is 50%: tolerated");
    env.fail(&all[2], "C");
    assert_eq!(env.status(), Status::Failed);
    assert_eq!(failure(&env).0, "States.ExceedToleratedFailureThreshold");
}

#[test]
fn intrinsics_run_in_parameters_and_random_values_replay_the_same() {
    let text = r#"{"StartAt": "T", "States": {"T": {"Type": "Task",
        "Resource": "arn:aws:lambda:::function:f",
        "Parameters": {
            "greeting.$": "States.Format('Hello, {}! You are {}.', $.name, States.MathAdd($.age, 1))",
            "id.$": "States.UUID()",
            "parts.$": "States.ArrayPartition($.xs, 2)",
            "run.$": "States.Format('{}', $$.Execution.Id)"
        },
        "Retry": [{"ErrorEquals": ["Busy"]}], "End": true}}}"#;
    let input = json!({"name": "Ada", "age": 36, "xs": [1, 2, 3]});
    let mut a = Env::asl(text);
    let first = invokes(&a.start(input.clone()));
    let p = &first[0].2;
    assert_eq!(p["greeting"], json!("Hello, Ada! You are 37."));
    assert_eq!(p["parts"], json!([[1, 2], [3]]));
    assert_eq!(p["run"], json!("i1"));
    let id = p["id"].as_str().unwrap().to_string();
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
    // the same instance and input: the same value (a replay draws the same)
    let mut b = Env::asl(text);
    assert_eq!(invokes(&b.start(input))[0].2["id"], json!(id));
    // a retry is another attempt: a new value
    a.fail(&first[0].0, "Busy");
    let timer = timers(&a.log).last().unwrap().0.clone();
    let retried = invokes(&a.fire(&timer));
    assert_ne!(retried[0].2["id"], json!(id));
}

#[test]
fn an_intrinsic_that_fails_at_run_time_is_an_intrinsic_failure() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass",
        "Parameters": {"x.$": "States.ArrayGetItem($.xs, 5)"}, "End": true}}}"#,
    );
    env.start(json!({"xs": [1]}));
    assert_eq!(failure(&env).0, "States.IntrinsicFailure");
}

#[test]
fn json_paths_as_aws_resolves_them() {
    let mut env = Env::asl(
        r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {
        "last.$": "$.books[-1]", "second.$": "$.books[-2]", "len.$": "$.books[(@.length-1)]",
        "quoted.$": "$['it\\'s']"}, "End": true}}}"#,
    );
    env.start(json!({"books": ["a", "b", "c"], "it's": 1}));
    assert_eq!(
        env.output(),
        json!({"last": "c", "second": "b", "len": "c", "quoted": 1})
    );
}

#[test]
fn timestamps_need_the_t() {
    let mut env = Env::asl(
        r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "TimestampPath": "$.at", "End": true}}}"#,
    );
    env.start(json!({"at": "2020-01-01 00:00:10Z"}));
    let (name, cause) = failure(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("RFC 3339"), "{cause}");
}

#[test]
fn query_language_is_jsonpath_or_jsonata() {
    let d = rejected(
        r#"{"QueryLanguage": "XPath", "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#,
    );
    assert!(
        d.iter()
            .any(|(p, m)| p == "$.QueryLanguage" && m.contains("\"JSONPath\" or \"JSONata\"")),
        "{d:?}"
    );
    let ok = r#"{"QueryLanguage": "JSONPath", "StartAt": "P", "States": {"P": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": true}}}"#;
    let mut env = Env::asl(ok);
    env.start(json!({"a": 1}));
    assert_eq!(env.output(), json!({"a": 1}));
}

#[test]
fn each_item_draws_its_own_random_values() {
    let mut env = Env::asl(
        r#"{"StartAt": "M", "States": {"M": {"Type": "Map",
        "ItemSelector": {"id.$": "States.UUID()", "n.$": "$$.Map.Item.Value"},
        "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
        "End": true}}}"#,
    );
    env.start(json!([1, 2, 3]));
    let out = env.output();
    let ids: std::collections::BTreeSet<String> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{out}");
}

#[test]
fn a_time_past_what_can_be_represented_fails_the_state_not_the_broker() {
    let mut env = Env::asl(
        r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "SecondsPath": "$.s", "End": true}}}"#,
    );
    env.start(json!({"s": 1_000_000_000_000_000u64}));
    let (name, cause) = failure(&env);
    assert_eq!(name, "States.Runtime");
    assert!(cause.contains("past the last time"), "{cause}");
}
