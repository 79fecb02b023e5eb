//! The store's open snapshots, and the gate a tombstone merge (`compact`) closes so that none
//! is open while it runs: a merge keeps only each key's newest version, which a snapshot
//! taken before it might not see.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockWriteGuard, TryLockError};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct Readers {
    /// Held for writing while a merge runs; for reading while a snapshot opens.
    gate: RwLock<()>,
    /// Snapshots open now.
    open: AtomicUsize,
    /// A merge waits for the open snapshots to close: new optional ones wait for it.
    draining: AtomicBool,
    /// Signalled when the last open snapshot closes.
    closed: (Mutex<()>, Condvar),
}

/// One open snapshot; counted until dropped.
#[derive(Debug)]
pub struct Reading(Arc<Readers>);

/// No snapshot is open, and none opens, while this lives.
pub struct Exclusive<'r> {
    _gate: RwLockWriteGuard<'r, ()>,
}

impl Readers {
    /// A snapshot opens; waits while a merge runs (a lock poisoned by a panicked merge is
    /// taken all the same: it guards no data).
    pub fn enter(self: &Arc<Self>) -> Reading {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        self.open.fetch_add(1, Ordering::SeqCst);
        Reading(self.clone())
    }

    /// A snapshot that can wait for a later turn opens, unless a merge runs now or waits for
    /// the open snapshots to close.
    pub fn try_enter(self: &Arc<Self>) -> Option<Reading> {
        if self.draining.load(Ordering::SeqCst) {
            return None;
        }
        let _gate = match self.gate.try_read() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        self.open.fetch_add(1, Ordering::SeqCst);
        Some(Reading(self.clone()))
    }

    /// Waits up to `patience` for the open snapshots to close (meanwhile [`Readers::try_enter`]
    /// opens none), then closes the gate; `None` when they did not close in time.
    pub fn exclusive(&self, patience: Duration) -> Option<Exclusive<'_>> {
        let until = Instant::now() + patience;
        self.draining.store(true, Ordering::SeqCst);
        let got = loop {
            if !self.wait_closed(until) {
                break None;
            }
            let gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
            // an `enter` may have opened one between the wait and the gate
            if self.open.load(Ordering::SeqCst) == 0 {
                break Some(Exclusive { _gate: gate });
            }
        };
        self.draining.store(false, Ordering::SeqCst);
        got
    }

    /// Waits until no snapshot is open; false at `until`.
    fn wait_closed(&self, until: Instant) -> bool {
        let (lock, cv) = &self.closed;
        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.open.load(Ordering::SeqCst) != 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = cv
                .wait_timeout(g, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            let (lock, cv) = &self.0.closed;
            let _g = lock.lock().unwrap_or_else(|e| e.into_inner());
            cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_waits_for_open_snapshots_and_optional_ones_wait_for_it() {
        let r = Arc::new(Readers::default());
        let open = r.enter();
        assert!(
            r.exclusive(Duration::from_millis(50)).is_none(),
            "a snapshot is open"
        );
        let r2 = r.clone();
        let closer = std::thread::spawn(move || {
            // closes once the merge waits for it (draining)
            while !r2.draining.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            assert!(
                r2.try_enter().is_none(),
                "no optional snapshot while draining"
            );
            drop(open);
        });
        let gate = r
            .exclusive(Duration::from_secs(30))
            .expect("the snapshot closed");
        closer.join().unwrap();
        assert!(r.try_enter().is_none(), "none opens while the merge runs");
        drop(gate);
        let again = r.try_enter().expect("open again after the merge");
        assert_eq!(r.open.load(Ordering::SeqCst), 1);
        drop(again);
        assert_eq!(r.open.load(Ordering::SeqCst), 0);
    }
}
