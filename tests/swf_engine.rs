//! The SWF interpreter on its own (pure, no broker): decisions, their failure causes, one
//! decision task at a time, timers, cancellation and continue-as-new, checked event by event
//! against what SWF records.

use chrono::{DateTime, Duration, Utc};
use flowbroker::definition::Definition;
use flowbroker::engine::swf::{execution_of, Call, DecisionTask};
use flowbroker::engine::{apply, Action, EngineError, Input, Instance, Status};
use flowbroker::swf::decision::parse;
use flowbroker::swf::registry::{Registered, RegistrationStatus, TypeId};
use flowbroker::swf::task::TaskKind;
use serde_json::{json, Value};

const ID: &str = "p0-5f0c8e4e-8d5a-4a43-9f7e-5e3c1c1b2a10";

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap()
}

struct Run {
    def: Definition,
    inst: Instance,
    now: DateTime<Utc>,
    actions: Vec<Action>,
}

impl Run {
    fn start() -> Run {
        let def = Definition::swf("swf", "test");
        let attrs = json!({
            "domain": "d", "workflowId": "w", "workflowType": {"name": "wf", "version": "1"},
            "taskList": {"name": "decisions"}, "executionStartToCloseTimeout": "600",
            "taskStartToCloseTimeout": "10", "childPolicy": "TERMINATE", "input": "in",
            "partitions": 12,
        });
        let step = apply(
            &def,
            Instance::new(ID, "swf"),
            Input::Start {
                input: attrs,
                events: vec![],
            },
            t0(),
        )
        .unwrap();
        Run {
            def,
            inst: step.instance,
            now: t0(),
            actions: step.actions,
        }
    }

    fn try_input(&mut self, input: Input) -> Result<(), EngineError> {
        let step = apply(&self.def, self.inst.clone(), input, self.now)?;
        self.inst = step.instance;
        self.actions = step.actions;
        Ok(())
    }

    fn call(&mut self, call: Call) {
        self.try_input(Input::Swf { call }).unwrap()
    }

    fn exec(&self) -> &flowbroker::engine::swf::Execution {
        execution_of(&self.inst).unwrap()
    }

    fn kinds(&self) -> Vec<&str> {
        self.exec().events.iter().map(|e| e.kind.as_str()).collect()
    }

    fn attrs(&self, id: usize) -> &serde_json::Map<String, Value> {
        &self.exec().events[id - 1].attrs
    }

    /// Takes the scheduled decision task; (scheduled, started).
    fn take_decision(&mut self) -> (i64, i64) {
        let DecisionTask::Scheduled { scheduled } = self.exec().decision else {
            panic!("no decision task scheduled: {:?}", self.exec().decision)
        };
        self.call(Call::TaskStarted {
            kind: TaskKind::Decision,
            scheduled,
            identity: Some("decider".into()),
        });
        let DecisionTask::Started { started, .. } = self.exec().decision else {
            panic!("not started")
        };
        (scheduled, started)
    }

    fn decide(&mut self, decisions: Value, types: Vec<Registered>) {
        let (scheduled, started) = self.take_decision();
        self.call(Call::DecisionCompleted {
            scheduled,
            started,
            decisions: parse(Some(&decisions)).unwrap(),
            context: None,
            types,
        });
    }
}

fn activity_type(name: &str, defaults: Value) -> Registered {
    Registered {
        id: TypeId {
            name: name.into(),
            version: "1".into(),
        },
        description: None,
        status: RegistrationStatus::Registered,
        created: t0(),
        deprecated: None,
        defaults: defaults.as_object().unwrap().clone(),
    }
}

fn full_defaults() -> Value {
    json!({"defaultTaskList": {"name": "acts"}, "defaultTaskScheduleToStartTimeout": "30",
        "defaultTaskScheduleToCloseTimeout": "60", "defaultTaskStartToCloseTimeout": "30",
        "defaultTaskHeartbeatTimeout": "NONE"})
}

fn schedule(activity: &str, id: &str) -> Value {
    json!({"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
        "activityType": {"name": activity, "version": "1"}, "activityId": id}})
}

