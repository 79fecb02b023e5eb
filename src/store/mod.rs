//! The embedded, durable store (fjall, a directory under `data_dir`; chosen over redb by the
//! benchmark in `benches/store.rs`, see docs/store.md). Every consumed batch is one write
//! transaction holding instance states, index changes, timers, the outbox and the Kafka
//! offsets ([`Txn`], in `txn`), fsynced at commit; readers (the admin API) see committed
//! snapshots without blocking it ([`Snapshot`], in `snapshot`).
//!
//! Every table maps a string key to a value in MessagePack (`codec`; JSON before layout 5,
//! still read), but for the outbox's Kafka records (`broker::produced`, postcard). Keys that must sort by time or sequence carry
//! zero-padded numbers, so a range scan returns them in order. See `tables` for the layout,
//! `entry` for typed keys (each names its table and its value's type) and `timed` for
//! those of the time-keyed tables, `pending` for the
//! writes of rounds in flight, `due` for where each time-keyed table's
//! live entries start, `stats` for what each table holds on disk and in memory, `compact`
//! for dropping the tombstones of deleted keys and `readers` for the open snapshots a merge
//! waits for.

mod codec;
mod compact;
mod due;
mod entry;
mod export;
mod pending;
mod readers;
pub mod resident;
mod snapshot;
mod stats;
mod tables;
mod timed;
mod txn;

use codec::encode;
pub use codec::CodecError;
pub use compact::{spawn as spawn_compactor, Garbage, Merged, MIN_TOMBSTONES};
pub(crate) use entry::owned_key_entry;
pub use entry::Entry;
pub use export::Export;
pub use pending::Pending;
pub use snapshot::Snapshot;
pub use stats::{StoreStats, TableStats};
pub use timed::{At, Timed};
pub use txn::Txn;

pub use tables::{at, key, num, numbered, prefix_of, split_at, Table, SEP};

use fjall::{Keyspace, PartitionHandle, PersistMode};
use serde::de::DeserializeOwned;
use std::ops::Bound;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Db(Box<fjall::Error>),
    #[error("store: corrupt record in {table} at {key:?}: {source}")]
    Corrupt {
        table: &'static str,
        key: String,
        source: CodecError,
    },
    #[error("store: unreadable record in {table} at {key:?}: {why}")]
    Unreadable {
        table: &'static str,
        key: String,
        why: String,
    },
    #[error("cannot create data directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
    #[error(
        "data directory {dir} has store layout {found}, written by a newer flowbroker; this \
         broker reads layout {LAYOUT} and older: run the version that wrote it, or move the \
         directory away and start with an empty data_dir (the state partitions are restored \
         from the changelog and the snapshots)"
    )]
    Layout { dir: String, found: u32 },
}

/// The on-disk layout of the store (tables, key shapes, value encodings) this broker writes
/// and the newest it reads; kept in the store itself, a data directory of a newer layout is
/// refused at open. Layout 2 added `superseded` (`broker::active`): a broker of layout 1
/// would take keys over without marking them, so it must not open a layout 2 directory; a
/// layout 1 directory opens as it is (its partitions' `active` entries are read before they
/// are removed, for good). Layout 3 added `unpinned` (`broker::unpinned`), which a broker of
/// layout 2 would not keep up; a layout 2 directory opens as it is (the first batch of each
/// partition that holds state counts its heads: `broker::kept`). Layout 4 stores the outbox's
/// Kafka records in binary (`broker::produced`), which a broker of layout 3 would not read; a
/// layout 3 directory opens as it is (its JSON outbox values are still read). Layout 5 writes
/// values in MessagePack (`codec`), which a broker of layout 4 would not read; a layout 4
/// directory opens as it is (a value without the codec's mark is JSON and still read, and is
/// rewritten in MessagePack the next time it changes).
pub const LAYOUT: u32 = 5;

impl From<fjall::Error> for StoreError {
    fn from(e: fjall::Error) -> Self {
        StoreError::Db(Box::new(e))
    }
}

