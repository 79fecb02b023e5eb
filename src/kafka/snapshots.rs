//! Writing snapshots (docs/scale.md "Snapshots"), on a thread of its own so the core goes on
//! applying: a [`Job`] holds a state partition's keys as of one changelog offset; its chunks
//! go to partition `p` of the snapshot topic (a few in flight at a time), then its
//! [`Manifest`] to the owners topic, where every broker reads it (this one's directory takes it
//! at once, before the partition can come due again). Then the changelog before the
//! snapshot and the snapshot topic before its first chunk are deleted (DeleteRecords), where
//! the Kafka broker implements it.

use super::polled::{Acked, Acks, Polled};
use super::{client_config, KafkaError};
use crate::broker::shared::Shared;
use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::{encode_chunk, Job, Manifest, Writer, FORMAT};
use crate::config::Config;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A chunk's size (keys and values), well under any broker's record limit.
const CHUNK_BYTES: usize = 512 << 10;
/// Chunks sent and not acknowledged yet, at most.
const IN_FLIGHT: usize = 8;
/// How long after a first refused DeleteRecords it is tried again; the wait doubles with each
/// refusal in a row, up to [`TRIM_BACKOFF_MAX`].
const TRIM_BACKOFF: Duration = Duration::from_secs(30);
const TRIM_BACKOFF_MAX: Duration = Duration::from_secs(3600);

/// Refusals of DeleteRecords in a row, and when to ask again.
#[derive(Default)]
struct Refusals {
    in_a_row: u32,
    until: Option<Instant>,
}

/// The core's handle: jobs go to the writer thread; a partition has one job at a time.
#[derive(Clone)]
pub struct Snapshots {
    jobs: std::sync::mpsc::Sender<Job>,
    running: Arc<Mutex<BTreeSet<PartitionId>>>,
}

impl Writer for Snapshots {
    fn running(&self, p: PartitionId) -> bool {
        self.running.lock().is_ok_and(|r| r.contains(&p))
    }

    fn submit(&self, job: Job) {
        if let Ok(mut r) = self.running.lock() {
            if !r.insert(job.partition) {
                return;
            }
        }
        let p = job.partition;
        if self.jobs.send(job).is_err() {
            if let Ok(mut r) = self.running.lock() {
                r.remove(&p);
            }
        }
    }
}

struct Thread {
    producer: Polled<Acks>,
    admin: AdminClient<DefaultClientContext>,
    snapshot_topic: String,
    changelog_topic: String,
    owners_topic: String,
    broker: String,
    trim: bool,
    /// DeleteRecords refused lately: a transient failure (a busy broker) is retried after
    /// 30 s, one that keeps failing (a broker that does not implement it) hourly at most.
    trim_refused: Mutex<Refusals>,
}

/// Starts the writer thread; `shared`'s directory learns each snapshot it announces.
pub fn start(cfg: &Config, broker: String, shared: Arc<Shared>) -> Result<Snapshots, KafkaError> {
    let k = &cfg.kafka;
    let mut c = client_config(
        k,
        &[
            ("enable.idempotence", "true".into()),
            ("acks", "all".into()),
            ("message.timeout.ms", "60000".into()),
            ("compression.type", super::INTERNAL_COMPRESSION.into()),
        ],
    );
    // a chunk is at most CHUNK_BYTES, but one value larger than that is a chunk of its own
    // (an instance with large data): as large as a changelog record may be
    super::log::keep_record_limit(&mut c);
    let producer = Polled::create(&c, Acks, "poll snapshots")
        .map_err(KafkaError::client(k, "snapshot producer"))?;
    let admin: AdminClient<DefaultClientContext> = super::create(k, &[], "snapshot trimmer")?;
    let w = Thread {
        producer,
        admin,
        snapshot_topic: cfg.cluster.snapshot_topic.clone(),
        changelog_topic: cfg.cluster.changelog_topic.clone(),
        owners_topic: cfg.cluster.owners_topic.clone(),
        broker,
        trim: cfg.cluster.trim_changelog,
        trim_refused: Mutex::new(Refusals::default()),
    };
    let (jobs, rx) = std::sync::mpsc::channel::<Job>();
    let running = Arc::new(Mutex::new(BTreeSet::new()));
    let r = running.clone();
    std::thread::Builder::new()
        .name("flowbroker-snapshots".into())
        .spawn(move || {
            for job in rx {
                let p = job.partition;
                let t0 = Instant::now();
                match w.write(&job) {
                    Ok(m) => {
                        // known here now, not once the owners topic is read back: the
                        // partition's next turn (`broker::snapshots::Plan::due`) measures its
                        // growth from this snapshot, and could otherwise find the one before
                        if let Ok(mut d) = shared.directory.write() {
                            d.offer_snapshot(m.clone());
                        }
                        let trimmed = w.trim(&m);
                        tracing::info!(partition = %p, next = m.next, keys = m.keys,
                            bytes = m.bytes, chunks = m.last - m.first + 1, trimmed,
                            took_ms = t0.elapsed().as_millis() as u64, "snapshot written");
                    }
                    Err(why) => tracing::warn!(partition = %p, next = job.next, error = %why,
                        "snapshot not written; the next one is tried later"),
                }
                if let Ok(mut r) = r.lock() {
                    r.remove(&p);
                }
            }
        })
        .expect("snapshot thread");
    Ok(Snapshots { jobs, running })
}

