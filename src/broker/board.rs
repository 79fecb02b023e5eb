//! The SWF task board: the tasks ready on each task list of the state partitions this
//! broker owns, and the long polls waiting for them. A poll holds no thread: it waits on a
//! [`Notify`] with its deadline. The board is a cache of the instances: tasks are offered
//! after the commit that scheduled them and again when a partition is taken over, and a
//! taken task is only the poller's once its instance records it (`TaskStarted`), so a stale
//! entry costs one refused apply.

use crate::cluster::partition::PartitionId;
use crate::swf::task::TaskQueue;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::time::Instant;

/// A task ready for a poller: the execution's instance and the event that scheduled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub partition: PartitionId,
    pub instance: String,
    pub scheduled: i64,
}

/// One task list: its ready tasks and the polls waiting on it.
#[derive(Default)]
struct List {
    ready: VecDeque<Ready>,
    /// Woken once per offered task (`notify_one`: a hundred polls on a list are not all
    /// woken for one task; a woken poll that went away passes the wake-up on).
    waiting: Arc<Notify>,
}

#[derive(Default)]
pub struct Board {
    /// Lists stay once seen (their `Notify` is shared with waiting polls); they are few.
    lists: Mutex<HashMap<TaskQueue, List>>,
}

impl Board {
    /// A task is ready on `queue`; one waiting poll is woken.
    pub fn offer(&self, queue: TaskQueue, ready: Ready) {
        let Ok(mut lists) = self.lists.lock() else {
            return;
        };
        let list = lists.entry(queue).or_default();
        if !list.ready.contains(&ready) {
            list.ready.push_back(ready);
            list.waiting.notify_one();
        }
    }

    /// The oldest ready task of `queue`, taken off the board.
    pub fn take(&self, queue: &TaskQueue) -> Option<Ready> {
        self.lists.lock().ok()?.get_mut(queue)?.ready.pop_front()
    }

    /// How many tasks are ready on `queue` (`CountPending*Tasks`).
    pub fn count(&self, queue: &TaskQueue) -> usize {
        self.lists
            .lock()
            .map(|l| l.get(queue).map_or(0, |l| l.ready.len()))
            .unwrap_or(0)
    }

    /// Forgets the tasks of partition `p` (it moved to another broker).
    pub fn release(&self, p: PartitionId) {
        if let Ok(mut lists) = self.lists.lock() {
            for list in lists.values_mut() {
                list.ready.retain(|r| r.partition != p);
            }
        }
    }

    fn waiting(&self, queue: &TaskQueue) -> Option<Arc<Notify>> {
        let mut lists = self.lists.lock().ok()?;
        Some(lists.entry(queue.clone()).or_default().waiting.clone())
    }

    /// Waits until a task of `queue` is ready or `deadline` passes (nothing is taken at the
    /// deadline, when the poller may be giving up).
    pub async fn wait(&self, queue: &TaskQueue, deadline: Instant) -> Option<Ready> {
        let waiting = self.waiting(queue)?;
        loop {
            let woken = waiting.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(r) = self.take(queue) {
                return Some(r);
            }
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf::task::TaskKind;
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

    #[tokio::test]
    async fn each_offer_reaches_one_waiting_poll_and_a_poll_that_went_away_takes_none() {
        let board = Arc::new(Board::default());
        let deadline = Instant::now() + Duration::from_secs(30);
        let polls: Vec<_> = (0..5)
            .map(|_| {
                let b = board.clone();
                tokio::spawn(async move { b.wait(&queue("a"), deadline).await })
            })
            .collect();
        // every poll is registered once the list's notifier has six holders
        let waiting = board.waiting(&queue("a")).unwrap();
        while Arc::strong_count(&waiting) < 7 {
            tokio::task::yield_now().await;
        }
        polls[0].abort();
        for i in 0..4 {
            board.offer(queue("a"), ready(i));
        }
        let mut got = Vec::new();
        for p in polls.into_iter().skip(1) {
            let r = tokio::time::timeout(Duration::from_secs(10), p)
                .await
                .expect("every remaining poll got a task")
                .unwrap();
            got.push(r.unwrap().scheduled);
        }
        got.sort();
        assert_eq!(got, [0, 1, 2, 3]);
    }
}
