//! What an instance is doing inside its current state: the activity, its lanes and runs of
//! actions, and each action's slot.
//!
//! They are stored as internally tagged JSON (`{"kind": "operation", "run": ...}`), the shape
//! the API shows. serde's derived deserialiser for internally tagged enums buffers every value
//! into its `Content` tree before picking the variant, which was 15% of the engine bench; each
//! enum here is read instead through a flat struct of its tag and every variant's fields
//! (`try_from`), which streams, and then checked for the fields its variant needs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A stored activity, slot or lane missing a field its tag needs.
#[derive(Debug, thiserror::Error)]
#[error("{tag}: missing field `{field}`")]
pub struct MissingField {
    tag: &'static str,
    field: &'static str,
}

fn need<T>(v: Option<T>, tag: &'static str, field: &'static str) -> Result<T, MissingField> {
    v.ok_or(MissingField { tag, field })
}

/// One action's progress.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "camelCase", try_from = "SlotRepr")]
pub enum Slot {
    Pending,
    /// A function call is out; `attempt` 0 is the first try.
    Invoked {
        attempt: u32,
    },
    /// The trigger event was produced; waiting for the result event.
    AwaitingEvent {
        attempt: u32,
        event: String,
    },
    /// Waiting for the retry timer before attempt `attempt`.
    RetryWait {
        attempt: u32,
    },
    Done,
}

/// A list of actions running against a copy of data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// Key prefix of this run's actions (`""`, `e0.`, `b1.`, `i3.`).
    pub prefix: String,
    pub source: Source,
    pub parallel: bool,
    /// The data the actions see and their results merge into.
    pub data: Value,
    /// Results merged on their own (a foreach iteration's result).
    pub results: Value,
    pub slots: Vec<Slot>,
}

/// Where a run's action list lives in the current state's definition.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    Operation,
    EventGroup(usize),
    Callback,
    Branch(usize),
    ForEach,
}

/// A unit of concurrent work of a parallel or foreach state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase", try_from = "LaneRepr")]
pub enum Lane {
    NotStarted,
    Actions { run: Run },
    Child { id: String },
    Done { output: Value },
}

