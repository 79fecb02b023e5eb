//! The store-kept gauges `/metrics` appends: instances by status and the sizes of the small
//! tables (outbox, buffer, calls in flight).

use crate::engine::Status;
use crate::store::{key, Store, StoreError, Table};
use std::collections::BTreeMap;

/// The store-kept gauges for `/metrics`: sums over the state partitions in this broker's store.
pub fn gauges(store: &Store) -> Result<String, StoreError> {
    let tx = store.read()?;
    let mut counters: BTreeMap<String, i64> = BTreeMap::new();
    for (p, k, v) in tx.partitioned::<serde_json::Value>(Table::Meta)? {
        if let (Some(_), Some(n)) = (p, v.as_i64()) {
            *counters.entry(k).or_default() += n;
        }
    }
    let counter = |k: &str| counters.get(k).copied().unwrap_or(0);
    let mut s = String::from(
        "# HELP flowbroker_instances Instances by status.\n# TYPE flowbroker_instances gauge\n",
    );
    for st in Status::ALL {
        let name = st.as_str();
        let n = counter(&key(&["status", name]));
        s.push_str(&format!("flowbroker_instances{{status=\"{name}\"}} {n}\n"));
    }
    s.push_str("# HELP flowbroker_outbox_pending Events committed but not yet acknowledged by Kafka.\n# TYPE flowbroker_outbox_pending gauge\n");
    s.push_str(&format!(
        "flowbroker_outbox_pending {}\n",
        tx.len(Table::Outbox)?
    ));
    s.push_str("# HELP flowbroker_buffered_events Early events waiting for their instance (or held for their key).\n# TYPE flowbroker_buffered_events gauge\n");
    s.push_str(&format!(
        "flowbroker_buffered_events {}\n",
        counter(crate::broker::effects::BUFFER_COUNT)
    ));
    s.push_str("# HELP flowbroker_function_calls_in_flight Function calls not yet answered.\n# TYPE flowbroker_function_calls_in_flight gauge\n");
    s.push_str(&format!(
        "flowbroker_function_calls_in_flight {}\n",
        tx.len(Table::Calls)?
    ));
    Ok(s)
}
