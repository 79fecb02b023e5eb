//! A broker that lost a state partition without noticing (a "zombie": paused past its session
//! timeout, partitioned from the group coordinator) cannot corrupt it or let effects out: two
//! cores share one real tansu, both take partition 0 over, and the one fenced out first finds
//! the newer fence when its next batch is acknowledged at an unexpected offset. Its batch is
//! void: not stored, nothing produced, the request told to retry, the partition released. The
//! newer owner then restores without the zombie's batch.

mod support;
use flowbroker::broker::core::Core;
use flowbroker::broker::{AdminError, Cmd, ManualClock, StartRequest};
use flowbroker::cluster::changelog::Entry;
use flowbroker::cluster::partition::PartitionId;
use flowbroker::cluster::{Log, LogError};
use flowbroker::config::Config;
use flowbroker::kafka::log::KafkaLog;
use flowbroker::store::{Scope, Store, Table};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
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
    out: tokio::sync::mpsc::UnboundedReceiver<flowbroker::broker::LetOut>,
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
    node_with(kafka, name, topics, |log, _| Box::new(log))
}

/// A node whose changelog is `wrap`ped (given the node's clock).
fn node_with(
    kafka: &Kafka,
    name: &str,
    topics: (&str, &str),
    wrap: impl FnOnce(KafkaLog, Arc<ManualClock>) -> Box<dyn Log>,
) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(kafka, topics);
    let store = Arc::new(Store::open(&dir.path().join("store")).unwrap());
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let (mut core, out, _calls) =
        Core::detached(store.clone(), cfg.clone(), clock.clone()).unwrap();
    let log = KafkaLog::new(&cfg, name.into()).unwrap();
    let (reader, _) = tokio::sync::mpsc::unbounded_channel();
    core.attach(wrap(log, clock), reader);
    let files = BTreeMap::from([("/wf/step.yaml".to_string(), ONE_STEP.to_string())]);
    core.process(vec![Cmd::Files(files)]).unwrap();
    Node {
        core,
        out,
        store,
        _dir: dir,
    }
}

/// One state partition on `kafka`, with these work and changelog topics.
fn config(kafka: &Kafka, topics: (&str, &str)) -> Config {
    let mut cfg = Config::default();
    cfg.kafka.brokers = kafka.brokers();
    cfg.kafka.group_id = "fencing".into();
    cfg.cluster.partitions = 1;
    cfg.cluster.work_topic = topics.0.into();
    cfg.cluster.changelog_topic = topics.1.into();
    cfg
}

/// Appends a provisional fence to partition 0, as a restarted broker resuming it does.
fn provisional_fence(kafka: &Kafka, topics: (&str, &str)) {
    KafkaLog::new(&config(kafka, topics), "back".into())
        .unwrap()
        .append(&[(
            PartitionId(0),
            Entry::Fence {
                owner: "back".into(),
                provisional: true,
            },
        )])
        .unwrap();
}

fn start(n: &mut Node) -> Result<String, AdminError> {
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    n.core
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
    rx.try_recv().expect("the start was answered").map(|s| s.id)
}

