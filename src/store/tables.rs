//! The store's tables. Keys join their parts with [`SEP`] (`\u{1f}`, never in ids or names).

/// Separator of key parts.
pub const SEP: char = '\u{1f}';

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(usize)]
pub enum Table {
    /// instance id -> `InstanceRecord`.
    Instances,
    /// `instance SEP seq(20)` -> history entry (input and decisions).
    History,
    /// `instance SEP seq(20) SEP n(20)` -> a payload of a history entry, kept beside it
    /// (`broker::history`).
    Payloads,
    /// `workflow SEP event SEP key` -> instance id: the active instance per correlation key.
    Active,
    /// `workflow SEP event SEP waits key SEP instance` -> (): instances waiting for an event;
    /// `*` in the key for values not pinned yet, then the expression guard
    /// (`broker::index`).
    Waits,
    /// `instance SEP seq(20)` -> buffered event with its expiry.
    Buffer,
    /// `workflow SEP key` -> pending all-events start.
    Joins,
    /// `due_ms(20) SEP timer id` -> timer entry.
    Timers,
    /// timer id -> its key in `Timers`.
    TimerIds,
    /// `seq(20)` -> record to produce.
    Outbox,
    /// idempotency key -> function call in flight.
    Calls,
    /// `topic SEP partition` -> next offset to consume.
    Offsets,
    /// name -> counter.
    Meta,
    /// `workflow SEP version` -> deployed source.
    Versions,
    /// workflow id -> schedule state (last fired tick).
    Schedules,
    /// `source SEP id` of a consumed event -> when it stops counting as a duplicate.
    Seen,
    /// `expires_ms(20) SEP source SEP id` -> (): `Seen` by expiry, for sweeping.
    SeenExpiry,
    /// `finished_ms(20) SEP instance` -> (): finished instances, for retention.
    Finished,
    /// `expires_ms(20) SEP buffer key` -> (): `Buffer` by expiry, for sweeping.
    BufferExpiry,
    /// `active key SEP instance` -> (): an instance whose `Active` entry another instance
    /// took over, until it ends (`broker::active`).
    Superseded,
    /// `workflow SEP event SEP waits key` -> the number of `Waits` entries under a key with a
    /// value not pinned yet, while there are any (`broker::unpinned`).
    Unpinned,
}

impl Table {
    pub const ALL: [Table; 21] = [
        Table::Instances,
        Table::History,
        Table::Payloads,
        Table::Active,
        Table::Waits,
        Table::Buffer,
        Table::Joins,
        Table::Timers,
        Table::TimerIds,
        Table::Outbox,
        Table::Calls,
        Table::Offsets,
        Table::Meta,
        Table::Versions,
        Table::Schedules,
        Table::Seen,
        Table::SeenExpiry,
        Table::Finished,
        Table::BufferExpiry,
        Table::Superseded,
        Table::Unpinned,
    ];

    /// The table of a [`Table::name`].
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Table::Instances => "instances",
            Table::History => "history",
            Table::Payloads => "payloads",
            Table::Active => "active",
            Table::Waits => "waits",
            Table::Buffer => "buffer",
            Table::Joins => "joins",
            Table::Timers => "timers",
            Table::TimerIds => "timer_ids",
            Table::Outbox => "outbox",
            Table::Calls => "calls",
            Table::Offsets => "offsets",
            Table::Meta => "meta",
            Table::Versions => "versions",
            Table::Schedules => "schedules",
            Table::Seen => "seen",
            Table::SeenExpiry => "seen_expiry",
            Table::Finished => "finished",
            Table::BufferExpiry => "buffer_expiry",
            Table::Superseded => "superseded",
            Table::Unpinned => "unpinned",
        }
    }

    /// Keyed by [`at`] and drained oldest first with [`crate::store::Txn::take_due`].
    pub fn time_keyed(self) -> bool {
        matches!(
            self,
            Table::Timers | Table::SeenExpiry | Table::Finished | Table::BufferExpiry
        )
    }

    /// Read in key order (scans from a prefix or the oldest first) or by keys known to be
    /// there, never to ask whether a key exists: the store keeps no bloom filters for these
    /// (a filter answers only that question, and fjall holds every file's filter in memory).
    pub fn scanned(self) -> bool {
        self.time_keyed() || matches!(self, Table::Outbox | Table::Waits)
    }

    /// Read at random, a key at a time or the few entries under a key's prefix (`waits`: an
    /// event's waiting instances), over a table that grows with the instances or events
    /// kept: reading one entry from disk decodes its whole block, so these have small blocks.
    pub fn read_at_random(self) -> bool {
        matches!(
            self,
            Table::Instances | Table::Active | Table::Seen | Table::Waits
        )
    }

    /// Its values may be kept in memory as stored, for the keys a transaction marks
    /// (`store::resident`): the records of instances that wait, each read when its next event
    /// comes.
    pub fn is_resident(self) -> bool {
        self == Table::Instances
    }
}

