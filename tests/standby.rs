//! Standby replicas (docs/scale.md "Standby replicas"): with `cluster.standby_replicas = 1`,
//! a broker keeps a copy of the other broker's partitions by tailing their changelogs, so when
//! that broker is SIGKILLed, its partitions' take-overs restore nothing but what the copy had
//! not read yet; without standbys the same take-overs replay every record. Either way every
//! order then completes once, on the copy.

mod support;
use rdkafka::consumer::Consumer;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;
use support::*;

const N: usize = 40;
const PARTITIONS: u16 = 4;

/// Runs two brokers, SIGKILLs the first; returns the changelog records each take-over of its
/// partitions by the second restored.
fn failover(standbys: &str) -> Vec<i64> {
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.lifecycle"]);
    let parts = PARTITIONS.to_string();
    let env = [
        ("FLOWBROKER_CLUSTER_PARTITIONS", parts.as_str()),
        ("FLOWBROKER_CLUSTER_STANDBY_REPLICAS", standbys),
    ];
    let mut a = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    let b = Broker::start(&kafka, &[("order.yaml", ORDER)], &env);
    let theirs: BTreeSet<u16> = wait_for(60, "a and b to share the partitions", || {
        let (oa, ob) = (a.owned(), b.owned());
        (oa.len() + ob.len() == PARTITIONS as usize && !oa.is_empty() && !ob.is_empty())
            .then(|| oa.into_iter().collect())
    });
    let p = kafka.producer();
    for i in 0..N {
        send_order(&p, "order.placed", i);
    }
    out.wait_events("flowbroker.instance.started", N, 60);
    for i in 0..N / 4 {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N / 4, 60);
    if standbys != "0" {
        // b's copies of a's partitions reach the end of their changelogs
        let ends = reader(&kafka.brokers(), &[], 10);
        wait_for(60, "b's standby copies to catch up", || {
            let (_, health) = b.get("/health");
            theirs
                .iter()
                .all(|p| {
                    let (_, end) = ends
                        .fetch_watermarks(
                            "flowbroker.changelog",
                            i32::from(*p),
                            Duration::from_secs(5),
                        )
                        .unwrap();
                    health["standby"][p.to_string()].as_i64() == Some(end)
                })
                .then_some(())
        });
    }
    let seen = b.log().len();
    a.kill();
    wait_for(60, "b to own every partition", || {
        (b.owned().len() == PARTITIONS as usize).then_some(())
    });
    let log = b.log();
    let restored: Vec<i64> = log[seen..]
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .filter(|l| theirs.contains(&(log_field(l, "partition") as u16)))
        .map(|l| log_field(l, "restored"))
        .collect();
    assert_eq!(restored.len(), theirs.len(), "{}", &log[seen..]);
    // the copies carry on: the rest of the orders complete, each once
    for i in N / 4..N {
        send_order(&p, "order.paid", i);
    }
    out.wait_events("flowbroker.instance.completed", N, 60);
    let completed = out.events("flowbroker.instance.completed");
    let done: BTreeSet<String> = completed
        .iter()
        .map(|e| {
            e.data
                .as_ref()
                .map_or(Value::Null, |d| d["instanceId"].clone())
                .to_string()
        })
        .collect();
    assert_eq!(done.len(), N, "every order completed");
    assert_eq!(completed.len(), N, "each order completed once");
    eprintln!("standby_replicas={standbys}: records restored per take-over {restored:?}");
    restored
}

#[test]
fn a_failover_to_a_standby_restores_only_what_its_copy_had_not_read() {
    let with = failover("1");
    let without = failover("0");
    assert!(
        with.iter().all(|r| *r == 0),
        "the copies were complete: {with:?}"
    );
    assert!(
        without.iter().sum::<i64>() > with.iter().sum::<i64>() + 4,
        "without standbys every record is replayed: {without:?} against {with:?}"
    );
}
