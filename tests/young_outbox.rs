//! Landed outbox entries wait in memory for Kafka's acknowledgement instead of going to the
//! store (`broker::young`, docs/broker.md "Young outbox entries"). A core on a real tansu
//! changelog, its store on disk, is stopped dead (dropped: nothing is flushed or persisted
//! after its last landing) while it holds entries the store never got, and a new core on the
//! same data directory takes the partition over:
//! - an entry not acknowledged is found again in the changelog and sent once more;
//! - an entry acknowledged (and its deletion landed) is neither stored nor sent again;
//! - an entry held longer than the settle time goes to the store, and is still sent again.

mod support;
use flowbroker::broker::core::Core;
use flowbroker::broker::{Acked, Cmd, Delivery, ManualClock, OutboxKey, StartRequest};
use flowbroker::cluster::partition::PartitionId;
use flowbroker::config::Config;
use flowbroker::kafka::log::KafkaLog;
use flowbroker::store::{Scope, Store, Table};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
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

const P0: PartitionId = PartitionId(0);

struct Node {
    core: Core,
    out: tokio::sync::mpsc::UnboundedReceiver<flowbroker::broker::LetOut>,
    store: Arc<Store>,
    clock: Arc<ManualClock>,
}

/// A core on the store in `dir`, owning partition 0 of the changelog `topics.1`.
fn node(
    kafka: &Kafka,
    dir: &Path,
    topics: (&str, &str),
    at: chrono::DateTime<chrono::Utc>,
) -> Node {
    let mut cfg = Config::default();
    cfg.kafka.brokers = kafka.brokers();
    cfg.kafka.group_id = "young".into();
    cfg.cluster.partitions = 1;
    cfg.cluster.work_topic = topics.0.into();
    cfg.cluster.changelog_topic = topics.1.into();
    let store = Arc::new(Store::open(&dir.join("store")).unwrap());
    let clock = Arc::new(ManualClock::new(at));
    let (mut core, out, _calls) =
        Core::detached(store.clone(), cfg.clone(), clock.clone()).unwrap();
    let log = KafkaLog::new(&cfg, "young".into()).unwrap();
    let (reader, _) = tokio::sync::mpsc::unbounded_channel();
    core.attach(Box::new(log), reader);
    let files = BTreeMap::from([("/wf/step.yaml".to_string(), ONE_STEP.to_string())]);
    core.process(vec![Cmd::Files(files)]).unwrap();
    core.process(vec![Cmd::Assigned(vec![P0])]).unwrap();
    Node {
        core,
        out,
        store,
        clock,
    }
}

impl Node {
    /// Starts an instance; its lifecycle events enter the outbox.
    fn start(&mut self) -> String {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        self.core
            .process(vec![Cmd::Start {
                start: StartRequest {
                    workflow: "step".into(),
                    input: json!({}),
                    key: None,
                    trace: None,
                    at: None,
                },
                reply: tx,
            }])
            .unwrap();
        rx.try_recv().unwrap().unwrap().id
    }

    /// The outbox keys the core let out since last asked.
    fn let_out(&mut self) -> Vec<OutboxKey> {
        let mut keys = Vec::new();
        while let Ok(batch) = self.out.try_recv() {
            keys.extend(batch.into_iter().map(|(k, _)| k));
        }
        keys.sort();
        keys
    }

    /// The outbox entries in the store, and the bytes ever committed to its outbox table.
    fn stored_outbox(&self) -> (usize, u64) {
        let tx = self.store.read().unwrap();
        let n = tx.len_in(Scope::Partition(0), Table::Outbox).unwrap() as usize;
        let written = self
            .store
            .stats()
            .tables
            .iter()
            .find(|t| t.table == Table::Outbox)
            .unwrap()
            .written;
        (n, written)
    }

