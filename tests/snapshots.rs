//! Snapshots (docs/scale.md "Snapshots"): a broker snapshots the partitions it owns as their
//! changelogs grow; a broker that starts with an empty `data_dir` loads each partition's latest
//! snapshot and reads only the changelog after it, and every instance comes back exactly as it
//! was: status, state, data and history.

mod support;
use serde_json::Value;
use std::collections::BTreeMap;
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
    // a tail after the snapshots: more payments
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