impl From<fjall::LsmError> for StoreError {
    fn from(e: fjall::LsmError) -> Self {
        StoreError::Db(Box::new(e.into()))
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The database: one fjall keyspace (a directory), one fjall partition per [`Table`].
pub struct Store {
    ks: Keyspace,
    parts: Vec<PartitionHandle>,
    /// Where the live entries of each time-keyed table start.
    due: due::Hints,
    /// Open snapshots, which a tombstone merge waits for (`readers`, `compact`).
    readers: std::sync::Arc<readers::Readers>,
    /// Bytes committed to each table (`stats`).
    written: stats::PerTable,
    /// Point lookups that reached each table (`Txn`), for `/metrics`.
    lookups: stats::PerTable,
    /// Values of [`Table::is_resident`] kept in memory as stored (`resident`).
    resident: resident::Resident,
    /// Held while a batch is stored and the values kept in memory take it in, so that two
    /// threads storing the same key cannot leave the older value there.
    storing: std::sync::Mutex<()>,
}

/// Which keys a transaction sees and writes: the whole store, or the keys of one state
/// partition (every key then starts with the partition's prefix, see [`scope_prefix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Node,
    Partition(u16),
}

/// The key prefix of a scope: empty for the node, `pNNNN SEP` for a state partition.
pub fn scope_prefix(scope: Scope) -> String {
    match scope {
        Scope::Node => String::new(),
        Scope::Partition(p) => format!("p{p:04}{SEP}"),
    }
}

/// One change a transaction made: the table, the full key (with its scope prefix) and the
/// new value (`None`: deleted). A committed transaction's writes, in key order, are what the
/// changelog carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub table: Table,
    pub key: String,
    /// Shared, not copied, between the round's changelog record, its pending writes and the
    /// store.
    pub value: Option<bytes::Bytes>,
}

/// Reads the store's layout version (absent: a store from before it was kept, layout 1),
/// refuses a newer one, and records this broker's.
fn check_layout(ks: &Keyspace, path: &Path) -> Result<()> {
    let meta = ks.open_partition("layout", Default::default())?;
    let found = match meta.get("version")? {
        Some(v) => std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(u32::MAX),
        None => 1,
    };
    if found > LAYOUT {
        return Err(StoreError::Layout {
            dir: path.display().to_string(),
            found,
        });
    }
    if found != LAYOUT || meta.get("version")?.is_none() {
        meta.insert("version", LAYOUT.to_string())?;
        ks.persist(fjall::PersistMode::SyncAll)?;
    }
    Ok(())
}

/// How a table is created (a data directory that has the table keeps the options it was
/// created with).
fn table_options(t: Table) -> fjall::PartitionCreateOptions {
    let mut o = fjall::PartitionCreateOptions::default();
    if t.scanned() {
        o = o.bloom_filter_bits(None);
    }
    if t.read_at_random() {
        o = o.block_size(INDEX_BLOCK);
        o.data_block_size = DATA_BLOCK;
    }
    o
}

/// The data block size of the tables read at random ([`Table::read_at_random`]; fjall's
/// default, 4 KiB, for the rest): a read that misses the cache decodes one block. Smaller
/// blocks make that cheaper but the block index larger (an entry per block), and with a
/// million instances the index no longer stays in the cache (docs/store.md "Memory").
const DATA_BLOCK: u32 = 2048;

/// The index block size of the tables read at random: a read that misses the cache loads
/// one index block besides its data block.
const INDEX_BLOCK: u32 = 1024;

/// What the store keeps in memory at most, in bytes (`[store]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// fjall's memtables over every table, before a flush to disk.
    pub write_buffer: u64,
    /// fjall's block cache.
    pub cache: u64,
    /// Values of resident tables kept in memory (`resident`): the records of instances that
    /// wait.
    pub resident: u64,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            write_buffer: 32 << 20,
            cache: 32 << 20,
            resident: 0,
        }
    }
}

