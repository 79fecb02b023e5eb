//! The SWF task board: the tasks ready on each task list of the state partitions this
//! broker owns, and the long polls waiting for them. A poll holds no thread: it waits on a
//! [`Notify`] with its deadline. The board is a cache of the instances: tasks are offered
//! after the commit that scheduled them and again when a partition is taken over, and a
//! taken task is only the poller's once its instance records it (`TaskStarted`), so a stale
//! entry costs one refused apply.

use crate::cluster::partition::PartitionId;
use crate::swf::task::TaskQueue;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A task ready for a poller: the execution's instance and the event that scheduled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub partition: PartitionId,
    pub instance: String,
    pub scheduled: i64,
}

#[derive(Default)]
pub struct Board {
    queues: Mutex<HashMap<TaskQueue, VecDeque<Ready>>>,
    changed: Notify,
}

impl Board {
    /// A task is ready on `queue`; every waiting poll looks.
    pub fn offer(&self, queue: TaskQueue, ready: Ready) {
        if let Ok(mut q) = self.queues.lock() {
            let list = q.entry(queue).or_default();
            if !list.contains(&ready) {
                list.push_back(ready);
            }
        }
        self.changed.notify_waiters();
    }

    /// The oldest ready task of `queue`, taken off the board.
    pub fn take(&self, queue: &TaskQueue) -> Option<Ready> {
        let mut q = self.queues.lock().ok()?;
        let list = q.get_mut(queue)?;
        let r = list.pop_front();
        if list.is_empty() {
            q.remove(queue);
        }
        r
    }

    /// How many tasks are ready on `queue` (`CountPending*Tasks`).
    pub fn count(&self, queue: &TaskQueue) -> usize {
        self.queues
            .lock()
            .map(|q| q.get(queue).map_or(0, VecDeque::len))
            .unwrap_or(0)
    }

    /// Forgets the tasks of partition `p` (it moved to another broker).
    pub fn release(&self, p: PartitionId) {
        if let Ok(mut q) = self.queues.lock() {
            q.retain(|_, list| {
                list.retain(|r| r.partition != p);
                !list.is_empty()
            });
        }
    }

    /// Waits until a task of `queue` is ready or `deadline` passes.
    pub async fn wait(&self, queue: &TaskQueue, deadline: Instant) -> Option<Ready> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(r) = self.take(queue) {
                return Some(r);
            }
            tokio::select! {
                _ = changed => {}
                // nothing is taken at the deadline, when the poller may be giving up
                _ = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf::task::TaskKind;
    use std::sync::Arc;
    use std::time::Duration;

    fn queue(list: &str) -> TaskQueue {
        TaskQueue {
            kind: TaskKind::Decision,
            domain: "d".into(),
            list: list.into(),
        }
    }

    fn ready(i: i64) -> Ready {
        Ready {
            partition: PartitionId(1),
            instance: format!("p1-{i}"),
            scheduled: i,
        }
    }

    #[tokio::test]
    async fn a_waiting_poll_gets_a_task_offered_later_and_lists_stay_apart() {
        let board = Arc::new(Board::default());
        let b = board.clone();
        let poll = tokio::spawn(async move {
            b.wait(&queue("a"), Instant::now() + Duration::from_secs(30))
                .await
        });
        // the poll is waiting once the other list's offer does not reach it
        board.offer(queue("b"), ready(1));
        board.offer(queue("a"), ready(2));
        let got = tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .expect("the poll returned")
            .unwrap();
        assert_eq!(got, Some(ready(2)));
        assert_eq!(board.count(&queue("b")), 1);
        board.release(PartitionId(1));
        assert_eq!(board.count(&queue("b")), 0);
        let none = board
            .wait(&queue("a"), Instant::now() + Duration::from_millis(20))
            .await;
        assert_eq!(none, None);
    }
}
