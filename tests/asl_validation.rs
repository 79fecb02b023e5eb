//! Amazon States Language (issue 13): every example of the reference document validates and
//! its input/output examples give the document's results; invalid machines are rejected with
//! every problem located by JSON path; `flowbroker validate` and `graph` take ASL files.

use flowbroker::asl::{self, data, model::Kind};
use flowbroker::load::Format;
use serde_json::{json, Value};
use std::path::Path;

const DOC: &str = "tests/fixtures/asl/doc";

fn load(name: &str) -> asl::Checked {
    let file = format!("{DOC}/{name}.asl.json");
    let text = std::fs::read_to_string(&file).unwrap();
    asl::parse(&file, &text, Format::Json).unwrap_or_else(|e| panic!("{file}: {e:?}"))
}

#[test]
fn every_example_of_the_document_validates() {
    let mut n = 0;
    for entry in std::fs::read_dir(DOC).unwrap() {
        let path = entry.unwrap().path();
        if !asl::is_asl(&path) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let checked = asl::parse(&path.display().to_string(), &text, Format::Json)
            .unwrap_or_else(|e| panic!("{}: {:#?}", path.display(), e.diagnostics));
        let warnings: Vec<String> = checked.warnings.iter().map(|d| d.to_string()).collect();
        if path.ends_with("choice.asl.json") {
            // the document's `NumericGreaterThanOrEquals`
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains("$.States.ChoiceStateX.Choices[1].And[0]"));
        } else {
            assert!(warnings.is_empty(), "{}: {warnings:?}", path.display());
        }
        n += 1;
    }
    assert_eq!(n, 21, "one fixture per example");
}

/// The state named `name` of a fixture's top level.
fn state<'a>(c: &'a asl::Checked, name: &str) -> &'a asl::model::State {
    c.machine.body.get(name).unwrap()
}

