//! Deleted keys' tombstones are merged away in a running broker (docs/store.md "Costs we
//! accept"). With a 1 s retention and dedupe window, a 1 MiB write buffer (files flushed
//! often) and a low `store.merge_tombstones`, tables are merged while instances finish and
//! expire. The merge keeps only each key's newest version, so a merge that kept a deleted
//! value while dropping its tombstone would bring expired instances back into the listing;
//! they stay gone, and every event completes once. A table's last deletes reach its files
//! only when its memtable is flushed, which takes more writes (a quiet broker keeps them in
//! memory, within the write buffer), so while the test waits for the merge it sends a wave of
//! new events every few seconds.

mod support;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::*;

const N: usize = 3000;
/// Events sent at a time while waiting for the merge.
const WAVE: usize = 500;

#[test]
fn tombstones_of_expired_instances_are_merged_away_and_the_instances_stay_deleted() {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    let broker = Broker::start(
        &kafka,
        &[("echo.yaml", ECHO)],
        &[
            ("FLOWBROKER_RETENTION", "PT1S"),
            ("FLOWBROKER_DEDUPE_WINDOW", "PT1S"),
            ("FLOWBROKER_STORE_WRITE_BUFFER_MIB", "1"),
            ("FLOWBROKER_STORE_MERGE_TOMBSTONES", "200"),
        ],
    );
    kafka
        .producer()
        .send_pings("t", N, None, |i| json!({"i": i}));
    let pongs = out.wait_events("bench.pong", N, 240);
    let ids: BTreeSet<String> = pongs.iter().map(|e| e.id.clone()).collect();
    assert_eq!((pongs.len(), ids.len()), (N, N), "each pong once");

    // the finished instances expire (retention) and their keys are deleted
    let listed = || {
        let (status, body) = broker.get("/v1/instances?limit=5000");
        assert_eq!(status, 200, "{body}");
        body["instances"].as_array().map_or(0, Vec::len)
    };
    wait_for(120, "every finished instance to expire", || {
        (listed() == 0).then_some(())
    });
    // a merge of the instances table, with tombstones of deleted instances in its files
    let (mut waves, mut last) = (0, Instant::now());
    wait_for(240, "a merge that drops the instances' tombstones", || {
        let log = broker.log();
        let merged = log
            .lines()
            .any(|l| l.contains("merged a table") && l.contains("table=\"instances\""));
        if !merged && last.elapsed() > Duration::from_secs(5) {
            let tag = format!("w{waves}-");
            kafka
                .producer()
                .send_pings(&tag, WAVE, None, |i| json!({"i": i}));
            (waves, last) = (waves + 1, Instant::now());
        }
        merged.then_some(())
    });
    let sent = N + waves * WAVE;
    out.wait_events("bench.pong", sent, 240);
    wait_for(120, "the waves' instances to expire too", || {
        (listed() == 0).then_some(())
    });
    let m = broker.metrics();
    let files = metric_sum(&m, "flowbroker_store_segments", "table=\"instances\"");
    assert!(files > 0, "the instances table has files on disk");
    let flushes = metric_sum(&m, "flowbroker_store_flushes_total", "table=\"instances\"");
    assert!(flushes > 0, "its files came from memtable flushes, counted");
    assert_eq!(listed(), 0, "no deleted instance came back");
    // the store still works after the merges: a new event completes
    kafka
        .producer()
        .send_pings("after", 1, None, |_| json!({"i": -1}));
    let all = out.wait_events("bench.pong", sent + 1, 60);
    let ids: BTreeSet<String> = all.iter().map(|e| e.id.clone()).collect();
    assert_eq!(
        (all.len(), ids.len()),
        (sent + 1, sent + 1),
        "each pong once"
    );
}
