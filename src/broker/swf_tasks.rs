//! The SWF tasks ready in a partition, read from its open runs when the partition is taken
//! over (the board is a cache; the instances are the record). Open runs are found through
//! their `Active` entries, so a partition's other instances are not read.

use super::board::Ready;
use super::entries::InstanceOf;
use super::index::SWF_RUN;
use crate::cluster::partition::PartitionId;
use crate::engine::swf::{execution_of, DecisionTask};
use crate::store::{Table, Txn, SEP};
use crate::swf::task::{TaskKind, TaskQueue};

/// Every task of partition `p` that waits for a poller.
pub fn ready(tx: &Txn<'_>, p: PartitionId) -> crate::store::Result<Vec<(TaskQueue, Ready)>> {
    let prefix = format!("{}{SEP}{SWF_RUN}{SEP}", crate::swf::EXECUTIONS);
    let mut out = Vec::new();
    for (_, id) in tx.prefix::<String>(Table::Active, &prefix)? {
        let Some(rec) = tx.read(&InstanceOf(&id))? else {
            continue;
        };
        let Some(x) = execution_of(&rec.instance) else {
            continue;
        };
        let ready = |scheduled| Ready {
            partition: p,
            instance: id.clone(),
            scheduled,
        };
        if let DecisionTask::Scheduled { scheduled } = x.decision {
            let queue = TaskQueue {
                kind: TaskKind::Decision,
                domain: x.domain.clone(),
                list: x.task_list.clone(),
            };
            out.push((queue, ready(scheduled)));
        }
        for a in x.activities.values().filter(|a| a.started.is_none()) {
            let queue = TaskQueue {
                kind: TaskKind::Activity,
                domain: x.domain.clone(),
                list: a.task_list.clone(),
            };
            out.push((queue, ready(a.scheduled)));
        }
    }
    Ok(out)
}
