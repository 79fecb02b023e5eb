//! The store-kept gauges `/metrics` appends: instances by status and the sizes of the small
//! tables (outbox, buffer, calls in flight), per state partition this broker owns. A
//! partition's series come from its owner only (a store keeps the keys of partitions it owned
//! before), so summing over the cluster's brokers counts every partition once; while a
//! tombstone merge keeps the store's snapshots closed, as a scrape last read them
//! ([`LastScrape`]). Then the store's own figures for this broker: segments, bytes on disk
//! and in memory per table, and the bytes committed to each. Then, from the cluster's
//! directory, the latest snapshot announced of each owned partition.

use super::counters::Counter;
use crate::cluster::directory::Directory;
use crate::cluster::partition::PartitionId;
use crate::engine::Status;
use crate::store::{Entry as _, Scope, Snapshot, Store, StoreError, Table};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The store-kept gauges a scrape last read, and for which partitions: served while the
/// store's snapshots are closed for a tombstone merge (`store::compact`), which on a large
/// table can take longer than a scrape may wait.
#[derive(Debug, Default)]
pub struct LastScrape(std::sync::Mutex<Option<(Vec<PartitionId>, String)>>);

impl LastScrape {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Vec<PartitionId>, String)>> {
        // (it guards a copy of text: a panic elsewhere leaves it whole)
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The gauges for `/metrics`: the store-kept ones, one series per owned partition, read from
/// a snapshot of the store; then the store's own figures, read now. While a merge keeps
/// snapshots closed (or waits for open ones to close), the store-kept ones are as `last` read
/// them if the broker owned the same partitions then; otherwise this waits for the merge.
/// `held` says how many outbox entries a partition holds in memory (`broker::young`).
pub fn gauges(
    store: &Store,
    owned: &[PartitionId],
    held: &dyn Fn(PartitionId) -> usize,
    last: &LastScrape,
) -> Result<String, StoreError> {
    let fresh = |tx: &Snapshot<'_>| -> Result<String, StoreError> {
        let text = kept_gauges(tx, owned, held)?;
        *last.lock() = Some((owned.to_vec(), text.clone()));
        Ok(text)
    };
    let mut s = match store.try_read() {
        Some(tx) => fresh(&tx)?,
        None => {
            let kept = last
                .lock()
                .as_ref()
                .filter(|(then, _)| then == owned)
                .map(|(_, t)| t.clone());
            match kept {
                Some(text) => text,
                None => fresh(&store.read()?)?,
            }
        }
    };
    store_figures(store, &mut s);
    Ok(s)
}

/// One gauge family: its help and type lines, then a line per labelled value.
fn gauge_family(s: &mut String, name: &str, help: &str, rows: Vec<(String, i64)>) {
    let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge");
    for (labels, n) in rows {
        if labels.is_empty() {
            let _ = writeln!(s, "{name} {n}");
        } else {
            let _ = writeln!(s, "{name}{{{labels}}} {n}");
        }
    }
}

/// The gauges kept in the store, read from snapshot `tx`: instances by status and the sizes
/// of the small tables (outbox, buffer, calls in flight), per partition in `owned`.
fn kept_gauges(
    tx: &Snapshot<'_>,
    owned: &[PartitionId],
    held: &dyn Fn(PartitionId) -> usize,
) -> Result<String, StoreError> {
    let mut counters: BTreeMap<(u16, String), i64> = BTreeMap::new();
    for (p, k, v) in tx.partitioned::<serde_json::Value>(Table::Meta)? {
        if let (Some(p), Some(n)) = (p, v.as_i64()) {
            *counters.entry((p, k)).or_default() += n;
        }
    }
    let counter = |p: PartitionId, c: Counter| {
        counters
            .get(&(p.0, c.key().into_owned()))
            .copied()
            .unwrap_or(0)
    };
    let mut s = String::new();
    let mut family =
        |name: &str, help: &str, rows: Vec<(String, i64)>| gauge_family(&mut s, name, help, rows);
    let mut rows = Vec::new();
    for &p in owned {
        for st in Status::ALL {
            let name = st.as_str();
            let n = counter(p, Counter::Status(st));
            rows.push((format!("partition=\"{p}\",status=\"{name}\""), n));
        }
    }
    family(
        "flowbroker_instances",
        "Instances by state partition and status.",
        rows,
    );
    let per = |f: &dyn Fn(PartitionId) -> Result<i64, StoreError>| {
        owned
            .iter()
            .map(|&p| Ok((format!("partition=\"{p}\""), f(p)?)))
            .collect::<Result<Vec<_>, StoreError>>()
    };
    family(
        "flowbroker_outbox_pending",
        "Events committed but not yet acknowledged by Kafka.",
        per(&|p| Ok((tx.len_in(Scope::Partition(p.0), Table::Outbox)? + held(p) as u64) as i64))?,
    );
    family(
        "flowbroker_buffered_events",
        "Early events waiting for their instance (or held for their key).",
        per(&|p| Ok(counter(p, Counter::Buffered)))?,
    );
    family(
        "flowbroker_dedupe_entries",
        "Event ids remembered for duplicate detection (dedupe_window).",
        per(&|p| Ok(counter(p, Counter::Seen)))?,
    );
    family(
        "flowbroker_function_calls_in_flight",
        "Function calls not yet answered.",
        per(&|p| Ok(tx.len_in(Scope::Partition(p.0), Table::Calls)? as i64))?,
    );
    family(
        "flowbroker_state_partitions_owned",
        "State partitions this broker owns.",
        vec![(String::new(), owned.len() as i64)],
    );
    Ok(s)
}

