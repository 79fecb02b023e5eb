//! Standby replicas on Kafka (docs/scale.md "Standby replicas"): a thread that tails the
//! changelogs of the partitions this broker stands by for (`cluster::standby` decides which,
//! from the claims, once a second) into the store (`broker::standby`), from where each copy
//! stands. A partition the core takes over leaves the set at once; one it lets go may join it.
//! A copy the changelog was trimmed past (or none at all, where Kafka trims) starts from the
//! partition's latest snapshot, as a take-over would.

use super::scan::read_snapshot;
use super::{client_config, KafkaError};
use crate::broker::shared::Shared;
use crate::broker::standby::Standby;
use crate::cluster::changelog::{Checkpoint, Entry};
use crate::cluster::node::NodeId;
use crate::cluster::partition::PartitionId;
use crate::cluster::standby::standby_for;
use crate::cluster::LogError;
use crate::config::Config;
use crate::store::{Store, Write};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the set of partitions stood by for is worked out again.
const RECHECK: Duration = Duration::from_secs(1);
/// How long a partition that could not be stood by for waits before it is tried again,
/// when no newer snapshot was announced meanwhile.
const RETRY_REFUSED: Duration = Duration::from_secs(300);
/// Records read before they are written to the store, at most.
const BATCH: usize = 500;

struct Tail {
    consumer: BaseConsumer,
    /// How the reader is made: a new one replaces it at every change of its partitions.
    config: rdkafka::ClientConfig,
    topic: String,
    snapshot_topic: String,
    store: Arc<Store>,
    shared: Arc<Shared>,
    node: NodeId,
    replicas: usize,
    /// Per partition stood by for: where its copy stands.
    copies: BTreeMap<PartitionId, Checkpoint>,
    /// Partitions not stood by for although the rule says so (their changelog was trimmed
    /// past this store's copy and no snapshot could replace it, or a record was unreadable),
    /// with the `next` of the snapshot tried (-1: none) and when: tried again once a newer
    /// snapshot is announced, or after [`RETRY_REFUSED`].
    refused: BTreeMap<PartitionId, (i64, Instant)>,
}

/// Starts the standby thread when `cluster.standby_replicas` is above 0.
pub fn start(
    cfg: &Config,
    node: NodeId,
    store: Arc<Store>,
    shared: Arc<Shared>,
) -> Result<(), KafkaError> {
    let replicas = cfg.cluster.standby_replicas;
    if replicas == 0 {
        return Ok(());
    }
    let k = &cfg.kafka;
    let config = client_config(
        k,
        &[
            ("group.id", format!("{}.standby", k.group_id)),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            ("fetch.wait.max.ms", k.fetch_wait_max_ms.to_string()),
            // a copy is never read from anywhere but where it stands
            ("auto.offset.reset", "error".into()),
        ],
    );
    let consumer: BaseConsumer = config
        .create()
        .map_err(KafkaError::client(k, "standby reader"))?;
    let mut tail = Tail {
        consumer,
        config,
        topic: cfg.cluster.changelog_topic.clone(),
        snapshot_topic: cfg.cluster.snapshot_topic.clone(),
        store,
        shared,
        node,
        replicas,
        copies: BTreeMap::new(),
        refused: BTreeMap::new(),
    };
    std::thread::Builder::new()
        .name("flowbroker-standby".into())
        .spawn(move || tail.run())
        .expect("standby thread");
    Ok(())
}

