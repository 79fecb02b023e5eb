//! A state partition's keys as of one moment, read off the store in chunks (a snapshot being
//! written, `kafka::snapshots`), and dropping a partition's keys (before one is loaded).

use super::{scope_prefix, Result, Scope, Store, Table, Write};

/// Every key of one scope as of the moment [`Store::export`] was called; owned, so another
/// thread can read it while the store goes on.
pub struct Export {
    prefix: String,
    snaps: Vec<(Table, fjall::Snapshot)>,
    _reading: super::readers::Reading,
}

impl Store {
    /// The keys of `scope` as of now (nothing is read until [`Export::chunks`]); `None` while
    /// tombstones are being merged away (`compact`): try again later.
    pub fn export(&self, scope: Scope) -> Option<Export> {
        let reading = self.readers.try_enter()?;
        let at = self.ks.instant();
        Some(Export {
            prefix: scope_prefix(scope),
            snaps: Table::ALL
                .iter()
                .map(|t| (*t, self.part(*t).snapshot_at(at)))
                .collect(),
            _reading: reading,
        })
    }

    /// Deletes every key of `scope`, in batches (not atomic: callers mark the scope as being
    /// replaced first).
    pub fn clear(&self, scope: Scope) -> Result<u64> {
        // before as well as after: a clear that fails part way leaves nothing kept in memory
        self.forget_resident(scope);
        let prefix = scope_prefix(scope);
        let mut n = 0;
        for t in Table::ALL {
            let keys: Vec<Vec<u8>> = self
                .part(t)
                .prefix(&prefix)
                .map(|kv| kv.map(|(k, _)| k.to_vec()))
                .collect::<std::result::Result<_, _>>()?;
            for run in keys.chunks(10_000) {
                let mut batch = self.ks.batch();
                for k in run {
                    batch.remove(self.part(t), k.as_slice());
                }
                batch.commit()?;
                self.written.add(t, run.iter().map(Vec::len).sum());
                n += run.len() as u64;
            }
        }
        self.forget_resident(scope);
        Ok(n)
    }
}

impl Export {
    /// The keys in runs of at most `max_bytes` (keys and values), table by table in key order;
    /// an entry larger than that alone is a run of its own.
    pub fn chunks(&self, max_bytes: usize) -> impl Iterator<Item = Result<Vec<Write>>> + '_ {
        let entries = self.snaps.iter().flat_map(move |(t, snap)| {
            snap.prefix(&self.prefix).map(move |kv| {
                let (k, v) = kv?;
                Ok(Write {
                    table: *t,
                    key: String::from_utf8_lossy(&k).into_owned(),
                    value: Some(bytes::Bytes::copy_from_slice(&v)),
                })
            })
        });
        let size = |w: &Write| w.key.len() + w.value.as_ref().map_or(0, bytes::Bytes::len);
        let mut entries = entries.peekable();
        std::iter::from_fn(move || {
            let mut run = Vec::new();
            let mut bytes = 0;
            // a chunk ends before an entry that would take it over `max_bytes`: only an
            // entry larger than that alone makes a larger chunk, of that entry alone
            while let Some(next) = entries.peek() {
                if let Ok(w) = next {
                    if !run.is_empty() && bytes + size(w) > max_bytes {
                        break;
                    }
                }
                match entries.next().expect("peeked") {
                    Ok(w) => {
                        bytes += size(&w);
                        run.push(w);
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            (!run.is_empty()).then_some(Ok(run))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_sees_one_moment_and_clear_drops_only_its_scope() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        for i in 0..50 {
            tx.put(Table::Instances, &format!("i{i:02}"), &i).unwrap();
        }
        tx.put(Table::Timers, "t", &"x").unwrap();
        tx.commit().unwrap();
        let other = store.scoped(Scope::Partition(2));
        other.put(Table::Instances, "j", &0).unwrap();
        other.commit().unwrap();

        let export = store.export(Scope::Partition(1)).unwrap();
        // written after the export: not in it
        let tx = store.scoped(Scope::Partition(1));
        tx.put(Table::Instances, "late", &1).unwrap();
        tx.commit().unwrap();
        let chunks: Vec<Vec<Write>> = export.chunks(64).collect::<Result<_>>().unwrap();
        assert!(chunks.len() > 1, "split into runs");
        let all: Vec<Write> = chunks.into_iter().flatten().collect();
        assert_eq!(all.len(), 51);
        assert!(all.iter().all(|w| w.key.starts_with("p0001")));
        assert!(!all.iter().any(|w| w.key.ends_with("late")));

        assert_eq!(store.clear(Scope::Partition(1)).unwrap(), 52);
        let r = store.read().unwrap();
        assert_eq!(r.len_in(Scope::Partition(1), Table::Instances).unwrap(), 0);
        assert_eq!(r.len_in(Scope::Partition(2), Table::Instances).unwrap(), 1);
    }

    /// A chunk stops before an entry that would take it over the limit (a snapshot chunk is a
    /// Kafka record: one over the producer's limit was refused at every try).
    #[test]
    fn a_run_stays_under_the_limit_unless_one_entry_is_larger() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tx = store.scoped(Scope::Partition(1));
        for (k, n) in [("a", 600), ("b", 600), ("c", 1500), ("d", 10), ("e", 10)] {
            tx.put_bytes(Table::Instances, k, vec![b'x'; n]).unwrap();
        }
        tx.commit().unwrap();
        let export = store.export(Scope::Partition(1)).unwrap();
        let chunks: Vec<Vec<Write>> = export.chunks(1000).collect::<Result<_>>().unwrap();
        let sizes: Vec<Vec<usize>> = chunks
            .iter()
            .map(|c| c.iter().map(|w| w.value.as_ref().unwrap().len()).collect())
            .collect();
        assert_eq!(sizes, vec![vec![600], vec![600], vec![1500], vec![10, 10]]);
    }
}
