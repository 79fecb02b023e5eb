//! Snapshots of the partitions this broker owns (docs/scale.md "Snapshots"): after each
//! commit, a partition whose changelog grew by `cluster.snapshot_every_records` (or that has
//! waited `cluster.snapshot_interval_ms` and grown by `cluster.snapshot_min_growth_percent` of
//! its last snapshot's bytes) hands its keys, as of that commit, to the writer; at take-over, a
//! store behind the partition's latest snapshot loads it and reads only the changelog after it.

use super::checkpoints::CheckpointOf;
use super::error::CoreError;
use super::shared::Shared;
use crate::cluster::changelog::Checkpoint;
use crate::cluster::partition::PartitionId;
use crate::cluster::snapshot::{Job, Writer};
use crate::cluster::{Log, LogError};
use crate::store::Entry as _;
use crate::store::{Scope, Store};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a take-over waits for the owners topic (where snapshots are announced) to be read
/// up to where it ended at start.
const DIRECTORY_WAIT: Duration = Duration::from_secs(15);

pub(super) struct Plan {
    writer: Box<dyn Writer>,
    every_records: i64,
    every: chrono::Duration,
    min_growth_percent: u64,
    /// Per owned partition: the changelog offset and time of its last snapshot (or take-over).
    last: BTreeMap<PartitionId, (i64, DateTime<Utc>)>,
    /// Per owned partition: what the changelog batches this broker appended to it since it
    /// took it over put and deleted, counted as each landed and stood.
    grown: BTreeMap<PartitionId, Growth>,
    /// Per owned partition: the latest snapshots this broker handed to the writer since (at
    /// most [`MARKS`]), by the changelog offset each stands for, with `grown` at the time.
    marks: BTreeMap<PartitionId, BTreeMap<i64, Growth>>,
}

/// The snapshots of a partition remembered with the growth at their time.
const MARKS: usize = 8;

/// What a partition's changelog batches wrote: about the bytes their puts take (table name,
/// key, value and their lengths, as in a record or a chunk), and how many keys they deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Growth {
    bytes: u64,
    deletes: u64,
}

/// A partition's latest snapshot announced: the changelog offset it stands for, its bytes and
/// keys (from its manifest).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Latest {
    pub next: i64,
    pub bytes: u64,
    pub keys: u64,
}

impl Plan {
    /// Snapshots written by `writer` at the config's intervals.
    pub fn new(writer: Box<dyn Writer>, c: &crate::config::ClusterConfig) -> Plan {
        Plan {
            writer,
            every_records: c.snapshot_every_records as i64,
            every: chrono::Duration::milliseconds(c.snapshot_interval_ms as i64),
            min_growth_percent: u64::from(c.snapshot_min_growth_percent),
            last: BTreeMap::new(),
            grown: BTreeMap::new(),
            marks: BTreeMap::new(),
        }
    }

    /// A batch of `writes` appended to `p`'s changelog, landed and standing.
    pub fn grew(&mut self, p: PartitionId, writes: &[crate::store::Write]) {
        let g = self.grown.entry(p).or_default();
        for w in writes {
            match &w.value {
                Some(v) => g.bytes += (w.table.name().len() + w.key.len() + v.len() + 4) as u64,
                None => g.deletes += 1,
            }
        }
    }

    /// Whether `p` grew enough since its latest snapshot (`latest`: the changelog offset it
    /// stands for and its bytes; `None`: it has none) to be snapshotted by time: rewriting a
    /// large state for a few changes would cost the whole state's bytes each interval, however
    /// little changed (Kafka's log cleaner waits for `min.cleanable.dirty.ratio` the same
    /// way). Growth is known only since a snapshot this broker handed to the writer after its
    /// take-over; before that (a former owner's snapshot, or none), the interval alone decides,
    /// and the partitions take their turns as ever.
    /// A deleted key counts as the snapshot's mean entry: what it takes out of the next one.
    fn grown_enough(&self, p: PartitionId, latest: Option<Latest>) -> bool {
        let Some(l) = latest else {
            return true;
        };
        let Some(at) = self.marks.get(&p).and_then(|m| m.get(&l.next)) else {
            return true;
        };
        let now = self.grown.get(&p).copied().unwrap_or_default();
        let deletes = now.deletes.saturating_sub(at.deletes);
        let grown =
            now.bytes.saturating_sub(at.bytes) + deletes.saturating_mul(l.bytes / l.keys.max(1));
        grown.saturating_mul(100) >= l.bytes.saturating_mul(self.min_growth_percent)
    }