impl Store {
    /// Opens (or creates) the store directory and every table, with the default [`Memory`].
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_with(path, Memory::default())
    }

    /// Opens (or creates) the store directory and every table.
    pub fn open_with(path: &Path, memory: Memory) -> Result<Store> {
        std::fs::create_dir_all(path).map_err(|source| StoreError::Dir {
            dir: path.display().to_string(),
            source,
        })?;
        // Durability is ours to decide: a commit says whether it waits for the disk.
        let ks = fjall::Config::new(path)
            .manual_journal_persist(true)
            .max_write_buffer_size(memory.write_buffer)
            .cache_size(memory.cache)
            .open()?;
        let parts = Table::ALL
            .iter()
            .map(|t| ks.open_partition(t.name(), table_options(*t)))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        check_layout(&ks, path)?;
        Ok(Store {
            ks,
            parts,
            due: Default::default(),
            readers: Default::default(),
            written: Default::default(),
            lookups: Default::default(),
            resident: resident::Resident::new(memory.resident as usize),
            storing: Default::default(),
        })
    }

    /// A transaction over the whole store.
    pub fn write(&self) -> Result<Txn<'_>> {
        Ok(self.scoped(Scope::Node))
    }

    /// A transaction over one scope. Reads see committed data plus the transaction's own
    /// writes; nothing is visible to others until [`Txn::commit`]. One writer per scope.
    pub fn scoped(&self, scope: Scope) -> Txn<'_> {
        Txn::new(self, None, scope_prefix(scope))
    }

    /// [`Store::scoped`], reading through `pending` writes not in the store yet (rounds whose
    /// changelog append is on its way).
    pub fn scoped_over<'s>(&'s self, scope: Scope, pending: &'s Pending) -> Txn<'s> {
        Txn::new(self, Some(pending), scope_prefix(scope))
    }

    /// A consistent view of the whole store as of now (waits while tombstones are being
    /// merged away: `compact`).
    pub fn read(&self) -> Result<Snapshot<'_>> {
        Ok(self.snapshot(self.readers.enter()))
    }

    /// The same view at once, or `None` while a merge runs or waits for snapshots to close
    /// (for callers that must not block a thread others share: `http::snapshot`, which then
    /// opens one with [`Store::read`] where waiting is harmless).
    pub fn try_read(&self) -> Option<Snapshot<'_>> {
        Some(self.snapshot(self.readers.try_enter()?))
    }

    /// Every table as of now, counted in `reading` until dropped.
    fn snapshot(&self, reading: readers::Reading) -> Snapshot<'_> {
        let at = self.ks.instant();
        let snaps = self.parts.iter().map(|p| p.snapshot_at(at)).collect();
        Snapshot::new(self, snaps, reading)
    }

    /// Holds the store's readers as a merge does, for tests of those who wait for one.
    #[cfg(test)]
    pub(crate) fn merging(&self) -> readers::Exclusive<'_> {
        self.readers
            .exclusive(std::time::Duration::from_secs(30))
            .expect("no snapshot open")
    }

    /// Applies writes made elsewhere (a changelog batch being restored) in one atomic step.
    pub fn apply(&self, writes: &[Write], sync: bool) -> Result<()> {
        let resident = self.resident.is_enabled() && writes.iter().any(|w| w.table.is_resident());
        let storing = resident.then(|| self.storing.lock().unwrap_or_else(|e| e.into_inner()));
        // (the keyspace persists its journal by hand, so a batch needs no durability of its
        // own: `Keyspace::batch` would set none either, only without the capacity)
        let mut batch = fjall::Batch::with_capacity(self.ks.clone(), writes.len());
        let mut bytes = [0usize; Table::ALL.len()];
        for w in writes {
            let part = self.part(w.table);
            bytes[w.table as usize] += w.key.len();
            match &w.value {
                Some(v) => {
                    bytes[w.table as usize] += v.len();
                    batch.insert(part, w.key.as_bytes(), &v[..])
                }
                None => batch.remove(part, w.key.as_bytes()),
            }
        }
        batch.commit()?;
        if resident {
            for w in writes.iter().filter(|w| w.table.is_resident()) {
                self.resident.stored(&w.key, w.value.as_deref());
            }
        }
        drop(storing);
        self.written.add_all(&bytes);
        let mode = if sync {
            PersistMode::SyncAll
        } else {
            PersistMode::Buffer
        };
        self.ks.persist(mode)?;
        Ok(())
    }

    /// Forgets where the time-keyed tables of `scope` start (its partition changed hands:
    /// what is stored now did not all come through this broker's transactions).
    pub fn forget_due(&self, scope: Scope) {
        self.due.forget(&scope_prefix(scope));
    }

    /// Stops keeping `scope`'s values in memory (its partition changed hands: what is
    /// stored next may come from elsewhere; `resident`).
    pub fn forget_resident(&self, scope: Scope) {
        let _storing = self.storing.lock().unwrap_or_else(|e| e.into_inner());
        self.resident.forget_prefix(&scope_prefix(scope));
    }

    /// What the store keeps of resident values now (`/metrics`).
    pub fn resident(&self) -> resident::Held {
        self.resident.held()
    }

    fn part(&self, t: Table) -> &PartitionHandle {
        &self.parts[t as usize]
    }

    /// Table `t`, for a point lookup of one key: counted (`stats`).
    fn lookup(&self, t: Table) -> &PartitionHandle {
        self.lookups.add(t, 1);
        self.part(t)
    }
}

