//! The definitions topic on Kafka (`cluster.definitions_topic`, one partition, compacted):
//! a reader thread that tails it from the beginning, the start-up read to its end, and the
//! task that scans `workflows_dir`, publishes this broker's changes and hands the core the
//! files to deploy ([`crate::rollout`] decides what). [`Caught`] holds each intake batch until
//! every definition published before it arrived is deployed here, so an event is never
//! matched against definitions older than ones already published.

use super::sender::{Record, Sender};
use super::KafkaError;
use crate::broker::Cmd;
use crate::cluster::definitions::Published;
use crate::config::KafkaConfig;
use crate::rollout::Rollout;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

/// How long intake waits for definitions before it goes on.
const WAIT_AT_MOST: Duration = Duration::from_secs(5);

/// How far this broker has deployed the definitions topic. Intake asks, for each batch, that
/// everything published before the batch arrived be deployed first: a sync reads the topic's
/// end from Kafka (one offsets request, shared by every batch waiting) and waits until the
/// records up to it are with the core.
#[derive(Debug, Default)]
pub struct Caught {
    /// The next offset to deploy: every record before it is in the core's queue.
    deployed: AtomicI64,
    changed: Notify,
    /// When the latest sync started: everything published before it is deployed.
    synced: std::sync::Mutex<Option<Instant>>,
    /// Asks the sync task for a sync.
    wanted: Notify,
    /// How long each batch waited (`flowbroker_intake_definitions_wait_seconds`).
    waited: Option<prometheus::Histogram>,
}

impl Caught {
    fn synced_since(&self, t: Instant) -> bool {
        self.synced
            .lock()
            .ok()
            .and_then(|s| *s)
            .is_some_and(|s| s >= t)
    }

    /// Returns once every definition published before `t` is deployed here (or after a few
    /// seconds, logged: definitions that cannot be read must not stop intake).
    pub async fn wait_since(&self, t: Instant) {
        let began = tokio::time::Instant::now();
        self.wait_until_synced(t, began + WAIT_AT_MOST).await;
        if let Some(h) = &self.waited {
            h.observe(began.elapsed().as_secs_f64());
        }
    }

    async fn wait_until_synced(&self, t: Instant, until: tokio::time::Instant) {
        loop {
            let notified = self.changed.notified();
            if self.synced_since(t) {
                return;
            }
            self.wanted.notify_one();
            if tokio::time::timeout_at(until, notified).await.is_err() {
                tracing::warn!(
                    "intake went on after waiting 5 s for the definitions topic to be read"
                );
                return;
            }
        }
    }