/// The one-partition work and changelog topics every test here uses, created.
fn topics(kafka: &Kafka) -> (&'static str, &'static str) {
    let topics = ("fencing.work", "fencing.changelog");
    kafka.create_topic(topics.0, 1);
    kafka.create_topic(topics.1, 1);
    topics
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
    let topics = topics(&kafka);
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

/// The [`Log`] methods a changelog wrapper here passes to its `inner` log unchanged; given a
/// method's name, `read` calls it first.
macro_rules! inner_reads {
    ($($before_read:ident)?) => {
        fn read(
            &mut self,
            p: PartitionId,
            from: i64,
            through: i64,
        ) -> Result<Vec<(i64, Entry)>, LogError> {
            $(self.$before_read();)?
            self.inner.read(p, from, through)
        }

        fn end(&mut self, p: PartitionId) -> Result<i64, LogError> {
            self.inner.end(p)
        }

        fn ends(&mut self, ps: &[PartitionId]) -> Result<Vec<i64>, LogError> {
            self.inner.ends(ps)
        }

        fn start(&mut self, p: PartitionId) -> Result<i64, LogError> {
            self.inner.start(p)
        }

        fn read_snapshot(
            &mut self,
            m: &flowbroker::cluster::snapshot::Manifest,
            apply: &mut dyn FnMut(Vec<flowbroker::store::Write>) -> Result<(), LogError>,
        ) -> Result<(), LogError> {
            self.inner.read_snapshot(m, apply)
        }

        fn forward(
            &mut self,
            work: Vec<(PartitionId, flowbroker::cluster::work::Work)>,
        ) -> Result<Vec<(PartitionId, i64)>, LogError> {
            self.inner.forward(work)
        }

        fn owner(&self) -> String {
            self.inner.owner()
        }
    };
}

/// Node `name` whose changelog, once the returned flag is armed, lets its next append land
/// and then has broker `other` fence it (`provisional`: as a restarted broker resuming does;
/// `trim`: and delete the changelog through its fence, keeping a record it appends after it
/// or none) and its clock jump past the pause.
fn paused_node(
    kafka: &Kafka,
    name: &str,
    topics: (&str, &str),
    other: &str,
    (provisional, trim): (bool, Option<bool>),
) -> (Node, Arc<AtomicBool>) {
    let armed = Arc::new(AtomicBool::new(false));
    let other = KafkaLog::new(&config(kafka, topics), other.into()).unwrap();
    let trim = trim.map(|keep_next| {
        let admin = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", kafka.brokers())
            .create()
            .unwrap();
        (topics.1.to_string(), admin, keep_next)
    });
    let a = armed.clone();
    let node = node_with(kafka, name, topics, move |inner, clock| {
        Box::new(PausedAfterAppend {
            inner,
            other,
            clock,
            armed: a,
            provisional,
            trim,
        })
    });
    (node, armed)
}

/// Owner `name` of partition 0 (over new `topics`) that starts an instance and lets its
/// effects out, then starts a second across the pause of [`paused_node`]; returns the owner
/// and both instance ids.
fn paused_owner(
    kafka: &Kafka,
    name: &str,
    topics: (&str, &str),
    other: &str,
    fence: (bool, Option<bool>),
) -> (Node, String, String) {
    kafka.create_topic(topics.0, 1);
    kafka.create_topic(topics.1, 1);
    let (mut n, armed) = paused_node(kafka, name, topics, other, fence);
    n.core
        .process(vec![Cmd::Assigned(vec![PartitionId(0)])])
        .unwrap();
    let first = start(&mut n).expect("the owner starts an instance");
    assert!(let_out(&mut n) > 0, "the owner lets its effects out");

    armed.store(true, Ordering::SeqCst);
    let second = start(&mut n).expect("the batch was appended before the fence: it stands");
    assert!(
        !armed.load(Ordering::SeqCst),
        "the pause hit between the append and the effects"
    );
    (n, first, second)
}

/// A changelog that, once armed, has another broker fence the partition right after an append
/// is acknowledged and moves the clock on 30 s: a process stopped (SIGSTOP, a long GC-like
/// stall) between its batch's append and its effects, while the group moved the partition.
struct PausedAfterAppend {
    inner: KafkaLog,
    other: KafkaLog,
    clock: Arc<ManualClock>,
    armed: Arc<AtomicBool>,
    /// The other broker's fence is a restarted broker's provisional one.
    provisional: bool,
    /// After its fence, the other broker deletes the changelog (this topic) through it, as
    /// after a snapshot of its own, keeping a record it appends after the fence or none.
    trim: Option<(
        String,
        rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext>,
        bool,
    )>,
}

impl Log for PausedAfterAppend {
    fn append(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        let r = self.inner.append(entries)?;
        if self.armed.swap(false, Ordering::SeqCst) {
            for (p, _) in &r {
                let owner = self.other.owner();
                let fence = self.other.append(&[(
                    *p,
                    Entry::Fence {
                        owner,
                        provisional: self.provisional,
                    },
                )])?[0]
                    .1;
                if let Some((topic, admin, keep_next)) = &self.trim {
                    // the new owner's next record (a second fence stands in for a batch), then
                    // everything before it deleted, the fence included: its snapshot came after
                    let after = match keep_next {
                        true => {
                            let owner = self.other.owner();
                            let entry = Entry::Fence {
                                owner,
                                provisional: false,
                            };
                            self.other.append(&[(*p, entry)])?[0].1
                        }
                        false => fence + 1,
                    };
                    assert_eq!(after, fence + 1);
                    let mut tpl = rdkafka::TopicPartitionList::new();
                    tpl.add_partition_offset(topic, p.kafka(), rdkafka::Offset::Offset(after))
                        .unwrap();
                    let opts = rdkafka::admin::AdminOptions::new();
                    let r = futures::executor::block_on(admin.delete_records(&tpl, &opts));
                    let r = r.expect("DeleteRecords");
                    assert!(r.elements().iter().all(|e| e.error().is_ok()), "trimmed");
                }
            }
            self.clock.advance(chrono::Duration::seconds(30));
        }
        Ok(r)
    }

    inner_reads!();
}

#[test]
fn an_owner_paused_between_its_append_and_its_effects_lets_nothing_out() {
    let kafka = Kafka::start();
    let topics = ("paused.work", "paused.changelog");
    let p0 = PartitionId(0);
    let (mut old, first, second) = paused_owner(&kafka, "old", topics, "new", (false, None));
    assert_eq!(let_out(&mut old), 0, "nothing left the paused owner");
    assert!(old.core.owned().is_empty(), "it released p0");

    // the new owner restores both instances and sends what the paused one held back
    let mut new = node(&kafka, "new", topics);
    new.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    let ids = new.instance_ids();
    assert!(ids.contains(&first) && ids.contains(&second), "{ids:?}");
    assert!(
        let_out(&mut new) > 0,
        "the new owner re-sends the held-back outbox"
    );
}

/// The same pause, and the new owner deleted the changelog meanwhile, its fence included (as
/// after a snapshot of its own), keeping a record it wrote since or none, so the records after
/// the paused owner's batch are gone when it looks for a fence there. That is another owner's
/// doing all the same: its effects stay in and it lets the partition go, and its core goes on
/// (it used to stop on the failed read, or, with nothing kept, wait out the read's deadline
/// first).
#[test]
fn an_owner_paused_while_the_new_owner_trimmed_the_changelog_lets_nothing_out() {
    let kafka = Kafka::start_trimming();
    let p0 = PartitionId(0);
    for (keep_next, topics) in [
        (true, ("trimmed1.work", "trimmed1.changelog")),
        (false, ("trimmed0.work", "trimmed0.changelog")),
    ] {
        let t0 = std::time::Instant::now();
        let (mut old, _, _) = paused_owner(&kafka, "old", topics, "new", (false, Some(keep_next)));
        let mut log = KafkaLog::new(&config(&kafka, topics), "check".into()).unwrap();
        let (kept, end) = (log.start(p0).unwrap(), log.end(p0).unwrap());
        assert_eq!(
            end - kept,
            i64::from(keep_next),
            "only what the new owner wrote after its fence is left: {kept}..{end}"
        );
        assert_eq!(let_out(&mut old), 0, "nothing left the paused owner");
        assert!(old.core.owned().is_empty(), "it released p0");
        // its core goes on: a start is taken and handed to p0's owner
        let again = start(&mut old);
        assert!(again.is_ok(), "{again:?}");
        assert!(old.core.owned().is_empty());
        // not a read's deadline (two minutes) waited out
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(100),
            "{:?}",
            t0.elapsed()
        );
    }
}