impl Tail {
    fn run(&mut self) {
        let mut checked = Instant::now() - RECHECK;
        loop {
            if checked.elapsed() >= RECHECK {
                checked = Instant::now();
                self.recheck();
            }
            if self.copies.is_empty() {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            self.step();
        }
    }

    /// The `next` of `p`'s latest snapshot known (-1: none).
    fn latest(&self, p: PartitionId) -> i64 {
        self.shared
            .directory
            .read()
            .ok()
            .and_then(|d| d.snapshot(p).map(|m| m.next))
            .unwrap_or(-1)
    }

    /// Works out the partitions to stand by for and reassigns the reader when they changed.
    fn recheck(&mut self) {
        let taken = self.shared.standby.taken();
        let want = match self.shared.directory.read() {
            Ok(d) => standby_for(&d, &self.node, &taken, self.replicas),
            Err(_) => return,
        };
        self.refused.retain(|p, _| want.contains(p));
        let refused: BTreeSet<PartitionId> = self
            .refused
            .iter()
            .filter(|(p, (tried, at))| self.latest(**p) == *tried && at.elapsed() < RETRY_REFUSED)
            .map(|(p, _)| *p)
            .collect();
        let want: BTreeSet<PartitionId> = want.difference(&refused).copied().collect();
        let have: BTreeSet<PartitionId> = self.copies.keys().copied().collect();
        if want == have {
            return;
        }
        for p in have.difference(&want) {
            self.copies.remove(p);
            self.shared.standby.forget(*p);
            tracing::info!(partition = %p, "no longer a standby for this state partition");
        }
        for p in want.difference(&have) {
            let start = self
                .consumer
                .fetch_watermarks(&self.topic, p.kafka(), Duration::from_secs(5))
                .map(|(low, _)| low);
            let Ok(start) = start else {
                // Kafka did not answer: tried again at the next check
                continue;
            };
            match Standby::checkpoint(&self.store, *p) {
                Ok(cp) if start > cp.next => {
                    // the changelog was trimmed past this copy: start from the snapshot
                    match self.copy_snapshot(*p, start) {
                        Ok(cp) => {
                            self.refused.remove(p);
                            self.shared.standby.started(*p, cp.next);
                            self.copies.insert(*p, cp);
                        }
                        Err((why, tried)) => {
                            tracing::info!(partition = %p, copy = cp.next, changelog_start = start,
                                why, "not standing by for a partition whose changelog was \
                                trimmed past this store's copy (tried again when a newer \
                                snapshot is announced, or in 5 minutes)");
                            self.refused.insert(*p, (tried, Instant::now()));
                        }
                    }
                }
                Ok(cp) => {
                    tracing::info!(partition = %p, from = cp.next,
                        "standing by for a state partition (tailing its changelog)");
                    self.shared.standby.started(*p, cp.next);
                    self.copies.insert(*p, cp);
                }
                Err(e) => tracing::warn!(partition = %p, error = %e,
                    "cannot read where this store's copy stands; not standing by for it"),
            }
        }
        self.assign();
    }

    /// Replaces the copy of `p` with its latest snapshot, when the changelog (which starts at
    /// `start`) holds everything after it; where the copy then stands, or why not and the
    /// `next` of the snapshot tried (-1: none known).
    fn copy_snapshot(&self, p: PartitionId, start: i64) -> Result<Checkpoint, (String, i64)> {
        let m = self
            .shared
            .directory
            .read()
            .ok()
            .and_then(|d| d.snapshot(p).cloned())
            .ok_or(("no snapshot of it is known yet".to_string(), -1))?;
        let tried = m.next;
        let why = |e: String| (e, tried);
        if m.next < start {
            return Err(why(format!(
                "its latest snapshot (changelog offset {}) is older than the changelog's start",
                m.next
            )));
        }
        let t0 = Instant::now();
        let reader: BaseConsumer = self.config.create().map_err(|e| why(e.to_string()))?;
        let standby = &self.shared.standby;
        let taken = || String::from("the core took it over meanwhile");
        let Some(lease) = standby
            .reset(&self.store, p)
            .map_err(|e| why(e.to_string()))?
        else {
            return Err(why(taken()));
        };
        read_snapshot(
            &reader,
            &self.snapshot_topic,
            &m,
            &mut |writes| match standby.load(&self.store, &lease, &writes, None) {
                Ok(true) => Ok(()),
                Ok(false) => Err(LogError::Snapshot {
                    partition: p,
                    why: taken(),
                }),
                Err(e) => Err(LogError::Snapshot {
                    partition: p,
                    why: e.to_string(),
                }),
            },
        )
        .map_err(|e| why(e.to_string()))?;
        let cp = Checkpoint {
            next: m.next,
            fence: m.fence,
        };
        if !standby
            .load(&self.store, &lease, &[], Some(&cp))
            .map_err(|e| why(e.to_string()))?
        {
            return Err(why(taken()));
        }
        tracing::info!(partition = %p, next = m.next, keys = m.keys, written_by = %m.broker,
            took_ms = t0.elapsed().as_millis() as u64,
            "standing by for a state partition from its latest snapshot (tailing its changelog \
             after it)");
        Ok(cp)
    }

    /// Drops the copies whose position the changelog no longer holds (trimmed past them):
    /// the next check starts them again from the latest snapshot.
    fn drop_trimmed(&mut self) {
        let behind: Vec<PartitionId> = self
            .copies
            .iter()
            .filter(|(p, cp)| {
                self.consumer
                    .fetch_watermarks(&self.topic, p.kafka(), Duration::from_secs(5))
                    .is_ok_and(|(low, _)| low > cp.next)
            })
            .map(|(p, _)| *p)
            .collect();
        for p in behind {
            tracing::info!(partition = %p,
                "the changelog was trimmed past this standby copy; it starts again from the \
                 latest snapshot");
            self.copies.remove(&p);
            self.shared.standby.forget(p);
        }
        self.assign();
    }

    fn assign(&mut self) {
        // a new reader rather than a second assign on the same one: librdkafka 2.12 can
        // abort (`rd_kafka_assignment_partition_stopped: Assertion rktp_started`) when an
        // assignment changes while stops of the previous one are pending
        // (confluentinc/librdkafka#5573, fixed after 2.15); the set changes rarely
        match self.config.create::<BaseConsumer>() {
            Ok(c) => self.consumer = c,
            Err(e) => tracing::warn!(error = %e, "a new standby reader could not be made"),
        }
        let mut tpl = TopicPartitionList::new();
        for (p, cp) in &self.copies {
            let _ = tpl.add_partition_offset(&self.topic, p.kafka(), Offset::Offset(cp.next));
        }
        if let Err(e) = self.consumer.assign(&tpl) {
            tracing::warn!(error = %e, "the standby reader could not be assigned");
        }
    }

    /// Reads what is there (at most [`BATCH`] records) and writes it to the copies.
    fn step(&mut self) {
        let mut writes: BTreeMap<PartitionId, Vec<Write>> = BTreeMap::new();
        let mut closed = false;
        let mut wait = Duration::from_millis(200);
        for _ in 0..BATCH {
            let Some(r) = self.consumer.poll(wait) else {
                break;
            };
            wait = Duration::ZERO;
            let m = match r {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!(error = %e, "standby read");
                    if matches!(
                        e,
                        rdkafka::error::KafkaError::MessageConsumption(
                            rdkafka::types::RDKafkaErrorCode::AutoOffsetReset
                        )
                    ) {
                        // a copy's position is no longer in the changelog (trimmed)
                        self.drop_trimmed();
                    }
                    break;
                }
            };
            let Ok(p) = u16::try_from(m.partition()).map(PartitionId) else {
                continue;
            };
            let Some(cp) = self.copies.get_mut(&p) else {
                continue;
            };
            if m.offset() < cp.next {
                continue;
            }
            match Entry::decode(m.offset(), m.payload().unwrap_or_default()) {
                Ok(entry) => {
                    let w = writes.entry(p).or_default();
                    if let Some(batch) = cp.offer(m.offset(), entry) {
                        w.extend(batch);
                    }
                }
                Err(e) => {
                    // a take-over reads it too, and says so; the copy stops here
                    tracing::warn!(partition = %p, error = %e,
                        "unreadable changelog record; no longer a standby for this partition");
                    self.copies.remove(&p);
                    self.shared.standby.forget(p);
                    self.refused.insert(p, (self.latest(p), Instant::now()));
                    writes.remove(&p);
                    closed = true;
                }
            }
        }
        for (p, w) in writes {
            let Some(cp) = self.copies.get(&p) else {
                continue;
            };
            match self.shared.standby.apply(&self.store, p, w, cp) {
                Ok(true) => {}
                Ok(false) => {
                    // the core took it over meanwhile: the take-over continues from the copy
                    self.copies.remove(&p);
                    self.shared.standby.forget(p);
                    closed = true;
                }
                Err(e) => {
                    tracing::warn!(partition = %p, error = %e,
                        "the standby copy could not be written; read again from the store");
                    self.copies.remove(&p);
                    self.shared.standby.forget(p);
                    closed = true;
                }
            }
        }
        if closed {
            self.assign();
        }
    }
}
