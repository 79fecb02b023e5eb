//! Event, switch (event conditions), callback and eventRef request/reply.

mod common;
use chrono::Duration;
use common::*;
use flowbroker::engine::{waits_for, Action, EngineError, Input, Status};
use serde_json::json;

const VITALS: &str = r#"
id: vitals
name: vitals
events:
- {name: Temp, type: temp, source: monitor, correlation: [{contextAttributeName: patientId}]}
- {name: Pressure, type: pressure, source: monitor, correlation: [{contextAttributeName: patientId}, {contextAttributeName: department, contextAttributeValue: UrgentCare}]}
functions: [{name: alert, resource: "http://x/alert"}]
states:
- name: Wait
  type: event
  start: {kind: default}
  exclusive: EXCLUSIVE
  timeout: PT10M
  eventsActions:
  - eventRefs: [Temp]
    eventDataFilter: {dataOutputPath: "{{ $.data.value }}"}
    actions: [{functionRef: {refName: alert, parameters: {patient: "{{ $.patientId }}"}}}]
  - eventRefs: [Pressure]
    actions: []
  end: {kind: default}
"#;

#[test]
fn exclusive_event_runs_its_actions_and_pins_correlation() {
    let mut env = Env::yaml(&VITALS.replace("EXCLUSIVE", "true"));
    let acts = env.start(json!({}));
    assert!(
        timers(&acts).is_empty(),
        "the timeout is ignored on an exclusive start state"
    );
    assert_eq!(waits_for(&env.def, &env.inst), vec!["Temp", "Pressure"]);
    let acts = env.event(event(
        "monitor",
        "temp",
        json!({"value": "39C"}),
        &[("patientid", "P1")],
    ));
    assert_eq!(env.inst.data["value"], json!("39C"));
    assert_eq!(env.inst.data["patientId"], json!("P1"));
    assert_eq!(
        env.inst.correlation.get("patientid").map(String::as_str),
        Some("P1")
    );
    let calls = invokes(&acts);
    assert_eq!(calls[0].2, json!({"patient": "P1"}));
    env.result(&calls[0].0, json!({}));
    assert_eq!(env.status(), Status::Completed);
}

#[test]
fn wrong_correlation_or_unawaited_events_are_refused() {
    let mut env = Env::yaml(&VITALS.replace("EXCLUSIVE", "false"));
    env.start(json!({}));
    env.event(event(
        "monitor",
        "temp",
        json!({"value": 1}),
        &[("patientid", "P1")],
    ));
    // Another patient's reading does not belong here.
    let other = event(
        "monitor",
        "pressure",
        json!({}),
        &[("patientid", "P2"), ("department", "UrgentCare")],
    );
    assert!(matches!(
        env.try_feed(Input::Event { event: other }),
        Err(EngineError::NotWaiting { .. })
    ));
    // The fixed value must match.
    let ward = event(
        "monitor",
        "pressure",
        json!({}),
        &[("patientid", "P1"), ("department", "Ward")],
    );
    assert!(env.try_feed(Input::Event { event: ward }).is_err());
    // Temp already arrived: a second one is not awaited.
    let again = event("monitor", "temp", json!({}), &[("patientid", "P1")]);
    assert!(env.try_feed(Input::Event { event: again }).is_err());
    assert_eq!(env.status(), Status::Waiting);
}

#[test]
fn all_events_then_actions_of_every_group() {
    let mut env = Env::yaml(&VITALS.replace("EXCLUSIVE", "false"));
    let acts = env.start(json!({}));
    assert_eq!(
        timers(&acts).len(),
        1,
        "a directly started instance times out from state entry"
    );
    assert!(invokes(&env.event(event(
        "monitor",
        "temp",
        json!({"value": 1}),
        &[("patientid", "P1")]
    )))
    .is_empty());
    let acts = env.event(event(
        "monitor",
        "pressure",
        json!({"sys": 120}),
        &[("patientid", "P1"), ("department", "UrgentCare")],
    ));
    assert!(acts.contains(&Action::CancelTimer {
        id: "i1/1/timeout".into()
    }));
    assert_eq!(env.inst.data["sys"], json!(120));
    let calls = invokes(&acts);
    assert_eq!(calls.len(), 1);
    env.result(&calls[0].0, json!({"alerted": true}));
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output()["alerted"], json!(true));
}

#[test]
fn start_events_are_consumed_at_once() {
    let mut env = Env::yaml(&VITALS.replace("EXCLUSIVE", "false"));
    let acts = env.feed(Input::Start {
        input: json!({}),
        events: vec![
            event(
                "monitor",
                "temp",
                json!({"value": 1}),
                &[("patientid", "P7")],
            ),
            event(
                "monitor",
                "pressure",
                json!({}),
                &[("patientid", "P7"), ("department", "UrgentCare")],
            ),
        ],
    });
    assert_eq!(invokes(&acts)[0].2, json!({"patient": "P7"}));
}

#[test]
fn event_state_timeout_transitions_without_actions() {
    let wf = VITALS.replace("EXCLUSIVE", "false").replace("  start: {kind: default}\n", "").replace(
        "states:\n",
        "states:\n- name: First\n  type: inject\n  start: {kind: default}\n  transition: {nextState: Wait}\n",
    );
    let mut env = Env::yaml(&wf);
    let acts = env.start(json!({"x": 1}));
    let (id, due) = timers(&acts)[0].clone();
    assert_eq!(due, env.now + Duration::minutes(10));
    env.now = due;
    let acts = env.fire(&id);
    assert!(invokes(&acts).is_empty());
    assert_eq!(env.status(), Status::Completed);
    assert_eq!(env.output(), json!({"x": 1}));
}

