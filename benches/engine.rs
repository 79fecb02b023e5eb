//! Engine throughput: inputs applied per second through a representative workflow (event start,
//! two sequential function calls with filters, a data switch, an end event), including the
//! instance's serde round trip a store would do per input; the same with the instance kept
//! decoded between inputs as the broker keeps it (`broker::hot`: encoded per input, decoded
//! only when not kept); then the same shape as an Amazon
//! States Language machine (two Tasks with paths, a Choice, a Pass), and the machine written
//! in JSONata (`Arguments`, `Output`, `Condition`), measured in the same run.
//!
//! `cargo bench --bench engine` measures; under `cargo test` it runs a few iterations only.
//! `ENGINE_ONLY=<label>` runs only the phase printed with that label (for a profile of one).

use chrono::{DateTime, Utc};
use flowbroker::broker::hot::Hot;
use flowbroker::definition::Definition;
use flowbroker::engine::{apply, Action, Event, Input, Instance};
use flowbroker::load::Format;
use flowbroker::store::{Table, Txn};
use serde_json::json;
use std::time::Instant;

const WF: &str = r#"
id: bench
name: bench
events:
- {name: Placed, type: order.placed, source: shop, correlation: [{contextAttributeName: orderid}]}
- {name: Done, type: order.done, kind: produced}
functions: [{name: price, resource: "http://x/price"}, {name: reserve, resource: "http://x/reserve"}]
states:
- name: Receive
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Placed]
    eventDataFilter: {dataOutputPath: "{{ $.data.order }}"}
    actions:
    - {functionRef: {refName: price, parameters: {items: "{{ $.order.items }}"}}, actionDataFilter: {dataResultsPath: "{{ $.total }}"}}
    - {functionRef: {refName: reserve, parameters: {id: "{{ $.orderid }}", note: "order {{ $.orderid }}"}}}
  transition: {nextState: Route}
- name: Route
  type: switch
  dataConditions: [{condition: "{{ $[?(@.total > 100)] }}", transition: {nextState: Big}}]
  default: {nextState: Small}
- {name: Big, type: inject, data: {size: big}, end: {kind: event, produceEvent: {eventRef: Done, data: "{{ $.total }}"}}}
- {name: Small, type: inject, data: {size: small}, end: {kind: event, produceEvent: {eventRef: Done}}}
"#;

const MACHINE: &str = r#"{"StartAt": "Price", "States": {
  "Price": {"Type": "Task", "Resource": "http://x/price", "Parameters": {"items.$": "$.order.items"},
            "ResultSelector": {"total.$": "$.total"}, "ResultPath": "$.price", "Next": "Reserve"},
  "Reserve": {"Type": "Task", "Resource": "http://x/reserve", "Parameters": {"id.$": "$.orderid"},
              "ResultPath": "$.reserved", "Next": "Route"},
  "Route": {"Type": "Choice", "Choices": [{"Variable": "$.price.total", "NumericGreaterThan": 100, "Next": "Big"}],
            "Default": "Small"},
  "Big": {"Type": "Pass", "Result": "big", "ResultPath": "$.size", "End": true},
  "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "End": true}
}}"#;

const JSONATA: &str = r#"{"QueryLanguage": "JSONata", "StartAt": "Price", "States": {
  "Price": {"Type": "Task", "Resource": "http://x/price", "Arguments": {"items": "{% $states.input.order.items %}"},
            "Output": "{% $merge([$states.input, {'price': {'total': $states.result.total}}]) %}", "Next": "Reserve"},
  "Reserve": {"Type": "Task", "Resource": "http://x/reserve", "Arguments": {"id": "{% $states.input.orderid %}"},
              "Output": "{% $merge([$states.input, {'reserved': $states.result}]) %}", "Next": "Route"},
  "Route": {"Type": "Choice", "Choices": [{"Condition": "{% $states.input.price.total > 100 %}", "Next": "Big"}],
            "Default": "Small"},
  "Big": {"Type": "Pass", "Output": "{% $merge([$states.input, {'size': 'big'}]) %}", "End": true},
  "Small": {"Type": "Pass", "Output": "{% $merge([$states.input, {'size': 'small'}]) %}", "End": true}
}}"#;

/// How the instance goes from one input to the next.
#[derive(Clone, Copy)]
enum Store {
    /// Encoded, then decoded from those bytes: what the broker does when the instance is
    /// not kept decoded (its first input after a while, or after a restart).
    RoundTrip,
    /// Encoded, and kept decoded beside a copy of the bytes (`broker::hot`): what the broker
    /// does between inputs that come soon after each other.
    Kept,
}