    fn deployed_to(&self, next: i64) {
        self.deployed.fetch_max(next, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    fn synced_at(&self, t: Instant) {
        if let Ok(mut s) = self.synced.lock() {
            *s = Some(s.map_or(t, |old| old.max(t)));
        }
        self.changed.notify_waiters();
    }

    /// Serves syncs until the process ends: `end` asks Kafka where the topic ends.
    async fn serve(self: Arc<Self>, end: Arc<dyn Fn() -> Option<i64> + Send + Sync>) {
        loop {
            self.wanted.notified().await;
            let t = Instant::now();
            let e = end.clone();
            let Ok(Some(end)) = tokio::task::spawn_blocking(move || e()).await else {
                // Kafka did not answer: intake goes on with what is deployed
                tracing::debug!("could not read the definitions topic's end");
                self.synced_at(t);
                continue;
            };
            let until = tokio::time::Instant::now() + WAIT_AT_MOST;
            loop {
                let notified = self.changed.notified();
                if self.deployed.load(Ordering::Acquire) >= end {
                    break;
                }
                if tokio::time::timeout_at(until, notified).await.is_err() {
                    break;
                }
            }
            self.synced_at(t);
        }
    }
}

/// A record of the topic, as the reader hands it on.
pub struct Incoming {
    offset: i64,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// The reader: a thread tailing the topic from the beginning.
pub struct Reader {
    records: mpsc::UnboundedReceiver<Incoming>,
    pub caught: Arc<Caught>,
    /// Asks Kafka where the topic ends now.
    end: Arc<dyn Fn() -> Option<i64> + Send + Sync>,
    topic: String,
}

/// Starts the reader thread; `waited` gets how long each intake batch waited for a sync.
pub fn reader(
    cfg: &KafkaConfig,
    topic: &str,
    waited: prometheus::Histogram,
) -> Result<Reader, KafkaError> {
    let consumer: BaseConsumer = super::create(
        cfg,
        &[
            ("group.id", format!("{}.definitions", cfg.group_id)),
            ("enable.auto.commit", "false".into()),
            ("enable.auto.offset.store", "false".into()),
            ("fetch.wait.max.ms", "100".into()),
        ],
        "definitions reader",
    )?;
    let (tx, records) = mpsc::unbounded_channel();
    let caught = Arc::new(Caught {
        waited: Some(waited),
        ..Caught::default()
    });
    let (t, k) = (topic.to_string(), cfg.clone());
    std::thread::Builder::new()
        .name("flowbroker-definitions".into())
        .spawn(move || {
            while super::partitions_of(&k, &t).is_none() {
                std::thread::sleep(Duration::from_secs(1));
            }
            let mut tpl = TopicPartitionList::new();
            let _ = tpl.add_partition_offset(&t, 0, Offset::Beginning);
            if let Err(e) = consumer.assign(&tpl) {
                tracing::error!(topic = %t, error = %e,
                    "cannot read the definitions topic; this broker deploys only its own files");
                return;
            }
            loop {
                match consumer.poll(Duration::from_millis(500)) {
                    Some(Ok(m)) => {
                        let r = Incoming {
                            offset: m.offset(),
                            key: m.key().unwrap_or_default().to_vec(),
                            value: m.payload().unwrap_or_default().to_vec(),
                        };
                        if tx.send(r).is_err() {
                            return;
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "definitions topic"),
                    None => {}
                }
            }
        })
        .expect("definitions thread");
    let ends: BaseConsumer = super::create(cfg, &[], "definitions topic offsets")?;
    let t = topic.to_string();
    let end = Arc::new(move || {
        ends.fetch_watermarks(&t, 0, Duration::from_secs(5))
            .ok()
            .map(|(_, high)| high)
    });
    Ok(Reader {
        records,
        caught,
        end,
        topic: topic.to_string(),
    })
}

impl Reader {
    /// Folds every record up to the topic's end as Kafka reports it now (waiting at most
    /// `limit`, then going on with what was read, logged).
    pub async fn read_to_end(&mut self, rollout: &mut Rollout, limit: Duration) -> i64 {
        let started = Instant::now();
        let e = self.end.clone();
        let end = tokio::task::spawn_blocking(move || e())
            .await
            .ok()
            .flatten();
        let Some(end) = end else {
            tracing::warn!(topic = %self.topic,
                "cannot read the definitions topic's end; deploying this broker's own files and \
                 whatever the topic delivers later");
            return 0;
        };
        let mut next = 0;
        let until = tokio::time::Instant::now() + limit;
        while next < end {
            match tokio::time::timeout_at(until, self.records.recv()).await {
                Ok(Some(r)) => {
                    next = r.offset + 1;
                    fold(rollout, &self.topic, r);
                }
                _ => {
                    tracing::warn!(topic = %self.topic, read = next, end,
                        "the definitions topic was not read to its end in time; going on");
                    break;
                }
            }
        }
        self.caught.deployed_to(next);
        self.caught.synced_at(started);
        next
    }
}

fn fold(rollout: &mut Rollout, topic: &str, r: Incoming) {
    match Published::decode(&r.key, &r.value) {
        Ok((name, p)) => rollout.fold(name, p),
        Err(e) => tracing::error!(topic = %topic, offset = r.offset, error = %e,
            "skipping a record of the definitions topic"),
    }
}

/// Publishes this broker's unsent changes; those Kafka acknowledges are marked sent.
pub async fn publish(producer: &Sender, topic: &str, rollout: &mut Rollout) {
    for (name, p) in rollout.unsent() {
        let (key, payload) = (name.as_str().to_string(), p.encode());
        let record = Record::to(topic).key(key.as_bytes()).payload(&payload[..]);
        match producer.send(record, Duration::from_secs(5)).await {
            Ok(_) => {
                tracing::info!(file = %name, topic = %topic,
                    deleted = p.text.is_none(), "published to the other brokers");
                rollout.sent(&name, &p.text);
            }
            Err(e) => tracing::warn!(file = %name, topic = %topic, error = %e,
                "could not publish a workflow file to the other brokers; retrying"),
        }
    }
}

/// Scans `dir` every `every`, publishes changes, folds what the topic delivers, and hands the
/// core the files to deploy whenever they change. Ends when the core goes away.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    mut reader: Reader,
    mut rollout: Rollout,
    producer: Sender,
    mut watch: crate::watch::Watch,
    every: Duration,
    mut deployed: std::collections::BTreeMap<String, String>,
    // the core's control channel: it takes what is there before any input or work topic
    // batch, so a batch that waited for these definitions ([`Caught`]) is matched against
    // them, whichever of the core's queues it came through
    core: mpsc::UnboundedSender<Cmd>,
) {
    let topic = reader.topic.clone();
    tokio::spawn(reader.caught.clone().serve(reader.end.clone()));
    let mut tick = tokio::time::interval(every);
    loop {
        let mut next = None;
        tokio::select! {
            _ = tick.tick() => {
                let (w, files) = watch.scan_async().await;
                watch = w;
                // a scan that waited for a change to hold is not followed at once by another
                tick.reset();
                if let Some(files) = files {
                    let named = crate::rollout::named(watch.dir(), files);
                    rollout.scanned(named, chrono::Utc::now());
                }
                publish(&producer, &topic, &mut rollout).await;
            }
            r = reader.records.recv() => {
                let Some(r) = r else { return };
                let mut last = r.offset;
                fold(&mut rollout, &topic, r);
                while let Ok(r) = reader.records.try_recv() {
                    last = r.offset;
                    fold(&mut rollout, &topic, r);
                }
                next = Some(last + 1);
            }
        }
        let files = rollout.files();
        if files != deployed {
            deployed = files.clone();
            if core.send(Cmd::Files(files)).is_err() {
                return;
            }
        }
        if let Some(n) = next {
            reader.caught.deployed_to(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caught() -> (Arc<Caught>, prometheus::Histogram) {
        let h = prometheus::Histogram::with_opts(prometheus::HistogramOpts::new("w", "w")).unwrap();
        let c = Arc::new(Caught {
            waited: Some(h.clone()),
            ..Caught::default()
        });
        (c, h)
    }

    #[tokio::test]
    async fn a_batch_waits_for_a_sync_that_began_after_it_arrived_and_the_wait_is_counted() {
        let (c, h) = caught();
        let arrived = Instant::now();
        c.synced_at(arrived.checked_sub(Duration::from_millis(1)).unwrap());
        // a sync from before the batch arrived does not do: the batch waits for the next one
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.wait_since(arrived).await }
        });
        tokio::time::timeout(Duration::from_secs(10), c.wanted.notified())
            .await
            .expect("the batch asks for a sync");
        assert!(!waiter.is_finished(), "held until a sync began after it");
        assert_eq!(h.get_sample_count(), 0);
        c.synced_at(Instant::now());
        tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("let go once synced")
            .unwrap();
        assert_eq!(h.get_sample_count(), 1, "one wait observed");
        // a batch that arrived before the last sync began goes on at once, counted too
        c.wait_since(arrived).await;
        assert_eq!(h.get_sample_count(), 2);
    }
}
