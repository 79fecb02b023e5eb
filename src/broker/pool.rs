//! The partition processors' threads. A step's partitions are independent (each reads and
//! writes only its own keys, and its messages to the others are applied in the next step),
//! so their processors run at once on a pool sized to the cores (`cluster.processor_threads`;
//! by default one per core less one, which the Kafka clients and the store's flushes and
//! compactions keep busy), one partition per processor at a time. The core waits for the
//! step's processors and takes their results in partition order, so what a round decides does
//! not depend on which thread applied what.
//!
//! A step with one partition (the common case at a low rate) is applied on the core thread:
//! handing it to the pool would add a thread hop to its latency and gain nothing.

/// Runs jobs on the processor threads, or on the calling thread when there are none.
pub(super) struct Pool {
    threads: Option<rayon::ThreadPool>,
}

impl Pool {
    /// `threads` processor threads; 0: one per core less one (so none on 2 cores); 1: none
    /// (every job on the calling thread). A pool that cannot be started is logged and leaves
    /// the jobs on the calling thread.
    pub fn new(threads: usize) -> Pool {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1)),
            n => n,
        };
        if threads < 2 {
            return Pool { threads: None };
        }
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("flowbroker-processor-{i}"))
            .build();
        match built {
            Ok(pool) => Pool {
                threads: Some(pool),
            },
            Err(e) => {
                tracing::warn!(threads, error = %e,
                    "processor threads not started: partitions are applied on the core thread");
                Pool { threads: None }
            }
        }
    }

    /// How many threads apply partitions (1: the calling thread).
    pub fn threads(&self) -> usize {
        self.threads
            .as_ref()
            .map_or(1, rayon::ThreadPool::current_num_threads)
    }

    /// Calls `f` on every job, at once on the pool when there is more than one, and returns
    /// when all are done: `true` when they ran on the pool.
    pub fn run<J: Send>(&self, jobs: &mut [J], f: impl Fn(&mut J) + Sync + Send) -> bool {
        use rayon::iter::{IntoParallelRefMutIterator, ParallelIterator};
        match &self.threads {
            Some(pool) if jobs.len() > 1 => {
                pool.install(|| jobs.par_iter_mut().for_each(f));
                true
            }
            _ => {
                jobs.iter_mut().for_each(f);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn every_job_runs_once_on_the_pools_threads() {
        let pool = Pool::new(2);
        assert_eq!(pool.threads(), 2);
        let names = Mutex::new(std::collections::BTreeSet::new());
        let mut jobs: Vec<u64> = (0..64).collect();
        pool.run(&mut jobs, |j| {
            *j *= 2;
            let name = std::thread::current().name().map(str::to_string);
            names.lock().unwrap().insert(name.unwrap_or_default());
        });
        assert_eq!(jobs, (0..64).map(|j| j * 2).collect::<Vec<_>>());
        let names = names.into_inner().unwrap();
        assert!(
            names.iter().all(|n| n.starts_with("flowbroker-processor-")),
            "{names:?}"
        );
    }

    #[test]
    fn jobs_run_at_once() {
        // each job waits for a word from the other: one after the other, the first would
        // wait in vain (and fail after the timeout rather than hang)
        let (to_a, from_b) = std::sync::mpsc::channel::<()>();
        let (to_b, from_a) = std::sync::mpsc::channel::<()>();
        let ends = [(to_b, Mutex::new(from_b)), (to_a, Mutex::new(from_a))];
        let mut jobs = [0usize, 1];
        let on_pool = Pool::new(2).run(&mut jobs, |j| {
            let (tell, hear) = &ends[*j];
            tell.send(()).unwrap();
            let heard = hear.lock().unwrap().recv_timeout(Duration::from_secs(30));
            assert!(heard.is_ok(), "job {j} ran alone");
        });
        assert!(on_pool);
    }

    #[test]
    fn one_job_or_one_thread_stays_on_the_calling_thread() {
        let here = std::thread::current().id();
        let mut one = [0u8];
        let on_pool = Pool::new(2).run(&mut one, |_| assert_eq!(std::thread::current().id(), here));
        assert!(!on_pool);
        let mut many = [0u8; 8];
        let single = Pool::new(1);
        assert_eq!(single.threads(), 1);
        assert!(!single.run(&mut many, |_| assert_eq!(std::thread::current().id(), here)));
    }
}
