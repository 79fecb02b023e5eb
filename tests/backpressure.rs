//! Backpressure (`kafka.max_in_flight`): a backlog queued while the broker was down is taken in
//! only as fast as its outputs leave. With a small bound, the core pauses intake mid-drain
//! (both consumers pause their partitions and keep their group membership) and resumes it at
//! half; every queued event still completes exactly once. Memory under a large backlog is a
//! benchmark's business (docs/performance.md), not this test's.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
use support::*;

const N: usize = 3000;

#[test]
fn a_backlog_drains_in_bounded_steps_and_completes_once() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    // the backlog is in Kafka before the broker starts
    kafka
        .producer()
        .send_pings("b", N, None, |i| json!({"i": i}));
    let broker = Broker::start(
        &kafka,
        &[("echo.yaml", ECHO)],
        &[("FLOWBROKER_KAFKA_MAX_IN_FLIGHT", "200")],
    );
    let pongs = out.wait_events("bench.pong", N, 180);
    let ids: BTreeSet<String> = pongs.iter().map(|e| e.id.clone()).collect();
    assert_eq!((pongs.len(), ids.len()), (N, N), "each pong once");
    let keys: BTreeSet<String> = pongs
        .iter()
        .filter_map(|e| e.data.as_ref()?["i"].as_u64().map(|i| i.to_string()))
        .collect();
    assert_eq!(keys.len(), N, "one pong per queued ping");
    // the bound was hit while the backlog drained, and intake came back (the last resume
    // follows the acknowledgements of the last outputs, which can land after a reader sees
    // them)
    let log = broker.log();
    let paused = log.matches("paused=true").count();
    assert!(paused >= 1, "intake was paused mid-drain: {}", tail(&log));
    wait_for(30, "intake to be resumed after the last pause", || {
        let m = broker.metrics();
        m.lines()
            .any(|l| l == "flowbroker_intake_paused 0")
            .then_some(())
    });
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("intake")).collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