impl Thread {
    fn send(
        &self,
        topic: &str,
        p: Option<PartitionId>,
        key: &str,
        payload: &[u8],
    ) -> Result<Acked, String> {
        self.producer.queue::<str, [u8]>(topic, |r| {
            let r = r.key(key).payload(payload);
            match p {
                Some(p) => r.partition(p.kafka()),
                None => r,
            }
        })
    }

    fn write(&self, job: &Job) -> Result<Manifest, String> {
        let p = job.partition;
        let key = format!("{}/{}", p.0, job.next);
        let mut pending: VecDeque<Acked> = VecDeque::new();
        let (mut first, mut last) = (None, -1);
        let (mut keys, mut bytes) = (0u64, 0u64);
        let mut record = |offset: i64| {
            first.get_or_insert(offset);
            last = last.max(offset);
        };
        for chunk in job.export.chunks(CHUNK_BYTES) {
            let chunk = chunk.map_err(|e| e.to_string())?;
            keys += chunk.len() as u64;
            let payload = encode_chunk(job.next, &chunk);
            bytes += payload.len() as u64;
            pending.push_back(self.send(&self.snapshot_topic, Some(p), &key, &payload)?);
            if pending.len() >= IN_FLIGHT {
                record(pending.pop_front().expect("pending").wait()?);
            }
        }
        while let Some(f) = pending.pop_front() {
            record(f.wait()?);
        }
        let Some(first) = first else {
            // nothing in the partition: an empty snapshot needs no chunk
            return self.announce(job, -1, -2, 0, 0);
        };
        self.announce(job, first, last, keys, bytes)
    }

    fn announce(
        &self,
        job: &Job,
        first: i64,
        last: i64,
        keys: u64,
        bytes: u64,
    ) -> Result<Manifest, String> {
        let m = Manifest {
            format: FORMAT,
            partition: job.partition,
            next: job.next,
            fence: job.fence,
            first,
            last,
            keys,
            bytes,
            broker: self.broker.clone(),
        };
        let key = Manifest::key(job.partition);
        self.send(&self.owners_topic, None, &key, &m.encode())?
            .wait()?;
        Ok(m)
    }

    /// Deletes what the snapshot makes unnecessary; whether it could. A refusal is not
    /// retried for this snapshot: the next snapshot's trim covers everything before it.
    fn trim(&self, m: &Manifest) -> bool {
        let waiting = self
            .trim_refused
            .lock()
            .ok()
            .and_then(|r| r.until)
            .is_some_and(|until| Instant::now() < until);
        if !self.trim || waiting {
            return false;
        }
        let mut tpl = TopicPartitionList::new();
        let p = m.partition.kafka();
        let _ = tpl.add_partition_offset(&self.changelog_topic, p, Offset::Offset(m.next));
        if m.first >= 0 {
            let _ = tpl.add_partition_offset(&self.snapshot_topic, p, Offset::Offset(m.first));
        }
        let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(30)));
        let r = futures::executor::block_on(self.admin.delete_records(&tpl, &opts));
        let failed = match &r {
            Err(e) => Some(e.to_string()),
            Ok(list) => list
                .elements()
                .iter()
                .find_map(|e| e.error().err().map(|x| x.to_string())),
        };
        let Ok(mut refusals) = self.trim_refused.lock() else {
            return failed.is_none();
        };
        match failed {
            None => {
                *refusals = Refusals::default();
                true
            }
            Some(why) => {
                refusals.in_a_row = refusals.in_a_row.saturating_add(1);
                let wait = TRIM_BACKOFF
                    .saturating_mul(1 << (refusals.in_a_row - 1).min(16))
                    .min(TRIM_BACKOFF_MAX);
                refusals.until = Some(Instant::now() + wait);
                tracing::warn!(error = %why, partition = %m.partition,
                    refused_in_a_row = refusals.in_a_row, retry_in_s = wait.as_secs(),
                    "the Kafka broker did not delete the changelog before a snapshot \
                     (DeleteRecords; the prebuilt tansu does not implement it): until it does, \
                     the changelog grows; restores still start from the latest snapshot");
                false
            }
        }
    }
}
