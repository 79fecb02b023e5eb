//! Durable functions against the same shape as a Serverless Workflow, in one run on one
//! tansu: `N` executions of a 3-step durable function (AWS's Python SDK, served by
//! scripts/durable-host.py; every step a checkpoint to the broker) and `N` instances of a
//! 3-state workflow whose states each call an HTTP function, all started at once through the
//! API; executions completed per second, from the first start to the last completion.
//!
//! `cargo bench --bench durable`; under `cargo test` a small smoke run. `DURABLE_N` sets `N`.
//! Results: docs/performance.md.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::Instant;
use support::durable::Host;
use support::{free_port, wait_for, Broker, Functions, Kafka};

const THREE: &str = r#"
id: three
name: three
functions:
- {name: step, resource: step}
states:
- name: One
  type: operation
  start: {kind: default}
  actions: [{functionRef: {refName: step, parameters: {n: "{{ $.n }}"}}}]
  transition: {nextState: Two}
- name: Two
  type: operation
  actions: [{functionRef: {refName: step, parameters: {n: "{{ $.n }}"}}}]
  transition: {nextState: Three}
- name: Three
  type: operation
  actions: [{functionRef: {refName: step, parameters: {n: "{{ $.n }}"}}}]
  end: {kind: default}
"#;

/// How many instances of `workflow` have completed.
fn completed(broker: &Broker, workflow: &str) -> usize {
    let (_, v) = broker.get(&format!(
        "/v1/instances?workflowId={workflow}&status=COMPLETED&limit=100000"
    ));
    v["instances"].as_array().map_or(0, Vec::len)
}

/// Starts `n` instances of `workflow` from 8 threads and waits until all completed;
/// executions per second.
fn run(broker: &Broker, workflow: &str, n: usize) -> f64 {
    let before = completed(broker, workflow);
    let t = Instant::now();
    let ids: Vec<String> = std::thread::scope(|s| {
        let per = n.div_ceil(8);
        let handles: Vec<_> = (0..8)
            .map(|k| {
                s.spawn(move || {
                    (k * per..((k + 1) * per).min(n))
                        .map(|i| {
                            let (code, v) = broker.post(
                                &format!("/v1/workflows/{workflow}/instances"),
                                json!({"n": i}),
                            );
                            assert_eq!(code, 201, "{v}");
                            v["id"].as_str().unwrap().to_string()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    wait_for(
        900,
        &format!("{n} {workflow} instances to complete"),
        || (completed(broker, workflow) == before + n).then_some(()),
    );
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let sample = broker.instance(&ids[0]);
    assert_eq!(sample["status"], "COMPLETED");
    rate
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("DURABLE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 1000 } else { 20 });
    let kafka = Kafka::start();
    let http = format!("127.0.0.1:{}", free_port());
    let host = Host::start(&http, &["three"]);
    let fns = Functions::start(|_, body| (200, json!({"n": body["n"].as_i64().unwrap_or(0) + 1})));
    let durable = format!("invoke: {}\nfunction: three\n", host.url);
    let broker = Broker::start(
        &kafka,
        &[
            ("bench-durable.durable.yaml", &durable),
            ("three.yaml", THREE),
        ],
        &[
            ("FLOWBROKER_HTTP_LISTEN", &http),
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("step={}", fns.url("/step")),
            ),
        ],
    );
    for w in ["bench-durable", "three"] {
        wait_for(30, &format!("{w} to deploy"), || {
            (broker.get(&format!("/v1/workflows/{w}")).0 == 200).then_some(())
        });
    }
    // warm both paths up (the host's first imports, connection pools)
    run(&broker, "three", 5.min(n));
    run(&broker, "bench-durable", 5.min(n));
    let sw = run(&broker, "three", n);
    let durable = run(&broker, "bench-durable", n);
    println!("| shape (3 steps), {n} started at once | executions/s |");
    println!("|---|---|");
    println!("| Serverless Workflow, 3 operation states calling an HTTP function | {sw:.0} |");
    println!("| durable function (Python SDK), 3 steps checkpointed | {durable:.0} |");
    println!("| ratio durable / workflow | {:.2} |", durable / sw);
    drop(host);
}
