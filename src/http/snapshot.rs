//! A store snapshot for a request handler. Opening one waits while a tombstone merge holds the
//! store's readers (`store::compact`, up to about a second); that wait must not hold one of the
//! runtime's few async workers, which also run the Kafka clients' tasks.

use crate::store::{Snapshot, Store, StoreError};
use tokio::runtime::{Handle, RuntimeFlavor};

/// At once when no merge runs; else the wait happens with this worker's other tasks moved to
/// another thread (`block_in_place`, on the multi-threaded runtime the server uses). While a
/// merge only waits for open snapshots to close, this opens one without waiting, as before:
/// a request does not give way to a merge, which waits up to 5 s and then tries later.
pub fn read(store: &Store) -> Result<Snapshot<'_>, StoreError> {
    if let Some(s) = store.try_read() {
        return Ok(s);
    }
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(|| store.read()),
        _ => store.read(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// While a merge holds the readers, a handler waiting for a snapshot leaves the runtime's
    /// only worker to the other tasks.
    #[test]
    fn a_wait_for_a_merge_leaves_the_worker_to_other_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let merge = store.merging();
        let (started, on_the_worker) = std::sync::mpsc::channel();
        let s = store.clone();
        let reader = rt.spawn(async move {
            let _ = started.send(());
            read(&s).map(|_| ())
        });
        // the reader holds the worker from here until it has its snapshot, unless the wait
        // hands the worker's other tasks to another thread
        on_the_worker.recv_timeout(Duration::from_secs(20)).unwrap();
        let (ran, other_ran) = std::sync::mpsc::channel();
        rt.spawn(async move {
            let _ = ran.send(42);
        });
        let got = other_ran.recv_timeout(Duration::from_secs(20));
        assert_eq!(got.expect("another task ran during the merge"), 42);
        assert!(!reader.is_finished(), "the reader waited for the merge");
        drop(merge);
        rt.block_on(reader).unwrap().unwrap();
    }
}