/// The same pause, but the fence after the batch is a restarted broker's provisional one
/// (it resumed what it held last) while the group has the partition here: the batch stands,
/// its effects stay in, and the owner takes the partition back (as when it finds such a fence
/// at an unexpected offset), so the partition is not left without an owner. Taking it back
/// restores both instances and sends what the pause held back.
#[test]
fn an_owner_paused_past_a_provisional_fence_takes_its_partition_back() {
    let kafka = Kafka::start();
    let topics = ("paused2.work", "paused2.changelog");
    let p0 = PartitionId(0);
    let (mut owner, first, second) = paused_owner(&kafka, "owner", topics, "back", (true, None));
    assert_eq!(owner.core.owned(), vec![p0], "it took p0 back");
    let ids = owner.instance_ids();
    assert!(ids.contains(&first) && ids.contains(&second), "{ids:?}");
    assert!(
        let_out(&mut owner) > 0,
        "taking p0 back sends the outbox the pause held back"
    );
    let third = start(&mut owner).expect("it keeps working p0");
    assert!(owner.instance_ids().contains(&third));
}

/// Where another broker's fence goes, if anywhere, in [`PausedWithTwoOnTheirWay`].
#[derive(Clone, Copy, PartialEq)]
enum OtherFence {
    AfterBoth,
    Between,
    /// None: the pause was all (the group did not move the partition). With
    /// `second_pending`, the second append's acknowledgement reaches the core only once the
    /// changelog is read.
    Nowhere {
        second_pending: bool,
    },
}