fn decode<T: DeserializeOwned>(table: Table, key: &str, bytes: &[u8]) -> Result<T> {
    codec::decode(bytes).map_err(|source| StoreError::Corrupt {
        table: table.name(),
        key: key.to_string(),
        source,
    })
}

fn collect<T: DeserializeOwned, E: Into<StoreError>>(
    table: Table,
    iter: impl Iterator<Item = std::result::Result<fjall::KvPair, E>>,
    stop: impl Fn(&str) -> bool,
    limit: usize,
) -> Result<Vec<(String, T)>> {
    let mut out = Vec::new();
    for kv in iter {
        let (k, v) = kv.map_err(Into::into)?;
        let key = String::from_utf8_lossy(&k).to_string();
        if stop(&key) || out.len() >= limit {
            break;
        }
        let value = decode(table, &key, &v)?;
        out.push((key, value));
    }
    Ok(out)
}

/// The first key after every key that starts with `prefix` (for a range over a prefix).
fn prefix_end(prefix: &str) -> Bound<String> {
    let mut s = prefix.to_string();
    while let Some(c) = s.pop() {
        if let Some(next) = char::from_u32(c as u32 + 1) {
            s.push(next);
            return Bound::Excluded(s);
        }
    }
    Bound::Unbounded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_of_a_newer_layout_is_refused_and_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        // the layout is recorded, and an older or equal one opens again
        drop(Store::open(dir.path()).unwrap());
        {
            let ks = fjall::Config::new(dir.path()).open().unwrap();
            let meta = ks.open_partition("layout", Default::default()).unwrap();
            assert_eq!(
                meta.get("version").unwrap().as_deref(),
                Some(LAYOUT.to_string().as_bytes())
            );
            // a layout 1 directory (before `superseded`) opens and is recorded as this one's
            meta.insert("version", "1").unwrap();
            ks.persist(fjall::PersistMode::SyncAll).unwrap();
        }
        drop(Store::open(dir.path()).unwrap());
        {
            let ks = fjall::Config::new(dir.path()).open().unwrap();
            let meta = ks.open_partition("layout", Default::default()).unwrap();
            assert_eq!(
                meta.get("version").unwrap().as_deref(),
                Some(LAYOUT.to_string().as_bytes())
            );
            meta.insert("version", (LAYOUT + 1).to_string()).unwrap();
            ks.persist(fjall::PersistMode::SyncAll).unwrap();
        }
        let e = Store::open(dir.path())
            .err()
            .expect("a newer layout is refused");
        let text = e.to_string();
        assert!(matches!(e, StoreError::Layout { found, .. } if found == LAYOUT + 1));
        assert!(text.contains("empty data_dir"), "{text}");
    }

    #[test]
    fn json_values_of_an_older_layout_are_read_and_rewritten_in_messagepack() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let tx = store.write().unwrap();
            // what a broker of layout 4 wrote
            tx.put_bytes(Table::Instances, "i", br#"{"z":1,"a":[1.5,"x"]}"#.to_vec())
                .unwrap();
            tx.put_bytes(Table::Meta, "n", b"48".to_vec()).unwrap();
            tx.commit().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let tx = store.write().unwrap();
        let v: serde_json::Value = tx.get(Table::Instances, "i").unwrap().unwrap();
        assert_eq!(v.to_string(), r#"{"z":1,"a":[1.5,"x"]}"#, "order kept");
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), Some(48));
        tx.put(Table::Meta, "n", &49).unwrap();
        tx.commit().unwrap();
        let tx = store.write().unwrap();
        let raw = tx
            .get_raw(Table::Meta, "n", <[u8]>::to_vec)
            .unwrap()
            .unwrap();
        assert_eq!(raw, [codec::MARK, 49]);
        assert_eq!(tx.get::<i64>(Table::Meta, "n").unwrap(), Some(49));
    }

    #[test]
    fn every_float_reads_back_as_written() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut floats = vec![
            0.09144338512092887,
            0.1 + 0.2,
            1e-300,
            5e-324,
            f64::MAX,
            -0.0,
        ];
        for _ in 0..20_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let f = f64::from_bits(seed);
            if f.is_finite() {
                floats.push(f);
            }
            floats.push((seed >> 11) as f64 / (1u64 << 53) as f64);
        }
        for f in floats {
            let bytes = encode(&serde_json::json!({ "x": f }));
            let back: serde_json::Value = decode(Table::Instances, "k", &bytes).unwrap();
            let got = back["x"].as_f64().unwrap();
            assert_eq!(got.to_bits(), f.to_bits(), "{f:e} read back as {got:e}");
        }
    }
}
