//! Input offsets go to the group one commit at a time, at most one per
//! `kafka.commit_interval_ms` (`kafka::commits`), and what the last rounds landed is committed
//! when the broker stops (docs/scale.md "Replaying or skipping input").

mod support;
use rdkafka::Message;
use serde_json::json;
use std::time::Duration;
use support::*;

const COMMITS: &str = "flowbroker_input_offset_commits_total";

#[test]
fn input_offsets_are_committed_at_most_once_per_interval_and_once_more_at_a_stop() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    // an interval far longer than the test: after the first commit, only the stop commits
    let mut broker = Broker::start(
        &kafka,
        &[("echo.yaml", ECHO)],
        &[("FLOWBROKER_KAFKA_COMMIT_INTERVAL_MS", "600000")],
    );
    let p = kafka.producer();
    // the first landed round's offsets are committed at once
    p.send_pings("first", 1, None, |i| json!({"i": i}));
    out.wait_events("bench.pong", 1, 60);
    wait_for(30, "the first input offset commit", || {
        (metric_sum(&broker.metrics(), COMMITS, "outcome=\"ok\"") == 1).then_some(())
    });
    // waves answered one after another, so each lands in rounds of its own
    let waves = 8;
    for w in 0..waves {
        p.send_pings(
            &format!("w{w}-"),
            20,
            None,
            |i| json!({"i": 1 + w * 20 + i}),
        );
        out.wait_events("bench.pong", 1 + (w + 1) * 20, 60);
    }
    // one record per ping at least (a publisher's retry may write one twice)
    let end = input_end(&kafka, 1 + waves * 20);
    let m = broker.metrics();
    assert_eq!(
        metric_sum(&m, COMMITS, "outcome=\"ok\""),
        1,
        "no commit within the interval after the first, whatever the rounds landed"
    );
    let committed: i64 = kafka
        .committed("flowbroker-test", "flowbroker.in", 3)
        .iter()
        .map(|o| o.max(&0))
        .sum();
    assert!(
        committed < end,
        "the group's offsets lag what was applied until the next commit: {committed} of {end}"
    );
    // a stop commits what the last rounds landed, so the next owner starts there
    broker.terminate();
    let committed = kafka.committed("flowbroker-test", "flowbroker.in", 3);
    let sum: i64 = committed.iter().map(|o| o.max(&0)).sum();
    assert_eq!(
        sum, end,
        "after the stop the group's offsets are the input's end: {committed:?}"
    );
}

/// The next offset of each partition of `flowbroker.in`, summed, read back once `sent`
/// records are there (tansu's high watermark after a batch of several records is its base
/// offset + 1: docs/kafka.md).
fn input_end(kafka: &Kafka, sent: usize) -> i64 {
    let c = reader(&kafka.brokers(), &["flowbroker.in"], 10);
    let (mut next, mut read) = ([0i64; 3], 0);
    wait_for(60, "every ping read back from the input topic", || {
        while let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let p = m.partition() as usize;
            next[p] = next[p].max(m.offset() + 1);
            read += 1;
        }
        (read >= sent).then_some(())
    });
    next.iter().sum()
}