/// A changelog on which, once armed, the first append sent stays on its way (as far as the
/// core knows) until a second one is sent. Then, with both in the changelog, another broker
/// fences the partition (unless [`OtherFence::Nowhere`]) and the clock moves on 30 s: a
/// process paused with two rounds' appends of one partition on their way while the group
/// moved the partition.
struct PausedWithTwoOnTheirWay {
    inner: KafkaLog,
    other: KafkaLog,
    clock: Arc<ManualClock>,
    armed: Arc<AtomicBool>,
    /// Lets the first append land once the second is sent.
    gate: Option<futures::channel::oneshot::Sender<()>>,
    first_sent: Arc<tokio::sync::Notify>,
    /// Set when the second append was sent while the first was held on its way.
    both: Arc<AtomicBool>,
    fence: OtherFence,
    /// Lets the second append's acknowledgement through (`second_pending`).
    release_second: Option<futures::channel::oneshot::Sender<()>>,
}

impl Log for PausedWithTwoOnTheirWay {
    fn append(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<Vec<(PartitionId, i64)>, LogError> {
        self.inner.append(entries)
    }

    fn send(
        &mut self,
        entries: &[(PartitionId, Entry)],
    ) -> Result<flowbroker::cluster::Appending, LogError> {
        if !self.armed.load(Ordering::SeqCst) {
            return self.inner.send(entries);
        }
        match self.gate.take() {
            None => {
                let (open, opened) = futures::channel::oneshot::channel();
                self.gate = Some(open);
                // in the changelog before anything else is appended, but not landed yet
                let r = futures::executor::block_on(self.inner.send(entries)?);
                self.first_sent.notify_one();
                Ok(Box::pin(async move {
                    let _ = opened.await;
                    r
                }))
            }
            Some(open) => {
                self.armed.store(false, Ordering::SeqCst);
                // both records in the changelog, and the other broker's fence after them (or
                // between them)
                let sent = (self.fence != OtherFence::Between)
                    .then(|| futures::executor::block_on(self.inner.send(entries)?))
                    .transpose()?;
                let nowhere = matches!(self.fence, OtherFence::Nowhere { .. });
                for (p, _) in entries.iter().filter(|_| !nowhere) {
                    let owner = self.other.owner();
                    self.other.append(&[(
                        *p,
                        Entry::Fence {
                            owner,
                            provisional: false,
                        },
                    )])?;
                }
                let r = match sent {
                    Some(r) => r,
                    None => futures::executor::block_on(self.inner.send(entries)?)?,
                };
                self.clock.advance(chrono::Duration::seconds(30));
                self.both.store(true, Ordering::SeqCst);
                let _ = open.send(());
                if self.fence
                    == (OtherFence::Nowhere {
                        second_pending: true,
                    })
                {
                    let (release, released) = futures::channel::oneshot::channel();
                    self.release_second = Some(release);
                    return Ok(Box::pin(async move {
                        let _ = released.await;
                        Ok(r)
                    }));
                }
                Ok(Box::pin(std::future::ready(Ok(r))))
            }
        }
    }

    inner_reads!(let_second_land);
}

impl PausedWithTwoOnTheirWay {
    /// The changelog is read: the second append's acknowledgement held back comes now.
    fn let_second_land(&mut self) {
        if let Some(release) = self.release_second.take() {
            let _ = release.send(());
        }
    }
}

/// Sends a start of `step` to a running core; its answer comes on the receiver.
async fn send_start(
    cmds: &tokio::sync::mpsc::Sender<Cmd>,
) -> tokio::sync::oneshot::Receiver<Result<flowbroker::broker::Started, AdminError>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let start = StartRequest {
        workflow: "step".into(),
        input: json!({}),
        key: None,
        trace: None,
        at: None,
    };
    cmds.send(Cmd::Start { start, reply: tx })
        .await
        .expect("the core runs");
    rx
}

