//! No hop for owned partitions (docs/scale.md): an input record whose state partition this
//! broker owns is applied at once, without the work topic, once a forward of its input
//! partition's current run has been read back. A SIGKILL while records are applied that way
//! loses none and applies none twice: their positions are in the changelog with the batch,
//! and the input offsets are committed only after it.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
use support::*;

/// Start events per wave. With 3 input partitions and 12 state partitions, the first wave
/// forwards at least one record of nearly every (input, state partition) pair.
const WAVE: usize = 300;
/// The third wave, paced, during which the broker is killed.
const PACED: usize = 1500;

const ROUTED: &str = "flowbroker_input_records_routed_total";

fn distinct_keys(out: &Collector) -> BTreeSet<u64> {
    out.events("bench.pong")
        .iter()
        .filter_map(|e| e.data.as_ref()?["i"].as_u64())
        .collect()
}

/// What a wait for every ping found instead: how many are answered, the first missing, and
/// the broker's counts (when it answers).
fn progress(out: &Collector, broker: &Broker, total: usize) -> String {
    let keys = distinct_keys(out);
    let missing: Vec<u64> = (0..total as u64)
        .filter(|k| !keys.contains(k))
        .take(10)
        .collect();
    let m = broker.metrics();
    let sum = |name: &str, with: &str| metric_sum(&m, name, with);
    format!(
        "{} of {total} answered, first missing {missing:?}; broker: {} completed, {} running, \
         routed {} direct and {} through the work topic, {} held, intake paused {}, \
         consumer lag {}, outbox pending {}",
        keys.len(),
        sum("flowbroker_instances", "status=\"COMPLETED\""),
        sum("flowbroker_instances", "status=\"RUNNING\""),
        sum(ROUTED, "path=\"direct\""),
        sum(ROUTED, "path=\"work_topic\""),
        sum("flowbroker_input_records_held", ""),
        sum("flowbroker_intake_paused", ""),
        sum("flowbroker_kafka_consumer_lag", ""),
        sum("flowbroker_outbox_pending", ""),
    )
}

/// Waits for a pong for each of the `total` pings, and says what was missing if not.
fn every_ping_answered(out: &Collector, broker: &Broker, total: usize) {
    let keys = wait_or_explain(
        120,
        "every ping answered",
        || {
            let k = distinct_keys(out);
            (k.len() >= total).then_some(k)
        },
        || progress(out, broker, total),
    );
    assert_eq!(keys, (0..total as u64).collect(), "every ping answered");
}

/// An `echo` broker that has answered a first wave of pings (the runs' first forwards made).
/// Positions alone keep a record from being applied twice: no event-id dedupe.
fn first_wave(kafka: &Kafka, out: &Collector) -> (Broker, Publisher) {
    let broker = Broker::start(
        kafka,
        &[("echo.yaml", ECHO)],
        &[("FLOWBROKER_DEDUPE_WINDOW", "PT0S")],
    );
    let p = kafka.producer();
    p.send_pings("a", WAVE, None, |i| json!({"i": i}));
    out.wait_events("bench.pong", WAVE, 120);
    (broker, p)
}

