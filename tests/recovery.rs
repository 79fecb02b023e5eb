//! Recovery does each thing once (issue 11, item 2). A partition taken over re-sends its
//! outbox and re-invokes its calls in flight; these tests show that happens once per entry:
//! - an eager rebalance hands the broker back its own partitions while its calls are still
//!   running: they are not invoked again;
//! - after a SIGKILL with calls in flight and every output acknowledged, each call is invoked
//!   exactly once more and no acknowledged output is sent again.

mod support;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;
use support::*;

const JOBS: &str = r#"
id: jobs
name: jobs
events:
- {name: Created, type: job.created, source: /jobs, correlation: [{contextAttributeName: jobid}]}
- {name: Done, type: job.done, kind: produced}
functions:
- {name: work, resource: work}
states:
- name: Work
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Created]
    actions: [{functionRef: {refName: work, parameters: {job: "{{ $.jobid }}"}}}]
  end:
    kind: event
    produceEvent: {eventRef: Done, data: "{{ $ }}"}
"#;

const N: usize = 12;
/// State partitions (the default `cluster.partitions`): one take-over each per assignment.
const PARTITIONS: usize = 12;

fn start(kafka: &Kafka, fns: &Functions, more: &[(&str, &str)]) -> Broker {
    let functions = format!("work={}", fns.url("/work"));
    let mut env = vec![
        ("FLOWBROKER_FUNCTIONS", functions.as_str()),
        // held calls must not time out while the test holds them
        ("FLOWBROKER_INVOKE_TIMEOUT_MS", "120000"),
    ];
    env.extend_from_slice(more);
    Broker::start(kafka, &[("jobs.yaml", JOBS)], &env)
}

fn send_jobs(kafka: &Kafka) {
    let p = kafka.producer();
    for i in 0..N {
        p.send(&event(
            &format!("c{i}"),
            "/jobs",
            "job.created",
            &[("jobid", &format!("J{i:02}"))],
            json!({}),
        ));
    }
}

/// Calls per (idempotency key).
fn per_key(fns: &Functions) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for (_, key, _) in fns.calls() {
        *m.entry(key).or_default() += 1;
    }
    m
}

fn takeovers(b: &Broker) -> usize {
    b.log().matches("state partition taken over").count()
}

#[test]
fn a_rebalance_that_hands_back_the_same_partitions_invokes_nothing_twice() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    let fns = Functions::held(|_, body| (200, json!({"worked": body["job"]})));
    // eager rebalancing: every partition is revoked and assigned again (the cooperative
    // default would not revoke what does not move)
    let broker = start(
        &kafka,
        &fns,
        &[("FLOWBROKER_KAFKA_ASSIGNMENT_STRATEGY", "range")],
    );
    wait_for(30, "the first take-overs", || {
        (takeovers(&broker) >= PARTITIONS).then_some(())
    });
    send_jobs(&kafka);
    wait_for(60, "every job's call to be in flight", || {
        (fns.calls().len() >= N).then_some(())
    });

    // another member joins the state partitions' group for a topic of its own: librdkafka's
    // eager protocol revokes every partition of the broker and assigns them straight back
    // (twice: once when it joins, once when it leaves)
    kafka.create_topic("flowbroker.probe", 1);
    let probe: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", kafka.brokers())
        .set("group.id", "flowbroker-test.state")
        .set("partition.assignment.strategy", "range")
        .set("session.timeout.ms", "6000")
        .create()
        .unwrap();
    probe.subscribe(&["flowbroker.probe"]).unwrap();
    wait_for(60, "the probe to be assigned its partition", || {
        let _ = probe.poll(Duration::from_millis(100));
        (probe.assignment().ok()?.count() > 0).then_some(())
    });
    wait_for(60, "the broker to take its partitions over again", || {
        (takeovers(&broker) >= 2 * PARTITIONS).then_some(())
    });
    drop(probe);
    wait_for(60, "the broker to take them over a third time", || {
        (takeovers(&broker) >= 3 * PARTITIONS).then_some(())
    });
    assert!(
        broker.log().contains("in_flight_calls=12"),
        "the take-overs saw the calls in flight:\n{}",
        broker.log()
    );

    fns.release();
    let done = out.wait_events("job.done", N, 60);
    assert_eq!(done.len(), N);
    let calls = per_key(&fns);
    assert_eq!(calls.len(), N, "{calls:?}");
    assert!(
        calls.values().all(|n| *n == 1),
        "every call invoked once across the rebalances: {calls:?}"
    );
    let produced = out.all().len();
    assert_eq!(produced, N, "every output sent once");
}

#[test]
fn a_restart_reinvokes_each_call_once_and_resends_nothing_acknowledged() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    let fns = Functions::held(|_, body| (200, json!({"worked": body["job"]})));
    let mut broker = start(&kafka, &fns, &[]);
    send_jobs(&kafka);
    wait_for(60, "every job's call to be in flight", || {
        (fns.calls().len() >= N).then_some(())
    });
    // every started lifecycle event acknowledged, so the outbox holds nothing
    wait_for(30, "the outbox to drain", || {
        let m = broker.metrics();
        let started = out.events("flowbroker.instance.started").len();
        (started == N && metric_sum(&m, "flowbroker_outbox_pending", "") == 0).then_some(())
    });
    let m = broker.metrics();
    assert_eq!(
        metric_sum(&m, "flowbroker_function_calls_in_flight", ""),
        N as i64,
        "the kill hits with every call in flight"
    );
    let records_before = out.all().len();
    broker.kill();

    broker.start_again();
    wait_for(60, "every call to be invoked again", || {
        (fns.calls().len() >= 2 * N).then_some(())
    });
    fns.release();
    out.wait_events("job.done", N, 60);
    wait_for(30, "every instance to complete", || {
        (out.events("flowbroker.instance.completed").len() == N).then_some(())
    });
    let calls = per_key(&fns);
    assert_eq!(calls.len(), N);
    assert!(
        calls.values().all(|n| *n == 2),
        "once before the kill, once after: {calls:?}"
    );
    // nothing acknowledged before the kill was sent again: every record id appears once
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    for r in out.all() {
        if let Some(e) = r.event {
            *ids.entry(e.id).or_default() += 1;
        }
    }
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    assert_eq!(
        out.all().len(),
        records_before + 2 * N,
        "N done + N completed"
    );
}