#[test]
fn the_documents_input_and_output_examples_give_its_results() {
    let ctx = flowbroker::asl::path::Scope::default();
    // InputPath "$.numbers", ResultPath "$.sum", the function returns 7
    let m = load("io-input-result-path");
    let s = state(&m, "Add");
    let raw = json!({"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}});
    assert_eq!(
        data::effective_input(&s.io, &raw, &ctx),
        Ok(json!({"val1": 3, "val2": 4}))
    );
    assert_eq!(
        data::effective_output(&s.io, &raw, json!(7), &ctx),
        Ok(json!({"title": "Numbers to add", "numbers": {"val1": 3, "val2": 4}, "sum": 7}))
    );
    // ResultPath "$.b.greeting" builds the objects it needs
    let m = load("io-nested-result-path");
    assert_eq!(
        data::effective_output(&state(&m, "Greet").io, &json!({"a": 1}), json!("Hi!"), &ctx),
        Ok(json!({"a": 1, "b": {"greeting": "Hi!"}}))
    );
    // Parameters with `.$` fields
    let m = load("parameters-paths");
    assert_eq!(
        data::effective_input(
            &state(&m, "X").io,
            &json!({"flagged": 7, "vals": [0, 10, 20, 30, 40, 50]}),
            &ctx
        ),
        Ok(json!({"flagged": true, "parts": {"first": 0, "last3": [30, 40, 50]}}))
    );
    let m = load("parameters-static");
    assert_eq!(
        data::effective_input(&state(&m, "X").io, &json!({"any": 1}), &ctx),
        Ok(json!({"first": 88, "second": 99}))
    );
    // the Pass state's Result placed at "$.coords"
    let m = load("pass-no-op");
    let s = state(&m, "No-op");
    let Kind::Pass { result: Some(r) } = &s.kind else {
        panic!("a Pass with a Result")
    };
    assert_eq!(
        data::effective_output(&s.io, &json!({"georefOf": "Home"}), r.clone(), &ctx),
        Ok(
            json!({"georefOf": "Home", "coords": {"x-datum": 0.381018, "y-datum": 622.2269926397355}})
        )
    );
    // Runtime Errors: ResultPath "$.x" on the input "foo"
    let e = data::place(
        &asl::model::PathField::Path(asl::path::RefPath::compile("$.x").unwrap()),
        &json!("foo"),
        json!(1),
    )
    .unwrap_err();
    assert_eq!(e.error, "States.ResultPathMatchFailure");
    // Error output placed by the first catcher's ResultPath "$.error-info"
    let m = load("catch-error-info");
    let c = &state(&m, "X").kind.catchers()[0];
    assert!(c.errors.matches("java.lang.Exception"));
    assert_eq!(
        data::place(
            &c.result_path,
            &json!({"order": 1}),
            data::error_output("java.lang.Exception", "boom")
        ),
        Ok(json!({"order": 1, "error-info": {"Error": "java.lang.Exception", "Cause": "boom"}}))
    );
    // the second catches everything else, with the Error Output as the whole input
    let c = &state(&m, "X").kind.catchers()[1];
    assert!(c.errors.matches("Whatever") && c.errors.matches("States.Timeout"));
    // the Choice example: "private" is not "Private", so the first rule (Not) matches
    let m = load("choice");
    let Kind::Choice(choice) = &state(&m, "ChoiceStateX").kind else {
        panic!()
    };
    let input = json!({"type": "private", "value": 22});
    let first = choice
        .choices
        .iter()
        .find(|c| rule(&c.rule).eval(&input, &ctx).unwrap())
        .map(|c| c.next.as_str());
    assert_eq!(
        first,
        Some("Public"),
        "docs/semantics.md \"ASL Choice example\""
    );
    assert!(
        rule(&choice.choices[1].rule).eval(&input, &ctx).unwrap(),
        "22 is in the twenties"
    );
}

/// Invalid machines: (what is wrong, the machine, the JSON path reported, a word of the message).
fn invalid() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    let task = |extra: Value| {
        let mut t = json!({"Type": "Task", "Resource": "arn:aws:lambda:::function:f", "End": true});
        if let (Value::Object(t), Value::Object(e)) = (&mut t, extra) {
            t.extend(e);
        }
        json!({"StartAt": "T", "States": {"T": t}})
    };
    vec![
        ("not an object", json!([1]), "$", "must be an object"),
        (
            "no StartAt",
            json!({"States": {"A": {"Type": "Succeed"}}}),
            "$",
            "\"StartAt\" is missing",
        ),
        (
            "StartAt unknown",
            json!({"StartAt": "Nope", "States": {"A": {"Type": "Succeed"}}}),
            "$.StartAt",
            "no state named \"Nope\"",
        ),
        (
            "States empty",
            json!({"StartAt": "A", "States": {}}),
            "$.States",
            "empty",
        ),
        (
            "unknown type",
            json!({"StartAt": "A", "States": {"A": {"Type": "Tusk", "End": true}}}),
            "$.States.A.Type",
            "did you mean \"Task\"",
        ),
        (
            "Next unknown",
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Bb"}, "B": {"Type": "Succeed"}}}),
            "$.States.A.Next",
            "did you mean \"B\"",
        ),
        (
            "Next and End",
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B", "End": true}, "B": {"Type": "Succeed"}}}),
            "$.States.A",
            "both set",
        ),
        (
            "neither Next nor End",
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass"}}}),
            "$.States.A",
            "needs \"Next\"",
        ),
        (
            "unreachable",
            json!({"StartAt": "A", "States": {"A": {"Type": "Succeed"}, "B": {"Type": "Succeed"}}}),
            "$.States.B",
            "unreachable",
        ),
        (
            "never terminates",
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "Next": "A"}}}),
            "$.States.A",
            "never finish",
        ),
        (
            "Choice with End",
            json!({"StartAt": "C", "States": {"C": {"Type": "Choice", "End": true, "Choices": [{"Variable": "$.a", "IsNull": true, "Next": "D"}]}, "D": {"Type": "Succeed"}}}),
            "$.States.C.End",
            "Choice",
        ),
        (
            "Choice rule without operator",
            json!({"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "Next": "D"}]}, "D": {"Type": "Succeed"}}}),
            "$.States.C.Choices[0]",
            "comparison operator",
        ),
        (
            "Choice value of the wrong type",
            json!({"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "1", "Next": "D"}]}, "D": {"Type": "Succeed"}}}),
            "$.States.C.Choices[0].NumericEquals",
            "takes a number",
        ),
        (
            "Task without Resource",
            json!({"StartAt": "T", "States": {"T": {"Type": "Task", "End": true}}}),
            "$.States.T",
            "\"Resource\" is missing",
        ),
        (
            "TimeoutSeconds zero",
            task(json!({"TimeoutSeconds": 0})),
            "$.States.T.TimeoutSeconds",
            "positive whole number",
        ),
        (
            "heartbeat not below timeout",
            task(json!({"TimeoutSeconds": 10, "HeartbeatSeconds": 10})),
            "$.States.T.HeartbeatSeconds",
            "smaller than",
        ),
        (
            "BackoffRate below 1",
            task(json!({"Retry": [{"ErrorEquals": ["E"], "BackoffRate": 0.5}]})),
            "$.States.T.Retry[0].BackoffRate",
            "1.0 or more",
        ),
        (
            "States.ALL not alone",
            task(json!({"Retry": [{"ErrorEquals": ["States.ALL", "E"]}]})),
            "$.States.T.Retry[0].ErrorEquals",
            "alone",
        ),
        (
            "States.ALL not last",
            task(json!({"Retry": [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["E"]}]})),
            "$.States.T.Retry[0].ErrorEquals",
            "last",
        ),
        (
            "made-up States. error",
            task(json!({"Catch": [{"ErrorEquals": ["States.Timout"], "Next": "T"}]})),
            "$.States.T.Catch[0].ErrorEquals[0]",
            "did you mean \"States.Timeout\"",
        ),
        (
            "MaxAttempts negative",
            task(json!({"Retry": [{"ErrorEquals": ["E"], "MaxAttempts": -1}]})),
            "$.States.T.Retry[0].MaxAttempts",
            "0 or more",
        ),
        (
            "Wait with two times",
            json!({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "Timestamp": "2016-03-14T01:59:00Z", "End": true}}}),
            "$.States.W",
            "exactly one",
        ),
        (
            "Wait timestamp lowercase",
            json!({"StartAt": "W", "States": {"W": {"Type": "Wait", "Timestamp": "2016-03-14t01:59:00z", "End": true}}}),
            "$.States.W.Timestamp",
            "uppercase T and Z",
        ),
        (
            "ResultPath not a reference path",
            task(json!({"ResultPath": "$.a[*]"})),
            "$.States.T.ResultPath",
            "not a Reference Path",
        ),
        (
            "InputPath not a path",
            task(json!({"InputPath": "a.b"})),
            "$.States.T.InputPath",
            "not a path",
        ),
        (
            "Parameters .$ without a path",
            task(json!({"Parameters": {"x.$": 3}})),
            "$.States.T.Parameters['x.$']",
            "holds a path",
        ),
        (
            "Retry on a Pass",
            json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true, "Retry": []}}}),
            "$.States.P.Retry",
            "only Task, Parallel and Map",
        ),
        (
            "branch goes outside",
            json!({"StartAt": "P", "States": {"P": {"Type": "Parallel", "Next": "Out", "Branches": [{"StartAt": "In", "States": {"In": {"Type": "Pass", "Next": "Out"}}}]}, "Out": {"Type": "Succeed"}}}),
            "$.States.P.Branches[0].States.In.Next",
            "another scope",
        ),
        (
            "duplicate name in a branch",
            json!({"StartAt": "P", "States": {"P": {"Type": "Parallel", "End": true, "Branches": [{"StartAt": "P", "States": {"P": {"Type": "Succeed"}}}]}}}),
            "$.States.P.Branches[0].States.P",
            "used twice",
        ),
        (
            "Map without iterator",
            json!({"StartAt": "M", "States": {"M": {"Type": "Map", "End": true}}}),
            "$.States.M",
            "ItemProcessor",
        ),
        (
            "Distributed Map",
            json!({"StartAt": "M", "States": {"M": {"Type": "Map", "End": true, "ItemReader": {}, "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Succeed"}}}}}}),
            "$.States.M.ItemReader",
            "not supported",
        ),
        (
            "unknown field",
            task(json!({"Resorce": "x"})),
            "$.States.T.Resorce",
            "did you mean \"Resource\"",
        ),
        (
            "state name too long",
            json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "x".repeat(129)}, "x".repeat(129): {"Type": "Succeed"}}}),
            "$.States",
            "128 characters",
        ),
    ]
}

