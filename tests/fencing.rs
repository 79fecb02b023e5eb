//! A broker that lost a state partition without noticing (a "zombie": paused past its session
//! timeout, partitioned from the group coordinator) cannot corrupt it or let effects out: two
//! cores share one real tansu, both take partition 0 over, and the one fenced out first finds
//! the newer fence when its next batch is acknowledged at an unexpected offset. Its batch is
//! void: not stored, nothing produced, the request told to retry, the partition released. The
//! newer owner then restores without the zombie's batch.

mod support;
use flowbroker::broker::core::Core;
use flowbroker::broker::{AdminError, Cmd, ManualClock};
use flowbroker::cluster::partition::PartitionId;
use flowbroker::config::Config;
use flowbroker::store::{Scope, Store, Table};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use support::*;

const ONE_STEP: &str = r#"
id: step
name: step
states:
- name: Step
  type: inject
  start: {kind: default}
  data: {done: true}
  end: {kind: default}
"#;

struct Node {
    core: Core,
    out: tokio::sync::mpsc::UnboundedReceiver<
        Vec<(
            flowbroker::broker::OutboxKey,
            flowbroker::broker::records::OutRecord,
        )>,
    >,
    store: Arc<Store>,
    _dir: tempfile::TempDir,
}

impl Node {
    /// The ids of the instances in this node's store, partition 0.
    fn instance_ids(&self) -> Vec<String> {
        let tx = self.store.read().unwrap();
        tx.prefix_in::<serde_json::Value>(Scope::Partition(0), Table::Instances, "")
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }
}

fn node(kafka: &Kafka, name: &str, topics: (&str, &str)) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.kafka.brokers = kafka.brokers();
    cfg.kafka.group_id = "fencing".into();
    cfg.cluster.partitions = 1;
    cfg.cluster.work_topic = topics.0.into();
    cfg.cluster.changelog_topic = topics.1.into();
    let store = Arc::new(Store::open(&dir.path().join("store")).unwrap());
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let (mut core, out, _calls) = Core::detached(store.clone(), cfg.clone(), clock).unwrap();
    let log = flowbroker::kafka::log::KafkaLog::new(&cfg, name.into()).unwrap();
    let (reader, _) = tokio::sync::mpsc::unbounded_channel();
    core.attach(Box::new(log), reader);
    let files = BTreeMap::from([("/wf/step.yaml".to_string(), ONE_STEP.to_string())]);
    core.process(vec![Cmd::Files(files)]).unwrap();
    Node {
        core,
        out,
        store,
        _dir: dir,
    }
}

fn start(n: &mut Node) -> Result<String, AdminError> {
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    n.core
        .process(vec![Cmd::Start {
            workflow: "step".into(),
            input: json!({}),
            key: None,
            trace: None,
            at: None,
            reply: tx,
        }])
        .unwrap();
    rx.try_recv().expect("the start was answered")
}

/// Records the core let out (events to produce, work to forward).
fn let_out(n: &mut Node) -> usize {
    let mut k = 0;
    while let Ok(batch) = n.out.try_recv() {
        k += batch.len();
    }
    k
}

#[test]
fn a_fenced_out_owner_lets_nothing_out_and_its_batch_is_not_restored() {
    let kafka = Kafka::start();
    let topics = ("fencing.work", "fencing.changelog");
    kafka.create_topic(topics.0, 1);
    kafka.create_topic(topics.1, 1);
    let p0 = PartitionId(0);

    let mut old = node(&kafka, "old", topics);
    old.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    let first = start(&mut old).expect("the owner starts an instance");
    assert!(let_out(&mut old) > 0, "the owner lets its effects out");

    // the group moved partition 0; the old owner has not heard of it
    let mut new = node(&kafka, "new", topics);
    new.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    assert_eq!(
        old.core.owned(),
        vec![p0],
        "the old owner still believes it owns p0"
    );

    let refused = start(&mut old);
    assert!(
        matches!(refused, Err(AdminError::Moved(_))),
        "the zombie's request is told to retry: {refused:?}"
    );
    assert_eq!(let_out(&mut old), 0, "nothing left the zombie");
    assert!(old.core.owned().is_empty(), "the zombie released p0");

    // the new owner has the first instance (restored) and nothing of the zombie's batch; a
    // broker that takes p0 over after both restores the same
    let second = start(&mut new).expect("the new owner starts instances");
    assert!(let_out(&mut new) > 0);
    let mut third = node(&kafka, "third", topics);
    third.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    let ids = third.instance_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&first) && ids.contains(&second), "{ids:?}");
}