const SWITCH: &str = r#"
id: visa
name: visa
events:
- {name: approved, type: visa.approved, source: visa}
- {name: rejected, type: visa.rejected, source: visa}
states:
- name: CheckVisaStatus
  type: switch
  start: {kind: default}
  eventConditions:
  - eventRef: approved
    transition: {nextState: Approved}
  - eventRef: rejected
    eventDataFilter: {dataOutputPath: "{{ $.data.reason }}"}
    transition: {nextState: Rejected}
  eventTimeout: PT1H
  default: {nextState: TimedOut}
- {name: Approved, type: inject, data: {visa: approved}, end: {kind: default}}
- {name: Rejected, type: inject, data: {visa: rejected}, end: {kind: default}}
- {name: TimedOut, type: inject, data: {visa: unknown}, end: {kind: default}}
"#;

#[test]
fn switch_event_conditions() {
    let mut env = Env::yaml(SWITCH);
    env.start(json!({}));
    env.event(event(
        "visa",
        "visa.rejected",
        json!({"reason": "expired passport"}),
        &[],
    ));
    assert_eq!(
        env.output(),
        json!({"reason": "expired passport", "visa": "rejected"})
    );

    let mut env = Env::yaml(SWITCH);
    let acts = env.start(json!({}));
    let (id, _) = timers(&acts)[0].clone();
    env.fire(&id);
    assert_eq!(env.output(), json!({"visa": "unknown"}));
}

const CALLBACK: &str = r#"
id: credit
name: credit
events:
- {name: CreditCheckCompletedEvent, type: creditCheckCompleteType, source: creditCheckSource, correlation: [{contextAttributeName: customerId}]}
functions: [{name: callCreditCheckMicroservice, resource: creditCheckResource}]
states:
- name: CheckCredit
  type: callback
  start: {kind: default}
  action:
    functionRef: {refName: callCreditCheckMicroservice, parameters: {customer: "{{ $.customer }}"}}
  eventRef: CreditCheckCompletedEvent
  timeout: PT15M
  transition: {nextState: Decide}
- name: Decide
  type: switch
  dataConditions:
  - condition: "{{ $.[?(@.decision == 'Approved')] }}"
    transition: {nextState: Approve}
  default: {nextState: Reject}
- {name: Approve, type: inject, data: {result: approved}, end: {kind: default}}
- {name: Reject, type: inject, data: {result: rejected}, end: {kind: default}}
"#;

#[test]
fn callback_completes_on_its_event() {
    let mut env = Env::yaml(CALLBACK);
    let acts = env.start(json!({"customer": "c1"}));
    assert!(
        timers(&acts).is_empty(),
        "the timeout runs from the action's completion"
    );
    let acts = env.result(&invokes(&acts)[0].0, json!({"requested": true}));
    assert_eq!(timers(&acts)[0].1, env.now + Duration::minutes(15));
    assert_eq!(env.status(), Status::Waiting);
    let mut ev = event(
        "creditCheckSource",
        "creditCheckComplete",
        json!({"decision": "Approved"}),
        &[],
    );
    assert!(
        env.try_feed(Input::Event { event: ev.clone() }).is_err(),
        "wrong type"
    );
    ev.event_type = "creditCheckCompleteType".into();
    ev.extensions
        .insert("workflowinstanceid".into(), json!("i1"));
    assert!(
        env.try_feed(Input::Event { event: ev.clone() }).is_err(),
        "customerId is required"
    );
    ev.extensions.insert("customerid".into(), json!("c1"));
    let acts = env.event(ev);
    assert!(acts.iter().any(|a| matches!(a, Action::CancelTimer { .. })));
    assert_eq!(env.output()["result"], json!("approved"));
    assert_eq!(env.output()["requested"], json!(true));
}

#[test]
fn callback_timeout_moves_on_without_the_event() {
    let mut env = Env::yaml(CALLBACK);
    let acts = env.start(json!({}));
    let acts = env.result(&invokes(&acts)[0].0, json!({}));
    let (id, due) = timers(&acts)[0].clone();
    env.now = due;
    env.fire(&id);
    assert_eq!(env.output()["result"], json!("rejected"));
}

#[test]
fn event_ref_request_reply() {
    let mut env = Env::yaml(
        r#"
id: vet
name: vet
events:
- {name: MakeVetAppointment, type: vet.make, kind: produced}
- {name: VetAppointmentInfo, type: vet.info, source: vetsource}
states:
- name: MakeAppointment
  type: operation
  start: {kind: default}
  actions:
  - eventRef:
      triggerEventRef: MakeVetAppointment
      data: "{{ $.patientInfo }}"
      resultEventRef: VetAppointmentInfo
      contextAttributes: {pet: "{{ $.patientInfo.name }}"}
    actionDataFilter: {dataResultsPath: "{{ $.appointment }}"}
    timeout: PT1H
  end: {kind: default}
"#,
    );
    let acts = env.start(json!({"patientInfo": {"name": "Rex"}}));
    let out = produced(&acts);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].event_type, "vet.make");
    assert_eq!(out[0].data, Some(json!({"name": "Rex"})));
    assert_eq!(out[0].extensions["pet"], json!("Rex"));
    assert_eq!(out[0].extensions["workflowinstanceid"], json!("i1"));
    assert_eq!(waits_for(&env.def, &env.inst), vec!["VetAppointmentInfo"]);
    let reply = event(
        "vetsource",
        "vet.info",
        json!({"appointment": "Tue 10:00"}),
        &[("workflowinstanceid", "i1")],
    );
    env.event(reply);
    assert_eq!(env.output()["appointment"], json!("Tue 10:00"));
}
