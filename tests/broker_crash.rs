//! Crash safety: SIGKILL the broker in the middle of a stream of correlated events and
//! function calls, restart it, and check every instance completes with each input applied
//! once and every produced event id present.
//!
//! Duplicate detection by event id is off (`dedupe_window = "PT0S"`), and the last restart
//! comes up under a new consumer group, as if the group's committed offsets had expired: every
//! input record is read again from the start, and only the source positions stored with the
//! state keep them from applying twice (`flowbroker_records_duplicate_total` counts them).

mod support;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use support::*;

const JOBS: &str = r#"
id: jobs
name: jobs
events:
- {name: Created, type: job.created, source: /jobs, correlation: [{contextAttributeName: jobid}]}
- {name: Confirmed, type: job.confirmed, source: /jobs, correlation: [{contextAttributeName: jobid}]}
- {name: Done, type: job.done, kind: produced}
functions:
- {name: work, resource: work}
states:
- name: Start
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [Created]
    actions: [{functionRef: {refName: work, parameters: {job: "{{ $.jobid }}"}}}]
  transition: {nextState: Confirm}
- name: Confirm
  type: event
  eventsActions:
  - eventRefs: [Confirmed]
    eventDataFilter: {dataOutputPath: "{{ $.data.ok }}"}
  transition: {nextState: Cool}
- name: Cool
  type: delay
  timeDelay: PT1S
  end:
    kind: event
    produceEvent: {eventRef: Done, data: "{{ $ }}"}
"#;

const N: usize = 40;

#[test]
fn sigkill_mid_stream_loses_nothing_and_applies_nothing_twice() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out", "flowbroker.lifecycle"]);
    // calls of different lengths (20 to 300 ms, answered one at a time), so at the kill some
    // are in flight while other jobs wait on their timer
    let fns = Functions::start(|_, body| {
        let n: u64 = body["job"].as_str().unwrap_or("J0")[1..]
            .parse()
            .unwrap_or(0);
        std::thread::sleep(std::time::Duration::from_millis(20 + 40 * (n % 8)));
        (200, json!({"worked": body["job"]}))
    });
    let mut broker = Broker::start(
        &kafka,
        &[("jobs.yaml", JOBS)],
        &[
            (
                "FLOWBROKER_FUNCTIONS",
                &format!("work={}", fns.url("/work")),
            ),
            ("FLOWBROKER_DEDUPE_WINDOW", "PT0S"),
        ],
    );
    let p = kafka.producer();
    let job = |i: usize| format!("J{i:03}");
    // first half: created + confirmed
    for i in 0..N / 2 {
        p.send(&event(
            &format!("c{i}"),
            "/jobs",
            "job.created",
            &[("jobid", &job(i))],
            json!({}),
        ));
        p.send(&event(
            &format!("k{i}"),
            "/jobs",
            "job.confirmed",
            &[("jobid", &job(i))],
            json!({"ok": true}),
        ));
    }
    // kill while calls, timers and buffered events are in flight
    let at_kill = wait_for(60, "calls, timers and buffered events at once", || {
        let m = broker.metrics();
        let calls = metric_sum(&m, "flowbroker_function_calls_in_flight", "");
        let buffered = metric_sum(&m, "flowbroker_buffered_events", "");
        let timers = broker
            .instances("jobs")
            .iter()
            .filter(|i| i["state"] == "Cool" && i["status"] == "WAITING")
            .count();
        (calls > 0 && buffered > 0 && timers > 0).then_some((calls, buffered, timers))
    });
    broker.kill();
    eprintln!("killed with (calls, buffered events, timers) in flight: {at_kill:?}");
    let before_restart = out.events("flowbroker.instance.started").len();
    assert!(before_restart < N, "the crash happened mid-stream");
    // the rest arrives while the broker is down
    for i in N / 2..N {
        p.send(&event(
            &format!("c{i}"),
            "/jobs",
            "job.created",
            &[("jobid", &job(i))],
            json!({}),
        ));
    }
    broker.restart();
    for i in N / 2..N {
        p.send(&event(
            &format!("k{i}"),
            "/jobs",
            "job.confirmed",
            &[("jobid", &job(i))],
            json!({"ok": true}),
        ));
    }
    // a second crash while the second half is being processed; the broker comes back under
    // a new consumer group (its committed offsets gone), so it reads every input again
    out.wait_events("flowbroker.instance.started", before_restart + 5, 60);
    broker.set_env("FLOWBROKER_KAFKA_GROUP_ID", "flowbroker-test-offsets-lost");
    broker.restart();

    let done = wait_for(120, "every job to finish", || {
        let d = out.events("job.done");
        if d.len() >= N {
            return Some(d);
        }
        if std::env::var("CRASH_DEBUG").is_ok() {
            let summary: Vec<String> = broker
                .instances("jobs")
                .iter()
                .map(|i| {
                    format!(
                        "{}:{}:{}",
                        i["correlation"]["jobid"], i["status"], i["state"]
                    )
                })
                .collect();
            eprintln!("done {} / {N}: {}", d.len(), summary.join(" "));
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        None
    });
    let instances = broker.instances("jobs");
    assert_eq!(
        instances.len(),
        N,
        "one instance per job: {}\n{}",
        broker.get("/v1/instances?workflowId=jobs&limit=1000000").1["statePartitions"],
        broker
            .log()
            .lines()
            .filter(|l| l.contains("state partition") || l.contains("partitions assigned"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut jobs = BTreeSet::new();
    for i in &instances {
        assert_eq!(i["status"], json!("COMPLETED"), "{i}");
        jobs.insert(i["correlation"]["jobid"].as_str().unwrap().to_string());
        let id = i["id"].as_str().unwrap();
        let full = broker.instance(id);
        let kinds: Vec<&str> = full["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["input"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["start", "actionResult", "event", "timerFired"],
            "each input applied exactly once for {id}"
        );
        assert_eq!(full["output"]["worked"], full["output"]["jobid"]);
        assert_eq!(full["output"]["ok"], json!(true));
    }
    assert_eq!(jobs.len(), N);
    // every produced event id is there, and each is the deterministic one
    let ids: BTreeSet<String> = done.iter().map(|e| e.id.clone()).collect();
    let expected: BTreeSet<String> = instances
        .iter()
        .map(|i| flowbroker::engine::produce_event_id(i["id"].as_str().unwrap(), 0))
        .collect();
    assert_eq!(ids, expected);
    assert_eq!(out.events("flowbroker.instance.completed").len(), N);
    // functions are called at least once per action, always with the same idempotency key
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for (_, key, _) in fns.calls() {
        *per_key.entry(key).or_default() += 1;
    }
    assert_eq!(per_key.len(), N);
    wait_for(10, "the status gauge to show every job completed", || {
        let m = broker.metrics();
        (metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\"") == N as i64).then_some(())
    });
    // the inputs read again were recognised by their stored positions, not their ids
    let m = broker.metrics();
    let duplicates = metric_sum(&m, "flowbroker_records_duplicate_total", "");
    assert!(
        duplicates > 0,
        "records read again were skipped: {duplicates}"
    );
    assert_eq!(metric_sum(&m, "flowbroker_events_duplicate_total", ""), 0);
}