/// Joins key parts.
pub fn key(parts: &[&str]) -> String {
    let len = parts.iter().map(|p| p.len()).sum::<usize>() + parts.len();
    let mut k = String::with_capacity(len);
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            k.push(SEP);
        }
        k.push_str(part);
    }
    k
}

/// `key` followed by [`SEP`]: the prefix of every key that starts with `key`'s parts, with
/// room for a [`num`] after it.
pub fn prefix_of(key: &str) -> String {
    let mut k = String::with_capacity(key.len() + 21);
    k.push_str(key);
    k.push(SEP);
    k
}

/// A number as a key part that sorts numerically: 20 digits, zero-padded (every `u64` fits).
pub fn num(n: u64) -> String {
    let mut k = String::with_capacity(20);
    push_num(&mut k, n);
    k
}

/// `prefix` (a [`prefix_of`] or any key part) with [`num`]`(n)` after it: the key of the
/// `n`th entry under it, built in the prefix's own string.
pub fn numbered(mut prefix: String, n: u64) -> String {
    push_num(&mut prefix, n);
    prefix
}

/// Appends [`num`]`(n)` to `k` (store keys are built on every input: no formatting
/// machinery, no intermediate string).
fn push_num(k: &mut String, mut n: u64) {
    let mut digits = [b'0'; 20];
    for d in digits.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    k.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
}

/// A key that sorts by time: `ms(20) SEP rest`. Tables keyed this way are expiry or due-time
/// indexes, read with [`crate::store::Txn::take_due`].
pub fn at(t: chrono::DateTime<chrono::Utc>, rest: &str) -> String {
    let mut k = String::with_capacity(21 + rest.len());
    push_num(&mut k, t.timestamp_millis().max(0) as u64);
    k.push(SEP);
    k.push_str(rest);
    k
}

/// The time and the rest of a key made by [`at`].
pub fn split_at(k: &str) -> Option<(chrono::DateTime<chrono::Utc>, &str)> {
    let (ms, rest) = k.split_once(SEP)?;
    Some((
        chrono::DateTime::from_timestamp_millis(ms.parse().ok()?)?,
        rest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_twenty_digits_that_sort_as_numbers() {
        for n in [0, 7, 10, 99, 1_000_000, u64::MAX / 3, u64::MAX] {
            assert_eq!(num(n), format!("{n:020}"));
        }
        let mut keys: Vec<String> = [12, 3, 100, 0, u64::MAX].map(num).to_vec();
        keys.sort();
        assert_eq!(keys, [0, 3, 12, 100, u64::MAX].map(num).to_vec());
    }

    #[test]
    fn keys_join_their_parts_with_the_separator() {
        assert_eq!(key(&[]), "");
        assert_eq!(key(&["a"]), "a");
        assert_eq!(key(&["wf", "", "k"]), format!("wf{SEP}{SEP}k"));
        let t = chrono::DateTime::from_timestamp_millis(1_700_000_000_123).unwrap();
        assert_eq!(at(t, "x"), format!("00000001700000000123{SEP}x"));
        assert_eq!(split_at(&at(t, "x")), Some((t, "x")));
        let before_epoch = chrono::DateTime::from_timestamp_millis(-5).unwrap();
        assert_eq!(at(before_epoch, ""), format!("{}{SEP}", num(0)));
    }
}