/// The store's own figures, as it counts them now: files, bytes and memory per table, the
/// records kept in memory, and what was written, flushed and looked up.
fn store_figures(store: &Store, s: &mut String) {
    let mut family =
        |name: &str, help: &str, rows: Vec<(String, i64)>| gauge_family(s, name, help, rows);
    let stats = store.stats();
    type Figure = fn(&crate::store::TableStats) -> i64;
    let tables: [(&str, &str, Figure); 4] = [
        (
            "flowbroker_store_segments",
            "Sorted files of the embedded store on disk, by table.",
            |t| t.segments as i64,
        ),
        (
            "flowbroker_store_disk_bytes",
            "Bytes of the embedded store's files on disk, by table.",
            |t| t.disk_bytes as i64,
        ),
        (
            "flowbroker_store_filter_bytes",
            "Bytes of bloom filters the embedded store keeps in memory for its files, by table.",
            |t| t.filter_bytes as i64,
        ),
        (
            "flowbroker_store_tombstones",
            "Tombstones (deletes) still in the embedded store's files, by table; merged away as they pile up.",
            |t| t.tombstones as i64,
        ),
    ];
    for (name, help, figure) in tables {
        let rows = stats
            .tables
            .iter()
            .map(|t| (format!("table=\"{}\"", t.table.name()), figure(t)))
            .collect();
        family(name, help, rows);
    }
    family(
        "flowbroker_store_write_buffer_bytes",
        "Writes held in the store's memtables, not flushed to files yet (store.write_buffer_mib).",
        vec![(String::new(), stats.write_buffer_bytes as i64)],
    );
    family(
        "flowbroker_store_journals",
        "Journal files of the embedded store (writes not flushed to its files yet).",
        vec![(String::new(), stats.journals as i64)],
    );
    let resident = store.resident();
    family(
        "flowbroker_store_resident_entries",
        "Records of waiting instances the store keeps in memory as stored (store.resident_mib).",
        vec![(String::new(), resident.entries as i64)],
    );
    family(
        "flowbroker_store_resident_bytes",
        "Bytes those records take, keys and bookkeeping included, against store.resident_mib.",
        vec![(String::new(), resident.bytes as i64)],
    );
    type Count = fn(&crate::store::TableStats) -> u64;
    let counters: [(&str, &str, Count); 3] = [
        (
            "flowbroker_store_written_bytes_total",
            "Bytes of keys and values committed to the embedded store since the broker started, by table (a delete counts its key; flushes and merges not counted).",
            |t| t.written,
        ),
        (
            "flowbroker_store_flushes_total",
            "Memtable flushes of the embedded store since the broker started, by table: each writes a file to the table's first level, and every few bring a merge.",
            |t| t.flushes,
        ),
        (
            "flowbroker_store_lookups_total",
            "Point lookups of a key that reached the embedded store since the broker started, by table: keys neither the broker's own writes in flight nor the records kept in memory held, looked up in the store's memtables and files (scans not counted).",
            |t| t.lookups,
        ),
    ];
    for (name, help, count) in counters {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter");
        for t in &stats.tables {
            let _ = writeln!(s, "{name}{{table=\"{}\"}} {}", t.table.name(), count(t));
        }
    }
}

