//! Input offsets committed to the group (`kafka.group_id`): the offsets landed rounds hand
//! over are kept, the latest per partition, and committed by one thread of their own, one
//! commit at a time and at most one per `kafka.commit_interval_ms`, plus once more when the
//! broker stops.
//!
//! A commit is only where the group's next reader starts: positions stored with each batch
//! (in the changelog) decide what is applied, so a commit that lags or never happens makes a
//! new owner read more again, never apply twice. Committing once per landed round instead
//! (hundreds a second) queued the group's heartbeats behind the commits on a coordinator that
//! answers a connection's requests one at a time and each commit after a durable write
//! (tansu's slatedb engine), until the session timed out (docs/kafka.md).
//!
//! The thread is not the runtime's: a commit waits for the coordinator's answer (librdkafka
//! gives up after `session.timeout.ms` without a coordinator, or `socket.timeout.ms` once
//! sent), and a process that stops does not wait for it.

use super::consumer::KafkaConsumer;
use crate::broker::core::CommitOffsets;
use crate::metrics::Metrics;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An input partition: topic and partition number.
type InputKey = (String, i32);

/// The offsets waiting for the next commit: the next offset to read, per input partition.
#[derive(Debug, Default)]
struct Pending(HashMap<InputKey, i64>);

impl Pending {
    /// The latest handed over wins, as the latest commit does in Kafka.
    fn put(&mut self, offsets: Vec<(String, i32, i64)>) {
        for (t, p, o) in offsets {
            self.0.insert((t, p), o);
        }
    }

    /// What a failed commit carried, where nothing newer came meanwhile, for the next one.
    fn put_back(&mut self, offsets: HashMap<InputKey, i64>) {
        for (k, o) in offsets {
            self.0.entry(k).or_insert(o);
        }
    }