/// What became of two starts whose rounds' appends of partition 0 were on their way together
/// when the owner was paused and another broker fenced the partition as `fence` says.
struct TwoOnTheirWay {
    first: Result<String, AdminError>,
    second: Result<String, AdminError>,
    /// Records the paused owner let out afterwards.
    let_out: usize,
    /// The instances a broker taking partition 0 over then restores, and what it lets out.
    restored: Vec<String>,
    resent: usize,
    /// `flowbroker_landing_rechecks_total` of the paused owner: `ends` and `records`.
    rechecks: (u64, u64),
}

fn two_on_their_way(fence: OtherFence) -> TwoOnTheirWay {
    let kafka = Kafka::start();
    let topics = ("two.work", "two.changelog");
    kafka.create_topic(topics.0, 1);
    kafka.create_topic(topics.1, 1);
    let p0 = PartitionId(0);
    let other = KafkaLog::new(&config(&kafka, topics), "new".into()).unwrap();
    let armed = Arc::new(AtomicBool::new(false));
    let first_sent = Arc::new(tokio::sync::Notify::new());
    let both = Arc::new(AtomicBool::new(false));
    let (a, f, b) = (armed.clone(), first_sent.clone(), both.clone());
    let old = node_with(&kafka, "old", topics, move |inner, clock| {
        Box::new(PausedWithTwoOnTheirWay {
            inner,
            other,
            clock,
            armed: a,
            gate: None,
            first_sent: f,
            both: b,
            fence,
            release_second: None,
        })
    });
    let Node {
        mut core,
        mut out,
        store: _store,
        _dir,
    } = old;
    core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    while out.try_recv().is_ok() {}
    let rechecks = core.metrics().landing_rechecks.clone();
    armed.store(true, Ordering::SeqCst);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cmd_tx, cmd_rx) = tokio::sync::mpsc::channel(16);
    let (control_tx, control_rx) = tokio::sync::mpsc::unbounded_channel();
    let wait = std::time::Duration::from_secs(60);
    let (ran, (first, second)) = rt.block_on(async move {
        let run = core.run(flowbroker::broker::core::Queues::without_kafka(
            cmd_rx, control_rx,
        ));
        let drive = async move {
            let first = send_start(&cmd_tx).await;
            tokio::time::timeout(wait, first_sent.notified())
                .await
                .expect("the first start's round was appended");
            let second = send_start(&cmd_tx).await;
            let first = tokio::time::timeout(wait, first).await.expect("answered");
            let second = tokio::time::timeout(wait, second).await.expect("answered");
            drop((cmd_tx, control_tx));
            (first.unwrap(), second.unwrap())
        };
        tokio::join!(run, drive)
    });
    ran.unwrap();
    assert!(
        both.load(Ordering::SeqCst),
        "the second round was appended while the first was on its way, and the pause hit then"
    );
    let mut k = 0;
    while let Ok(batch) = out.try_recv() {
        k += batch.len();
    }
    let mut new = node(&kafka, "new", topics);
    new.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    TwoOnTheirWay {
        first: first.map(|s| s.id),
        second: second.map(|s| s.id),
        let_out: k,
        restored: new.instance_ids(),
        resent: let_out(&mut new),
        rechecks: (
            rechecks.with_label_values(&["ends"]).get(),
            rechecks.with_label_values(&["records"]).get(),
        ),
    }
}

/// Two rounds' appends of one partition on their way when the owner is paused and another
/// broker fences the partition after both (docs/broker.md "Pipelined rounds"): both batches
/// precede the fence, so both stand. Their requests are answered as applied (not told to
/// retry, which would start a second instance), nothing leaves the paused owner, and the new
/// owner restores both instances and sends their outbox.
#[test]
fn two_batches_on_their_way_before_another_brokers_fence_both_stand() {
    let r = two_on_their_way(OtherFence::AfterBoth);
    let first = r
        .first
        .expect("the first batch precedes the fence: it stands");
    let second = r
        .second
        .expect("the second batch precedes the fence too: its start was applied, not moved");
    assert_eq!(r.let_out, 0, "nothing left the paused owner");
    assert!(
        r.restored.contains(&first) && r.restored.contains(&second),
        "{:?}",
        r.restored
    );
    assert!(
        r.resent > 0,
        "the new owner sends the outbox the paused one held back"
    );
    assert!(
        r.rechecks.1 > 0,
        "a record after the first batch was not its own: read back {:?}",
        r.rechecks
    );
}