#[test]
fn owned_partitions_apply_input_directly_and_exactly_once_across_a_kill() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    let (mut broker, p) = first_wave(&kafka, &out);
    let m = broker.metrics();
    let forwarded = metric_sum(&m, ROUTED, "path=\"work_topic\"");
    assert!(
        forwarded >= 1,
        "a run's first records go through the work topic"
    );
    // the second wave finds the runs' forwards read back: (nearly) all of it is direct
    p.send_pings("b", WAVE, None, |i| json!({"i": WAVE + i}));
    out.wait_events("bench.pong", 2 * WAVE, 120);
    let m = broker.metrics();
    let direct = metric_sum(&m, ROUTED, "path=\"direct\"");
    assert!(
        direct >= (WAVE / 2) as i64,
        "most of the second wave skipped the work topic: {direct} direct, {} forwarded",
        metric_sum(&m, ROUTED, "path=\"work_topic\"")
    );
    assert_eq!(
        direct + metric_sum(&m, ROUTED, "path=\"work_topic\""),
        (2 * WAVE) as i64,
        "each record routed once"
    );
    // a paced third wave; the broker is killed while it applies records directly
    let sender = {
        let p = kafka.producer();
        std::thread::spawn(move || {
            p.send_pings(
                "c",
                PACED,
                Some(std::time::Duration::from_millis(2)),
                |i| json!({"i": 2 * WAVE + i}),
            )
        })
    };
    let at_kill = wait_for(60, "the third wave to be partly applied", || {
        let done = distinct_keys(&out).len();
        let direct_now = metric_sum(&broker.metrics(), ROUTED, "path=\"direct\"");
        (done >= 2 * WAVE + 100 && direct_now > direct).then_some((done, direct_now))
    });
    broker.kill();
    let total = 2 * WAVE + PACED;
    assert!(
        at_kill.0 < total,
        "killed mid-stream: {} of {total} done",
        at_kill.0
    );
    eprintln!(
        "killed with {} of {total} done, {} routed directly",
        at_kill.0, at_kill.1
    );
    broker.restart();
    sender.join().unwrap();
    every_ping_answered(&out, &broker, total);
    wait_for(30, "the status gauge to count every instance", || {
        let m = broker.metrics();
        (metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\"") >= total as i64)
            .then_some(())
    });
    // one instance per ping: a record applied twice would start a second instance, whose
    // pong has an id of its own, and would count in the gauge
    let pongs = out.events("bench.pong");
    assert_eq!(
        pongs.len(),
        total,
        "one pong per ping, none from a second instance"
    );
    let m = broker.metrics();
    assert_eq!(
        metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\""),
        total as i64,
        "one completed instance per ping"
    );
}

/// Queued while the broker is down, then drained.
const BACKLOG: usize = 20_000;

/// A backlog for partitions owned here waits behind each run's first forward
/// (`broker::held`) and then skips the work topic, instead of following that forward through
/// it; a kill while it drains loses nothing and applies nothing twice (the input offsets
/// committed stop at the first record still held).
#[test]
fn a_backlog_waits_for_its_first_forward_then_skips_the_work_topic_exactly_once() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    let (mut broker, p) = first_wave(&kafka, &out);
    // down while a backlog builds; back, it resumes its partitions and starts new runs
    broker.kill();
    p.send_pings("b", BACKLOG, None, |i| json!({"i": WAVE + i}));
    broker.restart_joining();
    let total = WAVE + BACKLOG;
    // with every record behind a run's first forward sent through the work topic, none
    // would be direct until the backlog was gone
    let at_kill = wait_for(120, "the backlog partly applied, directly", || {
        let done = distinct_keys(&out).len();
        let direct = metric_sum(&broker.metrics(), ROUTED, "path=\"direct\"");
        (done >= WAVE + 1000 && direct >= 1000).then_some((done, direct))
    });
    broker.kill();
    assert!(
        at_kill.0 < total,
        "killed mid-backlog: {} of {total} done",
        at_kill.0
    );
    eprintln!(
        "killed with {} of {total} done, {} routed directly",
        at_kill.0, at_kill.1
    );
    broker.restart();
    every_ping_answered(&out, &broker, total);
    wait_for(30, "the status gauge to count every instance", || {
        let m = broker.metrics();
        (metric_sum(&m, "flowbroker_instances", "status=\"COMPLETED\"") >= total as i64)
            .then_some(())
    });
    assert_eq!(
        out.events("bench.pong").len(),
        total,
        "one pong per ping, none from a second instance"
    );
    assert_eq!(
        metric_sum(
            &broker.metrics(),
            "flowbroker_instances",
            "status=\"COMPLETED\""
        ),
        total as i64,
        "one completed instance per ping"
    );
}
