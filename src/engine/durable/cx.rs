//! The working context of one apply: the execution's record taken out of the instance,
//! the actions collected, and the moves every other file makes (touching an operation,
//! timers, finishing the execution).

use super::keys::{self, Timer};
use super::run::{new_op, Op, Run};
use crate::durable::arn;
use crate::durable::wire::{ErrorObject, ExecutionDetails, OpStatus, OpType};
use crate::durable::Function;
use crate::engine::instance::{Activity, ErrorInfo, Instance, Status};
use crate::engine::{timers, Action, Step};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// The error name an execution that ran past its `executionTimeout` fails with.
pub const EXECUTION_TIMEOUT: &str = "Execution.Timeout";
/// The error name a stopped execution reports.
pub const STOPPED: &str = "Execution.Stopped";

pub(super) struct Cx<'a> {
    pub f: &'a Function,
    pub inst: Instance,
    pub now: DateTime<Utc>,
    pub run: Run,
    pub out: Vec<Action>,
    /// What the instance's path records (the operations started during this apply).
    pub path: Vec<String>,
}

impl<'a> Cx<'a> {
    /// A new execution of `f` with `input`: its EXECUTION operation (id = the ARN's last
    /// segment, as the SDKs require), the input as a JSON string, the deadline armed.
    pub fn start(f: &'a Function, mut inst: Instance, now: DateTime<Utc>, input: Value) -> Cx<'a> {
        let name = inst.id.replace('/', "_");
        let arn = arn::execution_arn(&f.id, &name, &inst.id);
        let mut exec = new_op(&name, OpType::Execution, OpStatus::Started, now);
        exec.name = Some(name.clone());
        exec.execution_details = Some(ExecutionDetails {
            input_payload: Some(input.to_string()),
        });
        inst.data = input;
        let run = Run {
            name,
            arn,
            function: f.function.clone(),
            ops: vec![Op {
                op: exec,
                touched: 1,
            }],
            seq: 1,
            seen: 0,
            token: 0,
            invocations: 0,
            invoking: None,
            failures: 0,
            children: Default::default(),
            heartbeats: Default::default(),
            last: None,
        };
        let mut cx = Cx::new(f, inst, now, run);
        let deadline = now + Duration::seconds(f.execution_timeout as i64);
        cx.arm(&Timer::Deadline, deadline);
        cx
    }

    pub fn new(f: &'a Function, inst: Instance, now: DateTime<Utc>, run: Run) -> Cx<'a> {
        Cx {
            f,
            inst,
            now,
            run,
            out: Vec::new(),
            path: Vec::new(),
        }
    }

    pub fn arm(&mut self, t: &Timer, due: DateTime<Utc>) {
        let id = keys::timer(&self.inst.id, t);
        timers::arm(&mut self.inst, &mut self.out, id, due);
    }

    pub fn disarm(&mut self, t: &Timer) {
        let id = keys::timer(&self.inst.id, t);
        timers::disarm(&mut self.inst, &mut self.out, &id);
    }

    /// Disarms every timer of operation `op`.
    pub fn quiet(&mut self, op: &str) {
        let prefix = format!("{}/op/{op}/", self.inst.id);
        let ids: Vec<String> = self
            .inst
            .timers
            .iter()
            .filter(|t| t.starts_with(&prefix))
            .cloned()
            .collect();
        for id in ids {
            timers::disarm(&mut self.inst, &mut self.out, &id);
        }
    }

    /// Sets operation `i`'s final status now.
    pub fn end(&mut self, i: usize, status: OpStatus) {
        let op = &mut self.run.ops[i].op;
        op.status = status;
        if op.end_timestamp.is_none() {
            op.end_timestamp = Some(self.now);
        }
        self.run.touch(i);
    }

    /// The execution succeeded with `result` (the handler's JSON text; a non-JSON text is
    /// kept as a string).
    pub fn complete(&mut self, result: Option<String>) {
        let output = match &result {
            Some(text) if !text.is_empty() => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
            _ => Value::Null,
        };
        self.close(OpStatus::Succeeded);
        self.inst.status = Status::Completed;
        self.inst.output = Some(output.clone());
        self.out.push(Action::Complete { output });
    }

    /// The execution failed with `error` (its `ErrorType` is the error's name).
    pub fn fail(&mut self, error: &ErrorObject, status: OpStatus) {
        self.close(status);
        let info = info_of(error, "Error");
        self.inst.status = Status::Failed;
        self.inst.error = Some(info.clone());
        self.out.push(Action::Fail { error: info });
    }

    /// Ends the EXECUTION operation and everything still armed.
    pub fn close(&mut self, status: OpStatus) {
        self.end(0, status);
        timers::disarm_all(&mut self.inst, &mut self.out);
        self.run.invoking = None;
        for child in std::mem::take(&mut self.inst.children) {
            self.out.push(Action::CancelChild { id: child });
        }
    }

    pub fn finish(mut self) -> Step {
        self.inst.visit = self.run.invocations.max(1);
        if let Some(o) = self
            .run
            .ops
            .iter()
            .rev()
            .find(|o| o.op.op_type != OpType::Execution)
        {
            self.inst.state = Some(o.op.name.clone().unwrap_or_else(|| o.op.id.clone()));
        } else {
            self.inst.state = Some("Execution".into());
        }
        self.inst.activity = Activity::Durable {
            durable: Box::new(self.run),
        };
        Step {
            instance: self.inst,
            actions: self.out,
            entered: self.path,
        }
    }
}

/// An error object as the instance reports it: `ErrorType` as the name.
pub fn info_of(e: &ErrorObject, default: &str) -> ErrorInfo {
    ErrorInfo {
        name: e.error_type.clone().unwrap_or_else(|| default.to_string()),
        message: e.error_message.clone().unwrap_or_default(),
        trace: e.stack_trace.join("\n"),
    }
}

/// An error of the instance's as a Lambda error object.
pub fn object_of(e: &ErrorInfo) -> ErrorObject {
    ErrorObject {
        error_type: Some(e.name.clone()),
        error_message: Some(e.message.clone()),
        error_data: None,
        stack_trace: e
            .trace
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect(),
    }
}
