//! The input consumer's pause state (backpressure) after an assignment. The rebalance callback
//! pauses the partitions it adds when intake is paused at that moment; the consumer's loop may
//! never see that pause (paused and resumed while it waited on the core), and a partition
//! left paused would deliver nothing again. After each assignment the loop applies the state
//! it follows to every partition assigned.

mod support;
use flowbroker::broker::Cmd;
use flowbroker::cluster::node::NodeId;
use flowbroker::config::KafkaConfig;
use flowbroker::kafka::consumer;
use rdkafka::consumer::Consumer;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::*;
use tokio::sync::{mpsc, watch};

#[test]
fn partitions_paused_on_a_stale_flag_are_resumed_after_the_assignment() {
    let kafka = Kafka::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cfg = KafkaConfig {
        brokers: kafka.brokers(),
        group_id: "intake-pause-test".into(),
        ..KafkaConfig::default()
    };
    let (control, _control_rx) = mpsc::unbounded_channel::<Cmd>();
    let (_intake_tx, intake) = watch::channel(false);
    let metrics = Arc::new(flowbroker::metrics::Metrics::new());
    let _guard = rt.enter();
    let (c, mut assigned) =
        consumer::create(&cfg, &NodeId::fresh(), control, metrics, intake.clone()).unwrap();
    let (core, mut records) = mpsc::channel::<Cmd>(16);
    rt.spawn(consumer::run(
        c.clone(),
        core,
        cfg.batch_size,
        cfg.max_input_bytes,
        intake,
        None,
    ));
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), async {
            while !matches!(*assigned.borrow_and_update(), Some(n) if n > 0) {
                assigned.changed().await.unwrap();
            }
        })
        .await
        .expect("the group assigns the input partitions within 60 s");
    });
    assert!(
        *c.context().rebalanced.borrow() >= 1,
        "the rebalance callback announces the assignment"
    );
    // what the callback does on a flag the loop never saw: the partitions paused, the
    // assignment announced
    let all = c.assignment().unwrap();
    c.pause(&all).unwrap();
    c.context().rebalanced.send_modify(|n| *n += 1);
    kafka
        .producer()
        .send_pings("p", 30, None, |i| json!({ "i": i }));
    let per_partition = rt.block_on(async {
        let mut per_partition = std::collections::BTreeMap::<i32, usize>::new();
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            while per_partition.values().sum::<usize>() < 30 {
                match records.recv().await {
                    Some(Cmd::Records(r)) => {
                        for rec in r {
                            *per_partition.entry(rec.partition).or_default() += 1;
                        }
                    }
                    Some(_) => {}
                    None => break,
                }
            }
        })
        .await;
        per_partition
    });
    let got: usize = per_partition.values().sum();
    // (on a failure, which partition fell short and where the consumer stands on each)
    assert_eq!(
        got,
        30,
        "every record is delivered: no partition stays paused (records per partition \
         {per_partition:?}; assignment and positions {:?})",
        c.position().map(|p| p
            .elements()
            .iter()
            .map(|e| (e.partition(), e.offset()))
            .collect::<Vec<_>>())
    );
}
