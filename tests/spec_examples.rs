//! Every JSON and YAML example in the spec parses; the complete workflows validate.
//! Fixtures were written out from ../shared/spec by scripts/extract-spec-examples.py and each is
//! read as what it shows (tests/fixtures/spec/MANIFEST.tsv).

mod root;

use flowbroker::diag::Diagnostic;
use flowbroker::load::{element, parse_value, state_from_value, workflow_from_value, Format};
use flowbroker::model::*;
use flowbroker::validate::validate;
use serde_json::Value;

fn fixtures() -> Vec<(String, String, Value)> {
    let dir = root::root().join("tests/fixtures/spec");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut out = Vec::new();
    for line in manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (file, kind) = line.split_once('\t').unwrap();
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let format = Format::from_path(&path).unwrap();
        if kind == "elided" {
            let err = parse_value(file, &text, format).unwrap_err();
            assert!(
                err.line.is_some(),
                "{file}: syntax error without a line: {err}"
            );
            // The same example with the spec's `...` elisions removed parses.
            let completed: String = text
                .lines()
                .filter(|l| l.trim() != "...")
                .collect::<Vec<_>>()
                .join("\n");
            let completed = completed.replace("\"Team Name\",\n", "\"Team Name\"\n");
            let v = parse_value(file, &completed, format).unwrap();
            out.push((file.to_string(), "workflow-skeleton".to_string(), v));
            continue;
        }
        let v = parse_value(file, &text, format).unwrap_or_else(|e| panic!("{e}"));
        out.push((file.to_string(), kind.to_string(), v));
    }
    out
}

fn part<T: serde::de::DeserializeOwned>(file: &str, v: Value, diags: &mut Vec<Diagnostic>) {
    assert!(
        element::<T>(file, "$", v, diags).is_some(),
        "{file}: {diags:?}"
    );
}

fn list<T: serde::de::DeserializeOwned>(file: &str, v: Value, diags: &mut Vec<Diagnostic>) {
    part::<Vec<T>>(file, v, diags)
}

/// Reads one snippet as `kind`, panicking on any error.
fn read(file: &str, kind: &str, v: Value, diags: &mut Vec<Diagnostic>) {
    match kind {
        "state" => assert!(
            state_from_value(file, "$", v, diags).is_some(),
            "{file}: {diags:?}"
        ),
        "function" => part::<FunctionDef>(file, v, diags),
        "event" => part::<EventDef>(file, v, diags),
        "eventsActions" => part::<EventActions>(file, v, diags),
        "action" => part::<Action>(file, v, diags),
        "functionRef" => part::<FunctionRef>(file, v, diags),
        "onError" => part::<ErrorDef>(file, v, diags),
        "retry" => part::<RetryDef>(file, v, diags),
        "transition" => part::<Transition>(file, v, diags),
        "dataCondition" => part::<DataCondition>(file, v, diags),
        "eventCondition" => part::<EventCondition>(file, v, diags),
        "branch" => part::<Branch>(file, v, diags),
        "start" => part::<Start>(file, v, diags),
        "schedule" => part::<Schedule>(file, v, diags),
        "end" => part::<End>(file, v, diags),
        "produceEvent" => part::<ProduceEvent>(file, v, diags),
        "stateDataFilter" => part::<StateDataFilter>(file, v, diags),
        "actionDataFilter" => part::<ActionDataFilter>(file, v, diags),
        "eventDataFilter" => part::<EventDataFilter>(file, v, diags),
        "errorDataFilter" => part::<ErrorDataFilter>(file, v, diags),
        "templates" => {
            for (k, s) in v.as_object().unwrap() {
                flowbroker::expr::Expr::template(s.as_str().unwrap())
                    .unwrap_or_else(|e| panic!("{file}: {k}: {e}"));
            }
        }
        "container" => {
            for (k, inner) in v.as_object().unwrap().clone() {
                match k.as_str() {
                    "states" => {
                        for s in inner.as_array().unwrap().clone() {
                            read(file, "state", s, diags)
                        }
                    }
                    "functions" => list::<FunctionDef>(file, inner, diags),
                    "events" => list::<EventDef>(file, inner, diags),
                    "actions" => list::<Action>(file, inner, diags),
                    "onError" => list::<ErrorDef>(file, inner, diags),
                    "retry" => list::<RetryDef>(file, inner, diags),
                    "correlation" => list::<CorrelationDef>(file, inner, diags),
                    "stateDataFilter" => part::<StateDataFilter>(file, inner, diags),
                    "id" | "name" | "version" => assert!(inner.is_string()),
                    other => panic!("{file}: unexpected container key {other}"),
                }
            }
        }
        other => panic!("{file}: unknown manifest kind {other}"),
    }
}

#[test]
fn every_spec_example_parses() {
    let mut counts = std::collections::BTreeMap::new();
    for (file, kind, v) in fixtures() {
        *counts.entry(kind.clone()).or_insert(0) += 1;
        let mut diags = Vec::new();
        match kind.as_str() {
            "data" | "cloudevent" => assert!(v.is_object() || v.is_array()),
            "workflow" => {
                let parsed = workflow_from_value(&file, v);
                let wf = parsed
                    .workflow
                    .unwrap_or_else(|| panic!("{file}: {:?}", parsed.diagnostics));
                let report = validate(&file, &wf);
                let errors: Vec<_> = report.diagnostics.iter().filter(|d| d.is_error()).collect();
                assert!(errors.is_empty(), "{file}: {errors:#?}");
            }
            "workflow-empty" | "workflow-skeleton" => {
                let parsed = workflow_from_value(&file, v);
                let wf = parsed
                    .workflow
                    .unwrap_or_else(|| panic!("{file}: {:?}", parsed.diagnostics));
                // A skeleton with no states parses but cannot be deployed.
                let report = validate(&file, &wf);
                assert!(report
                    .diagnostics
                    .iter()
                    .any(|d| d.is_error() && d.path == "$.states"));
            }
            _ => read(&file, &kind, v, &mut diags),
        }
    }
    assert!(counts["workflow"] >= 3, "{counts:?}");
    assert!(counts["state"] >= 20, "{counts:?}");
}

#[test]
fn unknown_fields_warn_without_failing() {
    let (_, _, v) = fixtures()
        .into_iter()
        .find(|(f, _, _)| f == "L3647.json")
        .unwrap();
    let parsed = workflow_from_value("L3647.json", v);
    assert!(parsed.workflow.is_some());
    assert!(
        parsed
            .diagnostics
            .iter()
            .any(|d| !d.is_error() && d.path == "$.startsAt"),
        "{:?}",
        parsed.diagnostics
    );
}

#[test]
fn greeting_example_warns_about_event_filter_alias() {
    let (_, _, v) = fixtures()
        .into_iter()
        .find(|(f, _, _)| f == "L3227.json")
        .unwrap();
    let wf = workflow_from_value("L3227.json", v).workflow.unwrap();
    let report = validate("L3227.json", &wf);
    assert!(report
        .diagnostics
        .iter()
        .any(|d| !d.is_error()
            && d.path == "$.states[0].eventsActions[0].eventDataFilter.dataInputPath"));
}