    fn take(&mut self) -> HashMap<InputKey, i64> {
        std::mem::take(&mut self.0)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

enum Msg {
    /// A landed round's input offsets.
    Offsets(Vec<(String, i32, i64)>),
    /// Commit what waits now (after the commit in flight, if any), then answer.
    Flush(mpsc::SyncSender<()>),
}

/// The group's committer: an outlet for the core, and a last commit when the broker stops.
pub struct Commits {
    tx: mpsc::Sender<Msg>,
}

impl Commits {
    /// Starts the thread that commits what the core hands over.
    pub fn start(
        consumer: Arc<KafkaConsumer>,
        interval: Duration,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Commits> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("flowbroker-commits".into())
            .spawn(move || run(&rx, &consumer, interval, &metrics))?;
        Ok(Commits { tx })
    }

    /// What the core calls with a landed round's input offsets (it never waits).
    pub fn outlet(&self) -> CommitOffsets {
        let tx = self.tx.clone();
        Box::new(move |offsets| {
            if !offsets.is_empty() {
                let _ = tx.send(Msg::Offsets(offsets));
            }
        })
    }

    /// Commits what is still waiting, after the commit in flight, waiting up to `timeout`
    /// for the coordinator's answers (at a stop, once the core stopped landing rounds).
    pub fn flush(&self, timeout: Duration) {
        let (done, answered) = mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(done)).is_err() {
            return;
        }
        if answered.recv_timeout(timeout).is_err() {
            tracing::warn!(
                timeout_ms = timeout.as_millis() as u64,
                "last input offset commit not answered in time (the next owner reads more again; stored positions decide what is applied)"
            );
        }
    }
}

/// The longest time between two commits: a longer `kafka.commit_interval_ms` acts as this.
const LONGEST_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// Commits whenever something waits, one commit at a time, at most once per `interval`
/// (a flush at once), until every sender is gone.
fn run(rx: &mpsc::Receiver<Msg>, consumer: &KafkaConsumer, interval: Duration, metrics: &Metrics) {
    // (so that a commit's due time is always an instant)
    let interval = interval.min(LONGEST_INTERVAL);
    let mut pending = Pending::default();
    let mut last: Option<Instant> = None;
    loop {
        let due = last.map(|l| l + interval);
        let msg = match (pending.is_empty(), due) {
            (true, _) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (false, None) => Err(RecvTimeoutError::Timeout),
            (false, Some(at)) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
        };
        let mut flushes = Vec::new();
        match msg {
            Ok(Msg::Offsets(o)) => pending.put(o),
            Ok(Msg::Flush(done)) => flushes.push(done),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if !pending.is_empty() {
                    let _ = commit(consumer, pending.take(), metrics);
                }
                return;
            }
        }
        // everything already sent comes in too, so one commit carries it
        while let Ok(m) = rx.try_recv() {
            match m {
                Msg::Offsets(o) => pending.put(o),
                Msg::Flush(done) => flushes.push(done),
            }
        }
        let now = Instant::now();
        let is_due = due.is_none_or(|at| now >= at);
        if !pending.is_empty() && (is_due || !flushes.is_empty()) {
            match commit(consumer, pending.take(), metrics) {
                Sent::Nothing => {}
                Sent::Ok => last = Some(now),
                Sent::Failed(back) => {
                    pending.put_back(back);
                    last = Some(now);
                }
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// How a commit went.
enum Sent {
    /// Nothing to commit: none of the partitions is assigned to this member now.
    Nothing,
    Ok,
    /// Failed: what it carried, to be tried again with the next commit.
    Failed(HashMap<InputKey, i64>),
}

/// Commits `offsets` for the partitions the group assigns this member now, and waits for the
/// coordinator's answer.
fn commit(consumer: &KafkaConsumer, offsets: HashMap<InputKey, i64>, metrics: &Metrics) -> Sent {
    // only what the group assigned this member now: records read outside the group (after a
    // restart, `kafka::resume`) are read again by it and dropped by position, and a commit
    // from a member that does not own them is refused (Apache Kafka answers
    // UNKNOWN_MEMBER_ID, which makes librdkafka rejoin)
    let Ok(assigned) = consumer.assignment() else {
        metrics.input_commits.with_label_values(&["failed"]).inc();
        return Sent::Failed(offsets);
    };
    let mine: HashMap<InputKey, i64> = offsets
        .into_iter()
        .filter(|((t, p), _)| assigned.find_partition(t, *p).is_some())
        .collect();
    drop(assigned);
    if mine.is_empty() {
        return Sent::Nothing;
    }
    let mut tpl = TopicPartitionList::new();
    for ((t, p), o) in &mine {
        let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
    }
    match consumer.commit(&tpl, CommitMode::Sync) {
        Ok(()) => {
            metrics.input_commits.with_label_values(&["ok"]).inc();
            Sent::Ok
        }
        Err(e) => {
            metrics.input_commits.with_label_values(&["failed"]).inc();
            tracing::debug!(error = %e, "input offset commit failed (tried again with the next; stored positions decide what is applied)");
            Sent::Failed(mine)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i32) -> InputKey {
        ("in".to_string(), p)
    }

    #[test]
    fn the_latest_offset_handed_over_wins_and_taking_empties() {
        let mut p = Pending::default();
        p.put(vec![("in".into(), 0, 10), ("in".into(), 1, 5)]);
        // a lower offset after a higher one (a partition read again) is what the next
        // reader starts from, as Kafka's latest commit is
        p.put(vec![("in".into(), 0, 7)]);
        let taken = p.take();
        assert_eq!(taken.get(&key(0)), Some(&7));
        assert_eq!(taken.get(&key(1)), Some(&5));
        assert!(p.is_empty());
    }

    #[test]
    fn a_failed_commit_is_put_back_under_what_came_since() {
        let mut p = Pending::default();
        p.put(vec![("in".into(), 0, 10), ("in".into(), 1, 5)]);
        let failed = p.take();
        // a later round handed over partition 0 again while the commit was out
        p.put(vec![("in".into(), 0, 12)]);
        p.put_back(failed);
        let next = p.take();
        assert_eq!(next.get(&key(0)), Some(&12));
        assert_eq!(next.get(&key(1)), Some(&5));
    }
}