/// The latest snapshot announced (on the owners topic, as this broker has read it so far) of
/// each partition in `owned` that has one: the changelog offset it stands for, and its bytes.
pub fn latest_snapshots(directory: &std::sync::RwLock<Directory>, owned: &[PartitionId]) -> String {
    let rows: Vec<(PartitionId, i64, u64)> = match directory.read() {
        Ok(d) => owned
            .iter()
            .filter_map(|&p| d.snapshot(p).map(|m| (p, m.next, m.bytes)))
            .collect(),
        Err(_) => vec![],
    };
    let mut s = String::new();
    let mut family = |name: &str, help: &str, values: Vec<(PartitionId, String)>| {
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (p, v) in values {
            let _ = writeln!(s, "{name}{{partition=\"{p}\"}} {v}");
        }
    };
    family(
        "flowbroker_snapshot_offset",
        "The changelog offset the latest snapshot announced of an owned state partition stands for (restores read the changelog from there).",
        rows.iter().map(|r| (r.0, r.1.to_string())).collect(),
    );
    family(
        "flowbroker_snapshot_bytes",
        "Bytes of keys and values in the latest snapshot announced of an owned state partition.",
        rows.iter().map(|r| (r.0, r.2.to_string())).collect(),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Write;
    use std::sync::Arc;
    use std::time::Duration;

    /// The value of the series starting `series ` in `text`.
    fn value(text: &str, series: &str) -> u64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{series} ")));
        let line = line.unwrap_or_else(|| panic!("no {series} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    /// Reads the gauges on a thread of its own (so a read that waits fails the test instead of
    /// hanging it), with `held` entries in memory per partition.
    fn scrape(
        store: &Arc<Store>,
        owned: &[PartitionId],
        held: usize,
        last: &Arc<LastScrape>,
    ) -> String {
        let (store, owned, last) = (store.clone(), owned.to_vec(), last.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(gauges(&store, &owned, &move |_| held, &last)));
        let got = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("answered at once");
        got.unwrap()
    }

    #[test]
    fn a_merge_gets_the_gauges_last_read_at_once_and_the_store_figures_now() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let last = Arc::new(LastScrape::default());
        let (p0, p1) = (PartitionId(0), PartitionId(1));
        let pending = |p: PartitionId| format!("flowbroker_outbox_pending{{partition=\"{p}\"}}");
        let written = "flowbroker_store_written_bytes_total{table=\"meta\"}";
        let write = |key: &str| {
            let value = Some(bytes::Bytes::from_static(b"1"));
            let w = Write {
                table: Table::Meta,
                key: key.into(),
                value,
            };
            store.apply(&[w], false).unwrap();
        };
        let first = scrape(&store, &[p0], 7, &last);
        assert_eq!(value(&first, &pending(p0)), 7);
        write("a");
        {
            let _merge = store.merging();
            let during = scrape(&store, &[p0], 9, &last);
            assert_eq!(value(&during, &pending(p0)), 7, "as last read: {during}");
            assert!(
                value(&during, written) > value(&first, written),
                "the store's own figures read now: {during}"
            );
        }
        let after = scrape(&store, &[p0], 9, &last);
        assert_eq!(value(&after, &pending(p0)), 9, "read again once merged");
        // what is kept is the latest read, and only for the partitions it was read for
        let _merge = store.merging();
        let during = scrape(&store, &[p0], 11, &last);
        assert_eq!(value(&during, &pending(p0)), 9, "the latest read: {during}");
        // owning another partition now: what was kept does not say, so it waits for the merge
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, l) = (store.clone(), last.clone());
        std::thread::spawn(move || tx.send(gauges(&s, &[p0, p1], &|_| 0, &l)));
        // (a read that served what was kept would answer at once; a correct one waits for as
        // long as the merge holds, so no wait here can make it fail)
        let early = rx.recv_timeout(Duration::from_millis(500));
        assert!(early.is_err(), "answered during the merge: {early:?}");
        drop(_merge);
        let now = rx.recv_timeout(Duration::from_secs(30)).expect("answered");
        let now = now.unwrap();
        assert_eq!(
            value(&now, &pending(p1)),
            0,
            "read for both partitions: {now}"
        );
    }
}