    /// Kafka acknowledges `keys`; the round that forgets them lands.
    fn ack(&mut self, keys: &[OutboxKey]) {
        let acked = keys
            .iter()
            .map(|k| Acked {
                key: *k,
                topic: "flowbroker.lifecycle".into(),
                label: "flowbroker.instance.started".into(),
                delivery: Delivery::Delivered,
            })
            .collect();
        self.core.process(vec![Cmd::Acked(acked)]).unwrap();
    }

    /// Stops dead: nothing runs after its last landing (what a SIGKILL leaves on disk).
    fn kill(self) {
        let Node { core, store, .. } = self;
        drop(core);
        drop(store);
    }
}

fn topics(kafka: &Kafka, name: &str) -> (String, String) {
    let t = (format!("{name}.work"), format!("{name}.changelog"));
    kafka.create_topic(&t.0, 1);
    kafka.create_topic(&t.1, 1);
    t
}

#[test]
fn an_entry_kafka_never_acknowledged_is_sent_again_from_the_changelog() {
    let kafka = Kafka::start();
    let t = topics(&kafka, "young.lost");
    let topics = (t.0.as_str(), t.1.as_str());
    let dir = tempfile::tempdir().unwrap();
    let t0 = chrono::Utc::now();

    let mut a = node(&kafka, dir.path(), topics, t0);
    let id = a.start();
    let sent = a.let_out();
    assert_eq!(sent.len(), 2, "started and completed: {sent:?}");
    // mid-flight: landed and let out, in the changelog, not in the store
    assert_eq!(a.stored_outbox(), (0, 0), "the entries are held in memory");
    a.kill();

    let mut b = node(&kafka, dir.path(), topics, t0);
    assert_eq!(b.let_out(), sent, "each entry is sent again, under its key");
    let tx = b.store.read().unwrap();
    let ids: Vec<String> = tx
        .prefix_in::<serde_json::Value>(Scope::Partition(0), Table::Instances, "")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(ids, vec![id], "the instance itself was stored once");
}

#[test]
fn an_acknowledged_entry_is_neither_stored_nor_sent_again() {
    let kafka = Kafka::start();
    let t = topics(&kafka, "young.acked");
    let topics = (t.0.as_str(), t.1.as_str());
    let dir = tempfile::tempdir().unwrap();
    let t0 = chrono::Utc::now();

    let mut a = node(&kafka, dir.path(), topics, t0);
    a.start();
    let first = a.let_out();
    a.ack(&first);
    a.start();
    let second = a.let_out();
    assert_eq!((first.len(), second.len()), (2, 2));
    assert_eq!(
        a.stored_outbox(),
        (0, 0),
        "no put and no tombstone reached the store"
    );
    a.kill();

    // the acknowledged entries' deletion is in the changelog after them: only the second
    // instance's are sent again
    let mut b = node(&kafka, dir.path(), topics, t0);
    assert_eq!(b.let_out(), second);
}

#[test]
fn an_entry_held_past_the_settle_time_goes_to_the_store() {
    let kafka = Kafka::start();
    let t = topics(&kafka, "young.settled");
    let topics = (t.0.as_str(), t.1.as_str());
    let dir = tempfile::tempdir().unwrap();
    let t0 = chrono::Utc::now();

    let mut a = node(&kafka, dir.path(), topics, t0);
    a.start();
    let first = a.let_out();
    assert_eq!(a.stored_outbox().0, 0);
    // three seconds later, the next landing of the partition stores them
    a.clock.advance(chrono::Duration::seconds(3));
    a.start();
    let second = a.let_out();
    let (stored, written) = a.stored_outbox();
    assert_eq!(
        stored,
        first.len(),
        "the older entries are in the store now"
    );
    assert!(written > 0);
    a.kill();

    let mut b = node(&kafka, dir.path(), topics, t0);
    let mut all = [first, second].concat();
    all.sort();
    assert_eq!(
        b.let_out(),
        all,
        "stored or held, every entry is sent again"
    );
}
