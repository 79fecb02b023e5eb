//! Finished instances are forgotten `retention` after they finish; running ones never are.

mod support;
use chrono::Duration;
use support::manual::Harness;

const HOLD: &str = r#"
id: hold
name: hold
events:
- {name: Release, type: hold.release, source: /hold}
states:
- name: Quick
  type: inject
  start: {kind: default}
  data: {x: 1}
  transition: {nextState: Wait}
- name: Wait
  type: event
  eventsActions: [{eventRefs: [Release]}]
  end: {kind: default}
"#;

#[test]
fn finished_instances_and_history_go_after_retention() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |c| c.retention = "P1D".into());
    h.deploy("hold.yaml", HOLD);
    let done = h.start("hold").unwrap();
    let running = h.start("hold").unwrap();
    h.cancel(&done);
    assert_eq!(h.stored(&done).unwrap()["instance"]["status"], "CANCELLED");
    assert!(h.history_len(&done) > 0);
    h.clock.advance(Duration::hours(23));
    h.tick();
    assert!(h.stored(&done).is_some(), "kept within the retention");
    h.clock.advance(Duration::hours(2));
    h.tick();
    assert!(h.stored(&done).is_none(), "forgotten after the retention");
    assert_eq!(h.history_len(&done), 0);
    assert!(
        h.stored(&running).is_some(),
        "running instances are never forgotten"
    );
    assert_eq!(h.gauge("CANCELLED"), 0);
    assert_eq!(h.gauge("WAITING"), 1);
}

#[test]
fn empty_retention_keeps_everything() {
    let mut h = Harness::new("2024-01-01T00:00:00Z", |c| c.retention = String::new());
    h.deploy("hold.yaml", HOLD);
    let done = h.start("hold").unwrap();
    h.cancel(&done);
    h.clock.advance(Duration::days(400));
    h.tick();
    assert!(h.stored(&done).is_some());
}
