//! Snapshots (docs/scale.md "Snapshots"): a broker snapshots the partitions it owns as their
//! changelogs grow; a broker that starts with an empty `data_dir` loads each partition's latest
//! snapshot and reads only the changelog after it, and every instance comes back exactly as it
//! was: status, state, data and history.

mod support;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::*;

#[test]
fn a_broker_with_an_empty_data_dir_restores_every_instance_from_snapshots_and_a_tail() {
    const N: usize = 120;
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "4"),
        ("FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS", "3"),
    ];
    let mut a = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    let p = kafka.producer();
    for i in 0..N {
        send_order(&p, "order.placed", i);
    }
    let started = out.wait_events("flowbroker.instance.started", N, 60);
    for i in 0..N / 3 {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N / 3, 60);
    wait_for(30, "a snapshot of every partition", || {
        (a.log().matches("snapshot written").count() >= 4).then_some(())
    });
    // a tail after the snapshots: more payments, applied by `a` restarted with snapshots off,
    // so that the tail is certainly not in any snapshot (with snapshots every 3 records, the
    // last one can happen to cover the whole tail)
    a.set_env("FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS", "0");
    a.restart();
    wait_for(60, "a to own every partition again", || {
        (a.owned().len() == 4).then_some(())
    });
    for i in N / 3..N / 2 {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N / 2, 60);
    let ids = instance_ids(&started);
    let before: BTreeMap<&String, Value> = ids.iter().map(|id| (id, restorable(&a, id))).collect();
    a.kill();

    // a new broker, a new data directory: everything comes from Kafka
    let b = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    wait_for(60, "b to own every partition", || {
        (b.owned().len() == 4).then_some(())
    });
    let log = b.log();
    assert!(
        log.matches("restored from a snapshot").count() >= 1,
        "b loaded snapshots: {log}"
    );
    // at least one partition came back from a snapshot plus changelog records after it
    let both = log
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .filter(|l| log_field(l, "snapshot") > 0 && log_field(l, "restored") > 0)
        .count();
    assert!(both >= 1, "a snapshot and a tail: {log}");
    eprintln!(
        "{}",
        log.lines()
            .filter(|l| l.contains("taken over") || l.contains("from a snapshot"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for id in &ids {
        assert_eq!(restorable(&b, id), before[id], "{id} after the restore");
    }
    // the restored correlation index still routes: the rest of the orders complete
    for i in N / 2..N {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N, 60);
    let done = out.events("flowbroker.instance.completed").len();
    assert_eq!(done, N, "each order completed once");
}

/// Snapshots by time wait for the changelog to grow (`cluster.snapshot_min_growth_percent`,
/// 50% by default, of the latest snapshot's bytes): a trickle of changes over four intervals
/// writes at most the snapshots the load still had due, where a snapshot every interval would
/// be four without the gate; growth past the share writes the next.
#[test]
fn snapshots_by_time_wait_for_the_changelog_to_grow() {
    const N: usize = 2_000;
    const INTERVAL: Duration = Duration::from_secs(2);
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let interval_ms = INTERVAL.as_millis().to_string();
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", "1"),
        ("FLOWBROKER_CLUSTER_SNAPSHOT_EVERY_RECORDS", "0"),
        (
            "FLOWBROKER_CLUSTER_SNAPSHOT_INTERVAL_MS",
            interval_ms.as_str(),
        ),
    ];
    let a = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    let p = kafka.producer();
    for i in 0..N {
        send_order(&p, "order.placed", i);
    }
    out.wait_events("flowbroker.instance.started", N, 120);
    let written = || a.log().matches("snapshot written").count();
    let latest = || {
        let m = a.metrics();
        let offset = metric_sum(&m, "flowbroker_snapshot_offset", "partition=\"0\"");
        let bytes = metric_sum(&m, "flowbroker_snapshot_bytes", "partition=\"0\"");
        (offset, bytes)
    };
    wait_for(60, "a snapshot announced", || {
        (latest().0 > 0).then_some(())
    });

    // a trickle: one payment at a time, each waited for, for four intervals
    let before = written();
    let t = Instant::now();
    let mut paid = 0;
    let pay = |paid: &mut usize| {
        send_order(&p, "order.paid", *paid);
        *paid += 1;
    };
    while t.elapsed() < 4 * INTERVAL {
        pay(&mut paid);
        out.wait_events("flowbroker.instance.completed", paid, 30);
    }
    let during = written() - before;
    let (offset, bytes) = latest();
    eprintln!(
        "{paid} payments over {:?}: {during} snapshots written; the latest at changelog offset \
         {offset}, {bytes} bytes",
        t.elapsed()
    );
    assert!(paid >= 4, "the trickle spanned several rounds: {paid}");
    // (a load snapshotted while it ran can leave one due, and the one after it one more if
    // it was written before the load's last batches)
    assert!(
        during <= 2,
        "a trickle of {paid} payments over four intervals wrote {during} snapshots"
    );

    // as many instances again, then payments on (a snapshot comes due as a round lands)
    for i in N..2 * N {
        send_order(&p, "order.placed", i);
    }
    out.wait_events("flowbroker.instance.started", 2 * N, 120);
    wait_for(60, "a snapshot of the grown state announced", || {
        pay(&mut paid);
        let (o, b) = latest();
        (o > offset && b * 2 > bytes * 3).then_some(())
    });
}
