//! Input offsets committed to the group (`kafka.group_id`): the offsets landed rounds hand
//! over are kept, the latest per partition, and committed by one task, one commit at a time
//! and at most one per `kafka.commit_interval_ms`.
//!
//! A commit is only where the group's next reader starts: positions stored with each batch
//! (in the changelog) decide what is applied, so a commit that lags or never happens makes a
//! new owner read more again, never apply twice. Committing once per landed round instead
//! (hundreds a second) queued the group's heartbeats behind the commits on a coordinator that
//! answers a connection's requests one at a time and each commit after a durable write
//! (tansu's slatedb engine), until the session timed out (docs/kafka.md).

use super::consumer::KafkaConsumer;
use crate::broker::core::CommitOffsets;
use crate::metrics::Metrics;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// An input partition: topic and partition number.
type InputKey = (String, i32);

/// The offsets waiting for the next commit, shared by the core (which hands them over) and
/// the task that commits them.
struct Pending {
    /// The next offset to read, per input partition: the latest handed over wins, as the
    /// latest commit does in Kafka.
    offsets: Mutex<HashMap<InputKey, i64>>,
    wake: Notify,
}

impl Pending {
    fn put(&self, offsets: &[(String, i32, i64)]) {
        if offsets.is_empty() {
            return;
        }
        if let Ok(mut m) = self.offsets.lock() {
            for (t, p, o) in offsets {
                m.insert((t.clone(), *p), *o);
            }
        }
        self.wake.notify_one();
    }

    /// Puts back what a failed commit carried, where nothing newer came meanwhile, for the
    /// next commit.
    fn put_back(&self, offsets: HashMap<InputKey, i64>) {
        if let Ok(mut m) = self.offsets.lock() {
            for (k, o) in offsets {
                m.entry(k).or_insert(o);
            }
        }
        self.wake.notify_one();
    }

    fn take(&self) -> HashMap<InputKey, i64> {
        self.offsets
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }
}

/// The group's committer: an outlet for the core, and a last commit when the broker stops.
pub struct Commits {
    pending: Arc<Pending>,
    consumer: Arc<KafkaConsumer>,
    metrics: Arc<Metrics>,
}

impl Commits {
    /// Starts the task that commits what the core hands over (on the current tokio runtime).
    pub fn start(
        consumer: Arc<KafkaConsumer>,
        interval: Duration,
        metrics: Arc<Metrics>,
    ) -> Commits {
        let pending = Arc::new(Pending {
            offsets: Mutex::new(HashMap::new()),
            wake: Notify::new(),
        });
        tokio::spawn(run(
            pending.clone(),
            consumer.clone(),
            interval,
            metrics.clone(),
        ));
        Commits {
            pending,
            consumer,
            metrics,
        }
    }

    /// What the core calls with a landed round's input offsets (it never waits).
    pub fn outlet(&self) -> CommitOffsets {
        let pending = self.pending.clone();
        Box::new(move |offsets| pending.put(offsets))
    }

    /// Commits what is still waiting, waiting up to `timeout` for the coordinator's answer
    /// (at a stop, after the core stopped landing rounds). Blocks: call it off the runtime.
    pub fn flush(&self, timeout: Duration) {
        let offsets = self.pending.take();
        if offsets.is_empty() {
            return;
        }
        let (consumer, metrics) = (self.consumer.clone(), self.metrics.clone());
        let (done, answered) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            let _ = commit(&consumer, offsets, &metrics);
            let _ = done.send(());
        });
        if answered.recv_timeout(timeout).is_err() {
            tracing::warn!(
                timeout_ms = timeout.as_millis() as u64,
                "last input offset commit not answered in time (the next owner reads more again; positions decide what is applied)"
            );
        }
    }
}

/// Commits, one at a time, at most once per `interval`, whenever something is waiting.
async fn run(
    pending: Arc<Pending>,
    consumer: Arc<KafkaConsumer>,
    interval: Duration,
    metrics: Arc<Metrics>,
) {
    let mut last: Option<tokio::time::Instant> = None;
    loop {
        // a notification while committing is kept as a permit, so nothing waits unseen
        pending.wake.notified().await;
        if let Some(last) = last {
            tokio::time::sleep_until(last + interval).await;
        }
        let offsets = pending.take();
        if offsets.is_empty() {
            continue;
        }
        last = Some(tokio::time::Instant::now());
        let (consumer, metrics) = (consumer.clone(), metrics.clone());
        // synchronous, on a blocking thread: the next commit starts after this one's answer
        match tokio::task::spawn_blocking(move || commit(&consumer, offsets, &metrics)).await {
            Ok(Ok(())) => {}
            // tried again with the next commit (for the partitions still assigned then)
            Ok(Err(failed)) => pending.put_back(failed),
            Err(e) => tracing::warn!(error = %e, "input offset commit panicked"),
        }
    }
}

/// Commits `offsets` for the partitions the group assigns this member now, and waits for the
/// coordinator's answer; gives them back if the commit failed.
fn commit(
    consumer: &KafkaConsumer,
    offsets: HashMap<InputKey, i64>,
    metrics: &Metrics,
) -> Result<(), HashMap<InputKey, i64>> {
    // only what the group assigned this member now: records read outside the group (after a
    // restart, `kafka::resume`) are read again by it and dropped by position, and a commit
    // from a member that does not own them is refused (Apache Kafka answers
    // UNKNOWN_MEMBER_ID, which makes librdkafka rejoin)
    let Ok(assigned) = consumer.assignment() else {
        return Err(offsets);
    };
    let mut tpl = TopicPartitionList::new();
    for ((t, p), o) in &offsets {
        if assigned.find_partition(t, *p).is_some() {
            let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
        }
    }
    drop(assigned);
    if tpl.count() == 0 {
        return Ok(());
    }
    match consumer.commit(&tpl, CommitMode::Sync) {
        Ok(()) => {
            metrics.input_commits.with_label_values(&["ok"]).inc();
            Ok(())
        }
        Err(e) => {
            metrics.input_commits.with_label_values(&["failed"]).inc();
            tracing::debug!(error = %e, "input offset commit failed (tried again with the next; stored positions decide what is applied)");
            Err(offsets)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_offset_handed_over_wins_and_taking_empties() {
        let p = Pending {
            offsets: Mutex::new(HashMap::new()),
            wake: Notify::new(),
        };
        p.put(&[("in".into(), 0, 10), ("in".into(), 1, 5)]);
        // a lower offset after a higher one (a partition read again) is what the next
        // reader starts from, as Kafka's latest commit is
        p.put(&[("in".into(), 0, 7)]);
        let taken = p.take();
        assert_eq!(taken.get(&("in".to_string(), 0)), Some(&7));
        assert_eq!(taken.get(&("in".to_string(), 1)), Some(&5));
        assert!(p.take().is_empty());
    }

    #[test]
    fn a_failed_commit_is_put_back_under_what_came_since() {
        let p = Pending {
            offsets: Mutex::new(HashMap::new()),
            wake: Notify::new(),
        };
        p.put(&[("in".into(), 0, 10), ("in".into(), 1, 5)]);
        let failed = p.take();
        // a later round handed over partition 0 again while the commit was out
        p.put(&[("in".into(), 0, 12)]);
        p.put_back(failed);
        let next = p.take();
        assert_eq!(next.get(&("in".to_string(), 0)), Some(&12));
        assert_eq!(next.get(&("in".to_string(), 1)), Some(&5));
    }
}