#[test]
fn invalid_machines_are_rejected_with_located_messages() {
    let cases = invalid();
    assert!(cases.len() >= 20);
    for (what, machine, at, words) in cases {
        let text = serde_json::to_string_pretty(&machine).unwrap();
        let err = asl::parse("bad.asl.json", &text, Format::Json)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        let found = err
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.path.starts_with(at) && d.message.contains(words));
        assert!(
            found,
            "{what}: no error at {at} saying {words:?}: {:#?}",
            err.diagnostics
        );
        assert!(err.diagnostics.iter().all(|d| d.file == "bad.asl.json"));
    }
}

#[test]
fn every_problem_of_a_machine_is_reported_at_once() {
    let text = r#"{"StartAt": "A", "States": {
        "A": {"Type": "Task", "Next": "Nowhere", "TimeoutSeconds": -1},
        "B": {"Type": "Wait", "End": true}
    }}"#;
    let err = asl::parse("m.asl.json", text, Format::Json).unwrap_err();
    let paths: Vec<&str> = err.diagnostics.iter().map(|d| d.path.as_str()).collect();
    for want in ["$.States.A", "$.States.A.TimeoutSeconds", "$.States.B"] {
        assert!(paths.contains(&want), "{want}: {paths:?}");
    }
    // YAML works too, with line and column on syntax errors
    let err = asl::parse("m.asl.yaml", "StartAt: [", Format::Yaml).unwrap_err();
    assert!(err.diagnostics[0].line.is_some());
}