/// What the current state is doing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(tag = "kind", rename_all = "camelCase", try_from = "ActivityRepr")]
pub enum Activity {
    #[default]
    Idle,
    /// An event state waiting; `received` lists consumed event names (`exclusive: false`).
    AwaitEvents {
        received: Vec<String>,
    },
    /// An event state running groups of actions (`groups` still to run after `run`).
    EventActions {
        run: Run,
        groups: Vec<usize>,
    },
    Operation {
        run: Run,
    },
    SwitchWait,
    Delay,
    Parallel {
        lanes: Vec<Lane>,
        finished: Vec<usize>,
    },
    Subflow {
        child: String,
    },
    ForEach {
        items: Vec<Value>,
        lanes: Vec<Lane>,
    },
    CallbackAction {
        run: Run,
    },
    CallbackWait,
    /// An Amazon States Language machine's run (all of it: the language has its own threads).
    Machine {
        machine: Box<super::asl::thread::MachineRun>,
    },
    /// A Lambda durable function's execution (its operations and invocations).
    Durable {
        durable: Box<super::durable::run::Run>,
    },
    /// An Amazon SWF execution's run (its history and what is open in it).
    Swf {
        swf: Box<super::swf::execution::Execution>,
    },
    /// An Amazon SWF domain's registry.
    SwfDomain {
        domain: Box<crate::swf::registry::Domain>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum SlotTag {
    Pending,
    Invoked,
    AwaitingEvent,
    RetryWait,
    Done,
}

#[derive(Deserialize)]
struct SlotRepr {
    status: SlotTag,
    attempt: Option<u32>,
    event: Option<String>,
}

impl TryFrom<SlotRepr> for Slot {
    type Error = MissingField;

    fn try_from(r: SlotRepr) -> Result<Slot, MissingField> {
        Ok(match r.status {
            SlotTag::Pending => Slot::Pending,
            SlotTag::Invoked => Slot::Invoked {
                attempt: need(r.attempt, "invoked", "attempt")?,
            },
            SlotTag::AwaitingEvent => Slot::AwaitingEvent {
                attempt: need(r.attempt, "awaitingEvent", "attempt")?,
                event: need(r.event, "awaitingEvent", "event")?,
            },
            SlotTag::RetryWait => Slot::RetryWait {
                attempt: need(r.attempt, "retryWait", "attempt")?,
            },
            SlotTag::Done => Slot::Done,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum LaneTag {
    NotStarted,
    Actions,
    Child,
    Done,
}

#[derive(Deserialize)]
struct LaneRepr {
    kind: LaneTag,
    run: Option<Run>,
    id: Option<String>,
    /// `Done`'s output, which may be `null`: present or not is told by the tag.
    #[serde(default)]
    output: Value,
}

impl TryFrom<LaneRepr> for Lane {
    type Error = MissingField;

    fn try_from(r: LaneRepr) -> Result<Lane, MissingField> {
        Ok(match r.kind {
            LaneTag::NotStarted => Lane::NotStarted,
            LaneTag::Actions => Lane::Actions {
                run: need(r.run, "actions", "run")?,
            },
            LaneTag::Child => Lane::Child {
                id: need(r.id, "child", "id")?,
            },
            LaneTag::Done => Lane::Done { output: r.output },
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum ActivityTag {
    Idle,
    AwaitEvents,
    EventActions,
    Operation,
    SwitchWait,
    Delay,
    Parallel,
    Subflow,
    ForEach,
    CallbackAction,
    CallbackWait,
    Machine,
    Durable,
    Swf,
    SwfDomain,
}

#[derive(Deserialize)]
struct ActivityRepr {
    kind: ActivityTag,
    received: Option<Vec<String>>,
    run: Option<Run>,
    groups: Option<Vec<usize>>,
    lanes: Option<Vec<Lane>>,
    finished: Option<Vec<usize>>,
    child: Option<String>,
    items: Option<Vec<Value>>,
    machine: Option<Box<super::asl::thread::MachineRun>>,
    durable: Option<Box<super::durable::run::Run>>,
    swf: Option<Box<super::swf::execution::Execution>>,
    domain: Option<Box<crate::swf::registry::Domain>>,
}

impl TryFrom<ActivityRepr> for Activity {
    type Error = MissingField;

    fn try_from(r: ActivityRepr) -> Result<Activity, MissingField> {
        Ok(match r.kind {
            ActivityTag::Idle => Activity::Idle,
            ActivityTag::AwaitEvents => Activity::AwaitEvents {
                received: need(r.received, "awaitEvents", "received")?,
            },
            ActivityTag::EventActions => Activity::EventActions {
                run: need(r.run, "eventActions", "run")?,
                groups: need(r.groups, "eventActions", "groups")?,
            },
            ActivityTag::Operation => Activity::Operation {
                run: need(r.run, "operation", "run")?,
            },
            ActivityTag::SwitchWait => Activity::SwitchWait,
            ActivityTag::Delay => Activity::Delay,
            ActivityTag::Parallel => Activity::Parallel {
                lanes: need(r.lanes, "parallel", "lanes")?,
                finished: need(r.finished, "parallel", "finished")?,
            },
            ActivityTag::Subflow => Activity::Subflow {
                child: need(r.child, "subflow", "child")?,
            },
            ActivityTag::ForEach => Activity::ForEach {
                items: need(r.items, "forEach", "items")?,
                lanes: need(r.lanes, "forEach", "lanes")?,
            },
            ActivityTag::CallbackAction => Activity::CallbackAction {
                run: need(r.run, "callbackAction", "run")?,
            },
            ActivityTag::CallbackWait => Activity::CallbackWait,
            ActivityTag::Machine => Activity::Machine {
                machine: need(r.machine, "machine", "machine")?,
            },
            ActivityTag::Durable => Activity::Durable {
                durable: need(r.durable, "durable", "durable")?,
            },
            ActivityTag::Swf => Activity::Swf {
                swf: need(r.swf, "swf", "swf")?,
            },
            ActivityTag::SwfDomain => Activity::SwfDomain {
                domain: need(r.domain, "swfDomain", "domain")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every variant reads back what it wrote, through the flat structs.
    #[test]
    fn every_variant_round_trips() {
        let run = Run {
            prefix: "e0.".into(),
            source: Source::EventGroup(1),
            parallel: true,
            data: json!({"a": [1, 2]}),
            results: Value::Null,
            slots: vec![
                Slot::Pending,
                Slot::Invoked { attempt: 2 },
                Slot::AwaitingEvent {
                    attempt: 0,
                    event: "E".into(),
                },
                Slot::RetryWait { attempt: 1 },
                Slot::Done,
            ],
        };
        let lanes = vec![
            Lane::NotStarted,
            Lane::Actions { run: run.clone() },
            Lane::Child { id: "c".into() },
            Lane::Done {
                output: Value::Null,
            },
            Lane::Done {
                output: json!({"x": 1}),
            },
        ];
        let all = vec![
            Activity::Idle,
            Activity::AwaitEvents {
                received: vec!["A".into()],
            },
            Activity::EventActions {
                run: run.clone(),
                groups: vec![1, 2],
            },
            Activity::Operation { run: run.clone() },
            Activity::SwitchWait,
            Activity::Delay,
            Activity::Parallel {
                lanes: lanes.clone(),
                finished: vec![0],
            },
            Activity::Subflow { child: "c".into() },
            Activity::ForEach {
                items: vec![json!(1)],
                lanes,
            },
            Activity::CallbackAction { run },
            Activity::CallbackWait,
            Activity::Machine {
                machine: Box::new(super::super::asl::thread::MachineRun {
                    input: json!([1]),
                    started: "2026-01-01T00:00:00.000Z".into(),
                    root: super::super::asl::thread::Thread {
                        state: "P".into(),
                        visit: 1,
                        entered: "2026-01-01T00:00:00.000Z".into(),
                        input: json!({}),
                        attempt: 0,
                        retries: vec![],
                        doing: super::super::asl::thread::Doing::Fork {
                            lanes: vec![
                                super::super::asl::thread::Lane::Waiting { input: json!(1) },
                                super::super::asl::thread::Lane::Done { output: json!(2) },
                            ],
                            limit: 1,
                            tolerate: Some(super::super::asl::thread::Tolerated {
                                count: Some(1),
                                percentage: None,
                                failed: 1,
                            }),
                        },
                        vars: json!({"x": [1]}).as_object().cloned().unwrap_or_default(),
                    },
                }),
            },
        ];
        for a in all {
            let text = serde_json::to_string(&a).unwrap();
            assert_eq!(
                serde_json::from_str::<Activity>(&text).unwrap(),
                a,
                "{text}"
            );
        }
    }

    /// The stored shape is the internally tagged one, and a field its tag needs is required.
    #[test]
    fn the_shape_is_internally_tagged_and_fields_are_checked() {
        let v = serde_json::to_value(Activity::Subflow { child: "c".into() }).unwrap();
        assert_eq!(v, json!({"kind": "subflow", "child": "c"}));
        let e = serde_json::from_value::<Activity>(json!({"kind": "subflow"})).unwrap_err();
        assert!(e.to_string().contains("missing field `child`"), "{e}");
        assert!(serde_json::from_value::<Activity>(json!({"kind": "nope"})).is_err());
        let slot: Slot =
            serde_json::from_value(json!({"status": "invoked", "attempt": 3})).unwrap();
        assert_eq!(slot, Slot::Invoked { attempt: 3 });
    }
}