    /// Hands every owned partition that is due to the writer: `next` is where a snapshot of
    /// one taken now starts its changelog (its checkpoint: after its last record, or at the
    /// record of an outbox entry the store does not hold yet, `broker::young`), `fences` its
    /// fence, `latest` looks up its latest snapshot announced (only for a partition whose
    /// interval has passed, or that is handed over).
    pub fn due(
        &mut self,
        owned: &BTreeSet<PartitionId>,
        next: &dyn Fn(PartitionId) -> Option<i64>,
        fences: &BTreeMap<PartitionId, i64>,
        store: &Store,
        latest: &dyn Fn(PartitionId) -> Option<Latest>,
        now: DateTime<Utc>,
    ) {
        for p in owned {
            let Some(next) = next(*p) else {
                continue;
            };
            let (last, at) = self.last.get(p).copied().unwrap_or((0, now));
            let by_count = self.every_records > 0 && next - last >= self.every_records;
            let by_time = self.every > chrono::Duration::zero()
                && next > last
                && now - at >= self.every
                && self.grown_enough(*p, latest(*p));
            if !(by_count || by_time) || self.writer.running(*p) {
                continue;
            }
            // none while the store merges tombstones away (seconds): due again next turn
            let Some(export) = store.export(Scope::Partition(p.0)) else {
                continue;
            };
            self.writer.submit(Job {
                partition: *p,
                export,
                next,
                fence: fences.get(p).copied(),
            });
            self.last.insert(*p, (next, now));
            let grown = self.grown.get(p).copied().unwrap_or_default();
            let marks = self.marks.entry(*p).or_default();
            // the latest announced, and the ones after it (announced later, or never)
            if let Some(l) = latest(*p) {
                marks.retain(|&at, _| at >= l.next);
            }
            marks.insert(next, grown);
            while marks.len() > MARKS {
                marks.pop_first();
            }
        }
    }

    /// A partition taken over (of `parts` in the cluster): the snapshot it restored from (or
    /// none) counts as its last, moved back by its turn ([`turn`]) so the partitions of a
    /// broker, taken over together, are not all due together. In records only without a
    /// snapshot: a partition that has one keeps the phase its earlier owners gave it (moving
    /// it back would make every partition far enough past its snapshot due at once).
    pub fn owned(&mut self, p: PartitionId, parts: u16, since: i64, now: DateTime<Utc>) {
        let (records, time) = turn(p, parts, self.every_records, self.every);
        let records = if since == 0 { records } else { 0 };
        self.last.insert(p, (since - records, now - time));
        self.grown.insert(p, Growth::default());
        self.marks.remove(&p);
    }

    /// A partition let go.
    pub fn released(&mut self, p: PartitionId) {
        self.last.remove(&p);
        self.grown.remove(&p);
        self.marks.remove(&p);
    }
}

/// Partition `p`'s share of the snapshot interval (`every_records` records, `every` time):
/// `p mod n` of `n`ths of it, `n` the number of state partitions in the cluster. Its first
/// snapshot after a take-over comes that much earlier, so partitions that change at the same
/// pace take turns, one every `every / n`, instead of writing all their snapshots at once (which starves the Kafka broker on a small machine
/// for as long as they take; docs/performance.md "Snapshots in turn").
fn turn(
    p: PartitionId,
    n: u16,
    every_records: i64,
    every: chrono::Duration,
) -> (i64, chrono::Duration) {
    let (k, n) = (i128::from(p.0 % n.max(1)), i128::from(n.max(1)));
    let share = |whole: i64| (i128::from(whole) * k / n) as i64;
    (
        share(every_records),
        chrono::Duration::milliseconds(share(every.num_milliseconds())),
    )
}