fn step(
    def: &Definition,
    inst: Instance,
    input: Input,
    now: DateTime<Utc>,
    store: Store,
    hot: &mut Hot<Instance>,
) -> (Instance, Vec<Action>) {
    let s = apply(def, inst, input, now).expect("bench input applies");
    // as the store writes and reads records (`store::codec`)
    let stored = Txn::encode(&s.instance);
    let decode = |b: &[u8]| Txn::decode(Table::Instances, "i", b).unwrap();
    let inst = match store {
        Store::RoundTrip => decode(&stored),
        // a finished instance is not kept (it takes no more inputs)
        Store::Kept if s.instance.status.is_final() => s.instance,
        Store::Kept => {
            let id = s.instance.id.clone();
            hot.offer(&id, stored.clone(), s.instance);
            hot.take(&id, &stored).unwrap_or_else(|| decode(&stored))
        }
    };
    (inst, s.actions)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let instances = if measuring { 20_000 } else { 20 };
    let now: DateTime<Utc> = "2020-01-01T00:00:00Z".parse().unwrap();
    let items = json!({"items": [{"sku": "a", "q": 2}, {"sku": "b", "q": 1}]});
    let wf = Definition::parse("bench.yaml", WF, Format::Yaml).unwrap();
    let start = |n: usize| {
        let mut ext = serde_json::Map::new();
        ext.insert("orderid".into(), json!(format!("o{n}")));
        let ev = Event {
            id: format!("e{n}"),
            source: "shop".into(),
            event_type: "order.placed".into(),
            time: None,
            datacontenttype: None,
            subject: None,
            data: Some(json!({"order": items})),
            extensions: ext,
        };
        Input::Start {
            input: json!({}),
            events: vec![ev],
        }
    };
    let produced =
        |_: &Instance, acts: &[Action]| acts.iter().any(|a| matches!(a, Action::Produce { .. }));
    run(
        "engine",
        &wf,
        instances,
        now,
        start,
        produced,
        Store::RoundTrip,
    );
    run(
        "engine, kept decoded",
        &wf,
        instances,
        now,
        start,
        produced,
        Store::Kept,
    );
    let machine = Definition::parse("bench.asl.json", MACHINE, Format::Json).unwrap();
    let start = |n: usize| Input::Start {
        input: json!({"orderid": format!("o{n}"), "order": items}),
        events: vec![],
    };
    let big = |inst: &Instance, _: &[Action]| {
        inst.output
            .as_ref()
            .is_some_and(|o| o["size"] == json!("big"))
    };
    run(
        "engine (ASL machine, same shape)",
        &machine,
        instances,
        now,
        start,
        big,
        Store::RoundTrip,
    );
    let jsonata = Definition::parse("bench.asl.json", JSONATA, Format::Json).unwrap();
    run(
        "engine (ASL machine in JSONata, same shape)",
        &jsonata,
        instances,
        now,
        start,
        big,
        Store::RoundTrip,
    );
}

/// Runs `instances` instances of `def` through their three inputs (the start, then the two
/// calls' results), checking each finished with `done`, and prints the rate.
fn run(
    label: &str,
    def: &Definition,
    instances: usize,
    now: DateTime<Utc>,
    start: impl Fn(usize) -> Input,
    done: impl Fn(&Instance, &[Action]) -> bool,
    store: Store,
) {
    if std::env::var("ENGINE_ONLY").is_ok_and(|only| only != label) {
        return;
    }
    let key = |acts: &[Action]| match acts.iter().find(|a| matches!(a, Action::Invoke { .. })) {
        Some(Action::Invoke { key, .. }) => key.clone(),
        _ => panic!("no invoke"),
    };
    let mut hot = Hot::default();
    let mut inputs = 0u64;
    let started = Instant::now();
    for n in 0..instances {
        let inst = Instance::new(format!("o{n}"), "bench");
        let (inst, acts) = step(def, inst, start(n), now, store, &mut hot);
        let (inst, acts) = step(
            def,
            inst,
            Input::ActionResult {
                key: key(&acts),
                result: json!({"total": 150 + n % 7}),
            },
            now,
            store,
            &mut hot,
        );
        let (inst, acts) = step(
            def,
            inst,
            Input::ActionResult {
                key: key(&acts),
                result: json!({"reserved": true}),
            },
            now,
            store,
            &mut hot,
        );
        assert!(
            inst.status.is_final() && done(&inst, &acts),
            "{label}: {inst:?}"
        );
        inputs += 3;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{label}: {instances} instances, {inputs} inputs in {secs:.3} s = {:.0} inputs/s ({:.1} us/input, {})",
        inputs as f64 / secs,
        secs * 1e6 / inputs as f64,
        match store {
            Store::RoundTrip => "store round trip included",
            Store::Kept => "encoding included, kept decoded between inputs",
        }
    );
}
