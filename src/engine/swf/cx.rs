//! The working context of one input: the instance, its execution taken out of it, the
//! actions so far. Recording an event that wakes the decider schedules a decision task, or
//! marks one due once the current task completes (one decision task at a time).

use super::execution::{CloseStatus, DecisionTask, Execution};
use super::SwfError;
use crate::engine::instance::{Activity, ErrorInfo, Instance, Status};
use crate::engine::{timers, Action, EngineError, Step};
use crate::swf::history::{attrs, wakes_decider, HistoryEvent};
use crate::swf::task::{TaskKind, TaskQueue};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

pub struct Cx {
    pub inst: Instance,
    pub exec: Execution,
    pub now: DateTime<Utc>,
    pub out: Vec<Action>,
    /// A decision task's decisions are being carried out: events they record schedule the
    /// next decision task after all of them.
    pub deciding: bool,
    /// The events before this input (the ones after it are what it recorded).
    from: usize,
    /// The run closed during this input (its parent and children are told).
    pub closed_now: bool,
}

impl Cx {
    pub fn new(inst: Instance, exec: Execution, now: DateTime<Utc>) -> Cx {
        Cx {
            from: exec.events.len(),
            closed_now: false,
            inst,
            exec,
            now,
            out: Vec::new(),
            deciding: false,
        }
    }

    /// The execution held by `inst`.
    pub fn load(mut inst: Instance, now: DateTime<Utc>) -> Result<Cx, EngineError> {
        match std::mem::take(&mut inst.activity) {
            Activity::Swf { swf } => Ok(Cx::new(inst, *swf, now)),
            _ => Err(EngineError::NotStarted(inst.id.clone())),
        }
    }

    /// Appends an event; returns its id.
    pub fn record(&mut self, kind: &str, pairs: Vec<(&str, Value)>) -> i64 {
        self.record_map(kind, attrs(pairs))
    }

    pub fn record_map(&mut self, kind: &str, attrs: Map<String, Value>) -> i64 {
        let id = self.exec.events.len() as i64 + 1;
        self.exec.events.push(HistoryEvent {
            id,
            at: self.now,
            kind: kind.to_string(),
            attrs,
        });
        if wakes_decider(kind) && self.exec.is_open() {
            self.wake();
        }
        id
    }

    /// Something new for the decider: a decision task now, or after the current one.
    pub fn wake(&mut self) {
        match self.exec.decision {
            DecisionTask::None if !self.deciding => self.schedule_decision(),
            DecisionTask::Scheduled { .. } => {}
            _ => self.exec.decide_again = true,
        }
    }

    fn schedule_decision(&mut self) {
        // the new task shows the decider everything recorded so far
        self.exec.decide_again = false;
        let scheduled = self.record(
            "DecisionTaskScheduled",
            vec![
                ("taskList", json!({"name": self.exec.task_list})),
                ("taskPriority", json!(self.exec.task_priority)),
                ("startToCloseTimeout", json!(self.exec.task_timeout.wire())),
            ],
        );
        self.exec.decision = DecisionTask::Scheduled { scheduled };
        let queue = TaskQueue {
            kind: TaskKind::Decision,
            domain: self.exec.domain.clone(),
            list: self.exec.task_list.clone(),
        };
        self.out.push(Action::Offer { queue, scheduled });
    }

    /// Schedules the decision task that came due while another was open.
    pub fn settle(&mut self) {
        self.deciding = false;
        if self.exec.is_open() && self.exec.decision == DecisionTask::None && self.exec.decide_again
        {
            self.exec.decide_again = false;
            self.schedule_decision();
        }
    }

    /// The id of this execution's timer `what` (`wf`, `d5`, `a7/s2s`, `t/<timerId>`).
    pub fn timer_id(&self, what: &str) -> String {
        format!("{}/swf/{what}", self.inst.id)
    }

    pub fn arm(&mut self, what: &str, secs: u64) {
        let id = self.timer_id(what);
        let due = self.now + chrono::Duration::seconds(secs.min(i64::MAX as u64 / 1000) as i64);
        timers::arm(&mut self.inst, &mut self.out, id, due);
    }

    pub fn arm_at(&mut self, what: &str, due: DateTime<Utc>) {
        let id = self.timer_id(what);
        timers::arm(&mut self.inst, &mut self.out, id, due);
    }

    pub fn disarm(&mut self, what: &str) {
        let id = self.timer_id(what);
        timers::disarm(&mut self.inst, &mut self.out, &id);
    }

    /// Closes the run: everything armed is cancelled and the instance ends as `status` says.
    pub fn close(&mut self, status: CloseStatus, output: Option<&str>, error: Option<ErrorInfo>) {
        self.exec.closed = Some((self.now, status));
        self.closed_now = true;
        self.exec.decision = DecisionTask::None;
        self.exec.decide_again = false;
        timers::disarm_all(&mut self.inst, &mut self.out);
        let output = output.map(|t| Value::String(t.to_string()));
        match status {
            CloseStatus::Completed | CloseStatus::ContinuedAsNew => {
                let output = output.unwrap_or(Value::Null);
                self.inst.status = Status::Completed;
                self.inst.output = Some(output.clone());
                self.out.push(Action::Complete { output });
            }
            CloseStatus::Terminated => {
                let output = output.unwrap_or(Value::Null);
                self.inst.status = Status::Terminated;
                self.inst.output = Some(output.clone());
                self.out.push(Action::Terminate { output });
            }
            CloseStatus::Canceled => {
                self.inst.status = Status::Cancelled;
                self.out.push(Action::Cancelled);
            }
            CloseStatus::Failed | CloseStatus::TimedOut => {
                let error = error.unwrap_or_else(|| ErrorInfo::new(status.as_str(), ""));
                self.inst.status = Status::Failed;
                self.inst.error = Some(error.clone());
                self.out.push(Action::Fail { error });
            }
        }
    }

    /// The next instance and its actions.
    pub fn finish(mut self) -> Step {
        self.inst.visit = self.exec.events.len() as u64;
        self.inst.state = self.exec.events.last().map(|e| e.kind.clone());
        if self.exec.is_open() {
            let busy = self.exec.decision != DecisionTask::None || !self.exec.activities.is_empty();
            self.inst.status = if busy {
                Status::Running
            } else {
                Status::Waiting
            };
        }
        let entered = self.exec.events[self.from.min(self.exec.events.len())..]
            .iter()
            .map(|e| e.kind.clone())
            .collect();
        self.inst.activity = Activity::Swf {
            swf: Box::new(self.exec),
        };
        Step {
            instance: self.inst,
            actions: self.out,
            entered,
        }
    }

    /// `UnknownResourceFault` for a task this execution no longer has open.
    pub fn unknown(&self, what: &str) -> EngineError {
        SwfError::UnknownResource(format!(
            "Unknown {what} for execution {{workflowId: {}, runId: {}}}: the task finished, \
             timed out or was never handed out",
            self.exec.workflow_id, self.exec.run_id
        ))
        .into()
    }
}
