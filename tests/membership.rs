//! Consumer-group membership against tansu (docs/scale.md "Membership"): a broker stopped
//! while it is still joining the group must not stall the group. tansu keeps a member that
//! sent LeaveGroup while the group was forming as its leader for good (docs/KAFKA.md), so a
//! stopping broker does not leave the group by default (`kafka.leave_group_on_stop`): its
//! membership ends with the session timeout, as after a crash.

mod support;
use std::time::Instant;
use support::*;

#[test]
fn a_broker_stopped_mid_join_does_not_stall_the_next_two() {
    let kafka = Kafka::start();
    let mut a = Broker::start_joining(&kafka, &[], &[]);
    let (_, health) = a.get("/health");
    assert_eq!(
        health["kafka"]["assignedPartitions"], 0,
        "a is still joining the group: {health}"
    );
    a.terminate();
    let log = a.log();
    assert!(log.contains("shutting down"), "a stopped gracefully: {log}");
    assert!(
        !log.contains("state partition taken over"),
        "a was stopped before it owned anything: {log}"
    );
    // two brokers started together own every state partition between them, soon
    let t = Instant::now();
    let (b, c) = std::thread::scope(|s| {
        let b = s.spawn(|| Broker::start_joining(&kafka, &[], &[]));
        let c = s.spawn(|| Broker::start_joining(&kafka, &[], &[]));
        (b.join().unwrap(), c.join().unwrap())
    });
    wait_for(30, "b and c to own all 12 state partitions", || {
        let (ob, oc) = (b.owned(), c.owned());
        (ob.len() + oc.len() == 12 && !ob.is_empty() && !oc.is_empty()).then_some(())
    });
    eprintln!(
        "b and c owned every partition {:?} after they started",
        t.elapsed()
    );
}