/// A pause with no other broker's fence (the group did not move the partition), the second
/// append acknowledged before the first lands or after (`second_pending`): both batches
/// stand, their effects leave, and the landing asked for the changelog's end. Returns how many
/// partitions' records were read back.
fn pause_alone(second_pending: bool) -> u64 {
    let r = two_on_their_way(OtherFence::Nowhere { second_pending });
    let first = r.first.expect("the first batch stands");
    let second = r.second.expect("the second batch stands");
    assert!(r.let_out > 0, "the owner let its effects out");
    assert!(
        r.restored.contains(&first) && r.restored.contains(&second),
        "{:?}",
        r.restored
    );
    let (ends, records) = r.rechecks;
    assert!(
        ends > 0,
        "the pause made the landing ask for the changelog's end"
    );
    records
}

/// The first batch's landing finds a record after it in the changelog, but that is the second
/// batch, acknowledged meanwhile: nothing is read back.
#[test]
fn a_pause_with_only_its_own_batches_after_lets_effects_out_without_reading_back() {
    let records = pause_alone(false);
    assert_eq!(records, 0, "the record after the first batch is its own");
}

/// The second batch's append is not acknowledged yet when the first lands: the record after
/// the first batch is not known to be its own, so it is read back (then the acknowledgement
/// comes).
#[test]
fn a_pause_with_its_own_batch_after_not_acknowledged_yet_reads_it_back() {
    assert!(pause_alone(true) > 0, "the record was read back");
}

/// The same with the other broker's fence between the two records: the first batch stands,
/// the second is void (its start told to retry) and the new owner has only the first.
#[test]
fn a_batch_on_its_way_after_another_brokers_fence_is_void() {
    let r = two_on_their_way(OtherFence::Between);
    let first = r
        .first
        .expect("the first batch precedes the fence: it stands");
    assert!(
        matches!(r.second, Err(AdminError::Moved(_))),
        "the second batch follows the fence: {:?}",
        r.second
    );
    assert_eq!(r.let_out, 0, "nothing left the paused owner");
    assert_eq!(r.restored, vec![first]);
    assert!(r.resent > 0, "the new owner sends the first batch's outbox");
}

/// A restarted broker resuming what it held last (docs/scale.md "Restart") writes a
/// provisional fence. An owner the group assigned the partition to, finding such a fence,
/// voids its batch as after any newer fence, but takes the partition back instead of letting
/// it go, so the partition is never left without an owner.
#[test]
fn an_owner_the_group_assigned_takes_a_partition_back_from_a_provisional_fence() {
    let kafka = Kafka::start();
    let topics = topics(&kafka);
    let p0 = PartitionId(0);

    let mut owner = node(&kafka, "owner", topics);
    owner.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    let first = start(&mut owner).expect("the owner starts an instance");

    // a restarted broker resumes p0 provisionally
    provisional_fence(&kafka, topics);

    let refused = start(&mut owner);
    assert!(
        matches!(refused, Err(AdminError::Moved(_))),
        "the batch after the provisional fence is void: {refused:?}"
    );
    assert_eq!(owner.core.owned(), vec![p0], "the owner took p0 back");
    let second = start(&mut owner).expect("the owner goes on under its new fence");

    // the changelog says the same: a broker restoring p0 now has both instances
    let mut third = node(&kafka, "third", topics);
    third.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    let ids = third.instance_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&first) && ids.contains(&second), "{ids:?}");
}

/// Only provisional fences are taken back from: when an ordinary fence (a broker the group
/// assigned) follows a provisional one, the former owner lets the partition go.
#[test]
fn an_ordinary_fence_after_a_provisional_one_still_wins() {
    let kafka = Kafka::start();
    let topics = topics(&kafka);
    let p0 = PartitionId(0);

    let mut owner = node(&kafka, "owner", topics);
    owner.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();
    start(&mut owner).expect("the owner starts an instance");
    provisional_fence(&kafka, topics);
    let mut new = node(&kafka, "new", topics);
    new.core.process(vec![Cmd::Assigned(vec![p0])]).unwrap();

    let refused = start(&mut owner);
    assert!(matches!(refused, Err(AdminError::Moved(_))), "{refused:?}");
    assert!(owner.core.owned().is_empty(), "the former owner let p0 go");
    start(&mut new).expect("the new owner goes on");
}