#[test]
fn a_start_schedules_the_first_decision_task_and_arms_the_deadline() {
    let r = Run::start();
    assert_eq!(
        r.kinds(),
        ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
    );
    assert_eq!(r.attrs(1)["input"], "in");
    assert_eq!(r.attrs(2)["startToCloseTimeout"], "10");
    assert!(r.actions.iter().any(
        |a| matches!(a, Action::ArmTimer { due, .. } if *due == t0() + Duration::seconds(600))
    ));
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::Offer { scheduled: 2, .. })));
    assert_eq!(r.inst.status, Status::Running);
}

#[test]
fn failed_decisions_record_their_causes_and_schedule_one_decision_task_after_all() {
    let mut r = Run::start();
    let deprecated = Registered {
        status: RegistrationStatus::Deprecated,
        ..activity_type("old", full_defaults())
    };
    r.decide(
        json!([
            schedule("ship", "a1"),
            schedule("missing", "a2"),
            schedule("old", "a3"),
            schedule("bare", "a4"),
            schedule("ship", "a1"),
            {"decisionType": "StartTimer", "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
            {"decisionType": "StartTimer", "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
            {"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": "nope"}},
            {"decisionType": "RequestCancelActivityTask", "requestCancelActivityTaskDecisionAttributes": {"activityId": "nope"}},
            {"decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {"markerName": "m", "details": "x"}},
        ]),
        vec![
            activity_type("ship", full_defaults()),
            deprecated,
            activity_type("bare", json!({})),
        ],
    );
    let tail: Vec<&str> = r.kinds()[4..].to_vec();
    assert_eq!(
        tail,
        [
            "ActivityTaskScheduled",
            "ScheduleActivityTaskFailed",
            "ScheduleActivityTaskFailed",
            "ScheduleActivityTaskFailed",
            "ScheduleActivityTaskFailed",
            "TimerStarted",
            "StartTimerFailed",
            "CancelTimerFailed",
            "RequestCancelActivityTaskFailed",
            "MarkerRecorded",
            "DecisionTaskScheduled",
        ]
    );
    let causes: Vec<&Value> = (6..=9).map(|i| &r.attrs(i)["cause"]).collect();
    assert_eq!(
        causes,
        [
            "ACTIVITY_TYPE_DOES_NOT_EXIST",
            "ACTIVITY_TYPE_DEPRECATED",
            "DEFAULT_TASK_LIST_UNDEFINED",
            "ACTIVITY_ID_ALREADY_IN_USE"
        ]
    );
    assert_eq!(r.attrs(11)["cause"], "TIMER_ID_ALREADY_IN_USE");
    assert_eq!(r.attrs(12)["cause"], "TIMER_ID_UNKNOWN");
    assert_eq!(r.attrs(13)["cause"], "ACTIVITY_ID_UNKNOWN");
    for i in 5..=14 {
        assert_eq!(r.attrs(i)["decisionTaskCompletedEventId"], 4, "event {i}");
    }
    assert_eq!(r.attrs(5)["taskList"]["name"], "acts");
    assert_eq!(r.attrs(5)["scheduleToCloseTimeout"], "60");
}

#[test]
fn events_while_a_task_is_out_make_one_more_task_and_a_close_fails_unhandled() {
    let mut r = Run::start();
    let (scheduled, started) = r.take_decision();
    r.call(Call::Signal {
        name: "a".into(),
        input: None,
    });
    r.call(Call::Signal {
        name: "b".into(),
        input: Some("x".into()),
    });
    // no second task while one is out
    assert_eq!(
        r.kinds()
            .iter()
            .filter(|k| **k == "DecisionTaskScheduled")
            .count(),
        1
    );
    r.call(Call::DecisionCompleted {
        scheduled,
        started,
        decisions: parse(Some(
            &json!([{"decisionType": "CompleteWorkflowExecution"}]),
        ))
        .unwrap(),
        context: Some("ctx".into()),
        types: vec![],
    });
    assert_eq!(
        r.kinds()[5..],
        [
            "DecisionTaskCompleted",
            "CompleteWorkflowExecutionFailed",
            "DecisionTaskScheduled"
        ]
    );
    assert_eq!(r.attrs(7)["cause"], "UNHANDLED_DECISION");
    assert_eq!(r.attrs(6)["executionContext"], "ctx");
    assert!(r.exec().is_open());
    // the stale token is refused
    let stale = r.try_input(Input::Swf {
        call: Call::DecisionCompleted {
            scheduled,
            started,
            decisions: vec![],
            context: None,
            types: vec![],
        },
    });
    assert!(matches!(stale, Err(EngineError::Swf(ref e)) if e.fault() == "UnknownResourceFault"));
    r.decide(json!([{"decisionType": "CompleteWorkflowExecution", "completeWorkflowExecutionDecisionAttributes": {"result": "ok"}}]), vec![]);
    assert_eq!(r.kinds().last(), Some(&"WorkflowExecutionCompleted"));
    assert_eq!(r.inst.status, Status::Completed);
    assert_eq!(r.exec().previous_started, 9);
}

#[test]
fn timers_fire_once_and_an_activity_cancelled_before_a_worker_took_it_is_cancelled_at_once() {
    let mut r = Run::start();
    r.decide(
        json!([
            {"decisionType": "StartTimer", "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
            schedule("ship", "a1"),
        ]),
        vec![activity_type("ship", full_defaults())],
    );
    let timer = format!("{ID}/swf/t/t");
    assert!(r.inst.timers.contains(&timer));
    r.now += Duration::seconds(5);
    r.try_input(Input::TimerFired { id: timer.clone() })
        .unwrap();
    assert_eq!(r.kinds()[6..], ["TimerFired", "DecisionTaskScheduled"]);
    assert_eq!(r.attrs(7)["startedEventId"], 5);
    // a second firing of the same timer records nothing
    r.try_input(Input::TimerFired { id: timer }).unwrap();
    assert_eq!(r.kinds().len(), 8);
    r.decide(
        json!([{"decisionType": "RequestCancelActivityTask", "requestCancelActivityTaskDecisionAttributes": {"activityId": "a1"}}]),
        vec![],
    );
    assert_eq!(
        r.kinds()[10..],
        [
            "ActivityTaskCancelRequested",
            "ActivityTaskCanceled",
            "DecisionTaskScheduled"
        ]
    );
    assert_eq!(r.attrs(12)["latestCancelRequestedEventId"], 11);
    assert!(r.exec().activities.is_empty());
}

#[test]
fn continue_as_new_closes_the_run_and_starts_the_next_with_a_derived_run_id() {
    let mut r = Run::start();
    r.decide(
        json!([{"decisionType": "ContinueAsNewWorkflowExecution",
            "continueAsNewWorkflowExecutionDecisionAttributes": {"input": "again"}}]),
        vec![],
    );
    assert_eq!(r.kinds().last(), Some(&"WorkflowExecutionContinuedAsNew"));
    let e = r.exec().events.last().unwrap();
    let next = e.attrs["newExecutionRunId"].as_str().unwrap().to_string();
    let child = r
        .actions
        .iter()
        .find_map(|a| match a {
            Action::StartChild {
                id, input, wait, ..
            } => Some((id.clone(), input.clone(), *wait)),
            _ => None,
        })
        .expect("the next run starts");
    assert!(child.0.starts_with("p0-") && child.0.ends_with(&next));
    assert_eq!(child.1["input"], "again");
    assert_eq!(child.1["continuedExecutionRunId"], r.exec().run_id);
    assert_eq!(
        child.1["taskList"]["name"], "decisions",
        "the run's own configuration"
    );
    assert!(!child.2);
    assert_eq!(r.inst.status, Status::Completed);
    assert!(r.inst.timers.is_empty(), "the deadline was disarmed");
}

#[test]
fn terminate_and_cancel_requests_are_recorded() {
    let mut r = Run::start();
    r.call(Call::RequestCancel);
    r.call(Call::RequestCancel);
    assert_eq!(
        r.kinds()
            .iter()
            .filter(|k| **k == "WorkflowExecutionCancelRequested")
            .count(),
        1
    );
    r.call(Call::Terminate {
        reason: Some("ops".into()),
        details: None,
        child_policy: None,
    });
    assert_eq!(r.kinds().last(), Some(&"WorkflowExecutionTerminated"));
    assert_eq!(r.inst.status, Status::Terminated);
    let after = r.try_input(Input::Swf {
        call: Call::Signal {
            name: "late".into(),
            input: None,
        },
    });
    assert!(matches!(after, Err(EngineError::Finished { .. })));
}

#[test]
fn a_refused_child_fails_its_decision_and_a_closing_parent_terminates_its_children() {
    let mut r = Run::start();
    let wf = Registered {
        id: TypeId {
            name: "wf".into(),
            version: "1".into(),
        },
        ..activity_type(
            "wf",
            json!({"defaultTaskList": {"name": "d"},
            "defaultExecutionStartToCloseTimeout": "60", "defaultTaskStartToCloseTimeout": "5",
            "defaultChildPolicy": "ABANDON"}),
        )
    };
    let child = |wid: &str| {
        json!({"decisionType": "StartChildWorkflowExecution",
            "startChildWorkflowExecutionDecisionAttributes": {
                "workflowType": {"name": "wf", "version": "1"}, "workflowId": wid}})
    };
    r.decide(json!([child("c1"), child("c2"), child("c1")]), vec![wf]);
    assert_eq!(
        r.kinds()[4..],
        [
            "StartChildWorkflowExecutionInitiated",
            "StartChildWorkflowExecutionInitiated",
            "StartChildWorkflowExecutionFailed",
            "DecisionTaskScheduled"
        ]
    );
    assert_eq!(r.attrs(7)["cause"], "WORKFLOW_ALREADY_RUNNING");
    let starts: Vec<(String, Value)> = r
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::StartChild { id, input, .. } => Some((id.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0].1["parentInstance"], ID);
    assert_eq!(starts[0].1["parentInitiatedEventId"], 5);
    assert_eq!(
        starts[0].1["childPolicy"], "ABANDON",
        "the child type's default"
    );
    // the broker refuses c2's start: the decision fails late, linked to its initiation
    let error = flowbroker::engine::ErrorInfo::new(
        "ChildStartRefused",
        "an execution of workflow id \"c2\" is open (runId x)",
    );
    r.try_input(Input::ChildFailed {
        id: starts[1].0.clone(),
        error,
    })
    .unwrap();
    assert_eq!(r.kinds().last(), Some(&"StartChildWorkflowExecutionFailed"));
    assert_eq!(r.attrs(9)["initiatedEventId"], 6);
    assert_eq!(r.attrs(9)["decisionTaskCompletedEventId"], 4);
    // c1 started; the parent is terminated: c1 is terminated too (child policy TERMINATE)
    r.call(Call::ChildStarted {
        initiated: 5,
        run_id: "r1".into(),
    });
    assert_eq!(r.kinds().last(), Some(&"ChildWorkflowExecutionStarted"));
    r.call(Call::Terminate {
        reason: None,
        details: None,
        child_policy: None,
    });
    let told: Vec<&Action> = r
        .actions
        .iter()
        .filter(|a| matches!(a, Action::Send { .. }))
        .collect();
    assert_eq!(told.len(), 1);
    match told[0] {
        Action::Send { to, input } => {
            assert_eq!(to, &starts[0].0);
            assert!(matches!(
                **input,
                Input::Swf {
                    call: Call::Terminate { .. }
                }
            ));
        }
        _ => unreachable!(),
    }
}

#[test]
fn a_run_stamped_with_a_sub_millisecond_clock_reads_back_as_written() {
    // `broker::hot` hands out a kept record only if decoding its bytes gives it back: the
    // history keeps its times to the nanosecond (the API answers in milliseconds)
    let mut r = Run::start();
    r.now = t0() + Duration::nanoseconds(1_234_567_891);
    r.decide(
        json!([schedule("ship", "a1")]),
        vec![activity_type("ship", full_defaults())],
    );
    let stored = serde_json::to_string(&r.inst).unwrap();
    let back: Instance = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, r.inst);
    let last = r.exec().events.last().unwrap();
    assert_eq!(last.kind, "ActivityTaskScheduled");
    assert_eq!(last.at, r.now);
    assert_eq!(last.wire()["eventTimestamp"], json!(1_700_000_001.234));
}