/// At take-over, before the changelog is read from `cp`: loads the partition's latest
/// snapshot into `store` when the store is behind it by more than a snapshot interval of
/// records, or the changelog no longer holds what the store misses. Returns the offset of the
/// snapshot the partition now stands on (0: none).
pub(super) fn load(
    log: &mut dyn Log,
    store: &Store,
    shared: &Shared,
    plan: Option<&Plan>,
    p: PartitionId,
    cp: &mut Checkpoint,
) -> Result<i64, CoreError> {
    let Some(plan) = plan else {
        return Ok(0);
    };
    if !shared.directory_ready.wait(DIRECTORY_WAIT) {
        tracing::warn!(partition = %p,
            "the owners topic was not read to its end in time: restoring without knowing \
             every snapshot");
    }
    let latest = shared
        .directory
        .read()
        .ok()
        .and_then(|d| d.snapshot(p).cloned());
    let start = log.start(p)?;
    let Some(m) = latest else {
        if start > cp.next {
            return Err(CoreError::Trimmed {
                partition: p,
                start,
                have: cp.next,
            });
        }
        return Ok(0);
    };
    let must = start > cp.next;
    let worth = cp.next == 0 || m.next - cp.next > plan.every_records.max(1);
    if cp.next >= m.next || !(must || worth) {
        return Ok(m.next);
    }
    if m.next < start {
        return Err(CoreError::Trimmed {
            partition: p,
            start,
            have: m.next,
        });
    }
    let t0 = std::time::Instant::now();
    // what the store holds of the partition is about to be replaced: until the snapshot is
    // in, its checkpoint says nothing was applied (a crash midway loads it again)
    store.apply(&[CheckpointOf(p).node_write(&Checkpoint::default())], true)?;
    let cleared = store.clear(Scope::Partition(p.0))?;
    let mut apply = |writes: Vec<crate::store::Write>| {
        store.apply(&writes, false).map_err(|e| LogError::Snapshot {
            partition: p,
            why: e.to_string(),
        })
    };
    log.read_snapshot(&m, &mut apply)?;
    *cp = Checkpoint {
        next: m.next,
        fence: m.fence,
    };
    store.apply(&[CheckpointOf(p).node_write(&*cp)], true)?;
    tracing::info!(partition = %p, next = m.next, keys = m.keys, bytes = m.bytes,
        written_by = %m.broker, replaced = cleared,
        took_ms = t0.elapsed().as_millis() as u64, "restored from a snapshot");
    Ok(m.next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Records the partitions and offsets handed to it.
    #[derive(Clone, Default)]
    struct Jobs(Arc<Mutex<Vec<(PartitionId, i64)>>>);

    impl Writer for Jobs {
        fn running(&self, _: PartitionId) -> bool {
            false
        }
        fn submit(&self, job: Job) {
            self.0.lock().unwrap().push((job.partition, job.next));
        }
    }

    /// Puts of `n` bytes in all (as [`Plan::grew`] counts them) and `deletes` deletes.
    fn batch(n: usize, deletes: usize) -> Vec<crate::store::Write> {
        use crate::store::{Table, Write};
        // "meta" + "k" + value + 4
        let put = (n > 0).then(|| Write {
            table: Table::Meta,
            key: "k".into(),
            value: Some(vec![b'x'; n - 9].into()),
        });
        let delete = Write {
            table: Table::Meta,
            key: "d".into(),
            value: None,
        };
        put.into_iter()
            .chain(std::iter::repeat_n(delete, deletes))
            .collect()
    }

    #[test]
    fn by_time_a_partition_waits_to_have_grown_by_a_share_of_its_last_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let jobs = Jobs::default();
        let c = crate::config::ClusterConfig {
            snapshot_every_records: 1_000,
            snapshot_interval_ms: 60_000,
            snapshot_min_growth_percent: 50,
            ..Default::default()
        };
        let mut plan = Plan::new(Box::new(jobs.clone()), &c);
        let (p, q) = (PartitionId(0), PartitionId(1));
        let t0 = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        // taken over: p from a former owner's snapshot at offset 10 (1,000 bytes in 10 keys),
        // q without one
        plan.owned(p, 1, 10, t0);
        plan.owned(q, 1, 0, t0);
        let owned: BTreeSet<_> = [p, q].into();
        let fences = BTreeMap::new();
        let due = |plan: &mut Plan, tail: i64, next: i64, bytes: u64, at: i64| {
            let next_of = |_: PartitionId| Some(tail + 1);
            let latest = Latest {
                next,
                bytes,
                keys: 10,
            };
            let latest = |of: PartitionId| (of == p).then_some(latest);
            let now = t0 + chrono::Duration::seconds(at);
            plan.due(&owned, &next_of, &fences, &store, &latest, now);
            std::mem::take(&mut *jobs.0.lock().unwrap())
        };
        plan.grew(p, &batch(10, 0));
        assert_eq!(
            due(&mut plan, 20, 10, 1_000, 30),
            vec![],
            "not yet an interval"
        );
        // an interval: how much p grew since the former owner's snapshot is not known here,
        // so time alone decides, for it as for q, which has none
        assert_eq!(due(&mut plan, 20, 10, 1_000, 61), vec![(p, 21), (q, 21)]);
        // from p's own snapshot on, half its bytes must be appended first
        plan.grew(p, &batch(499, 0));
        assert_eq!(due(&mut plan, 21, 21, 1_000, 130), vec![(q, 22)]);
        plan.grew(p, &batch(0, 1));
        assert_eq!(
            due(&mut plan, 22, 21, 1_000, 131),
            vec![(p, 23)],
            "a delete counts as a mean entry of the snapshot (100 bytes)"
        );
        // that snapshot never announced (its writing failed): growth counts from the one before
        plan.grew(p, &batch(0, 1));
        assert_eq!(due(&mut plan, 23, 21, 1_000, 200), vec![(p, 24), (q, 24)]);
        // by count, growth does not matter
        assert_eq!(
            due(&mut plan, 1_023, 24, 1_000_000, 201),
            vec![(p, 1_024), (q, 1_024)]
        );
        // let go and taken over again: what it grew before is not counted
        plan.released(p);
        plan.owned(p, 1, 1_024, t0 + chrono::Duration::seconds(300));
        plan.grew(p, &batch(10, 0));
        assert_eq!(
            due(&mut plan, 1_030, 1_024, 10, 400),
            vec![(p, 1_031), (q, 1_031)]
        );
        assert_eq!(due(&mut plan, 1_031, 1_031, 1_000, 470), vec![(q, 1_032)]);
        // with no share asked for, any change will do
        let c = crate::config::ClusterConfig {
            snapshot_min_growth_percent: 0,
            ..c
        };
        let mut plan = Plan::new(Box::new(jobs.clone()), &c);
        plan.owned(p, 1, 10, t0);
        plan.owned(q, 1, 10, t0);
        assert_eq!(due(&mut plan, 11, 10, 1_000, 61), vec![(p, 12), (q, 12)]);
        assert_eq!(due(&mut plan, 12, 12, 1_000, 122), vec![(p, 13), (q, 13)]);
    }

    #[test]
    fn a_partition_remembers_its_latest_few_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let c = crate::config::ClusterConfig {
            snapshot_every_records: 1,
            ..Default::default()
        };
        let mut plan = Plan::new(Box::new(Jobs::default()), &c);
        let p = PartitionId(0);
        let t0 = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        plan.owned(p, 1, 0, t0);
        let owned: BTreeSet<_> = [p].into();
        // none announced: every one is remembered, up to the bound
        for tail in 0..20 {
            let next = |_: PartitionId| Some(tail + 1);
            plan.due(&owned, &next, &BTreeMap::new(), &store, &|_| None, t0);
        }
        let marks: Vec<i64> = plan.marks[&p].keys().copied().collect();
        assert_eq!(marks, (13..=20).collect::<Vec<_>>());
    }

    #[test]
    fn partitions_take_turns_over_the_interval() {
        let every = chrono::Duration::seconds(600);
        let turns: Vec<_> = (0..12)
            .map(|p| turn(PartitionId(p), 12, 50_000, every))
            .collect();
        assert_eq!(turns[0], (0, chrono::Duration::zero()));
        assert_eq!(turns[1], (4_166, chrono::Duration::seconds(50)));
        assert_eq!(turns[11], (45_833, chrono::Duration::seconds(550)));
        // evenly spread, each within one interval
        for w in turns.windows(2) {
            assert_eq!(w[1].1 - w[0].1, chrono::Duration::seconds(50));
            assert!(w[1].0 > w[0].0 && w[1].0 < 50_000);
        }
        assert_eq!(
            turn(PartitionId(3), 1, 50_000, every),
            (0, chrono::Duration::zero())
        );
    }
}