#[test]
fn the_cli_validates_and_draws_asl_files() {
    let bin = env!("CARGO_BIN_EXE_flowbroker");
    let ok = std::process::Command::new(bin)
        .args(["validate", DOC])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ok.stderr);
    assert!(ok.status.success(), "{err}");
    assert!(err.contains("21 file(s) checked: 21 valid"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.asl.json");
    std::fs::write(
        &bad,
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}}}"#,
    )
    .unwrap();
    let out = std::process::Command::new(bin)
        .args(["validate", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("broken.asl.json: $.States.A.Next: no state named \"B\""),
        "{err}"
    );
    let graph = std::process::Command::new(bin)
        .args(["graph", &format!("{DOC}/retry-complex.asl.json")])
        .output()
        .unwrap();
    let g = String::from_utf8_lossy(&graph.stdout);
    assert!(graph.status.success());
    assert!(g.contains("-->|\"catch States.ALL\"|"), "{g}");
    let svg = std::process::Command::new(bin)
        .args([
            "graph",
            "--format",
            "svg",
            &format!("{DOC}/choice.asl.json"),
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&svg.stdout).contains("<svg"));
    assert!(Path::new(DOC).join("README.md").exists());
}

/// A JSONPath Choice Rule's rule.
fn rule(c: &flowbroker::asl::model::Cond) -> &flowbroker::asl::rules::Rule {
    match c {
        flowbroker::asl::model::Cond::Rule(r) => r,
        flowbroker::asl::model::Cond::Jsonata(_) => panic!("a JSONPath machine"),
    }
}
