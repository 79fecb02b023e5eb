//! The working context of one `apply` on a machine: the instance, the actions so far, the
//! clock reading, and what every state needs (timers, the context object, ending the run).

use super::keys;
use super::thread::Thread;
use crate::asl::data::Failure;
use crate::asl::model::ContextUse;
use crate::asl::path::Scope;
use crate::asl::Machine;
use crate::engine::instance::{ErrorInfo, Instance, Status};
use crate::engine::{timers, Action, Limits};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};

/// Working context of one `apply`.
pub(crate) struct Cx<'a> {
    pub m: &'a Machine,
    /// The instance, its activity taken out while the threads run.
    pub inst: Instance,
    pub now: DateTime<Utc>,
    pub out: Vec<Action>,
    /// The states entered during this apply, in order.
    pub path: Vec<String>,
    pub entered: u32,
    pub limits: Limits,
    /// The variables of the threads above the one being run, outermost first: a Parallel
    /// branch or Map iteration reads them (they cannot change while it runs) and stores only
    /// its own.
    pub outer: Vec<Map<String, Value>>,
    /// `$$.Execution.Input` and `.StartTime`.
    pub input: Value,
    pub started: String,
}

impl Cx<'_> {
    pub fn stamp(&self) -> String {
        self.now.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub fn arm(&mut self, id: String, due: DateTime<Utc>) {
        timers::arm(&mut self.inst, &mut self.out, id, due);
    }

    pub fn disarm(&mut self, id: &str) {
        timers::disarm(&mut self.inst, &mut self.out, id);
    }

    /// Disarms every timer of `th` and of the threads below it (a state left, a fork's
    /// lanes stopped).
    pub fn quiet(&mut self, th: &Thread) {
        let visits: std::collections::HashSet<u64> = th.walk().iter().map(|t| t.visit).collect();
        let mine: Vec<String> = self
            .inst
            .timers
            .iter()
            .filter(|id| {
                keys::parse_timer(&self.inst.id, id).is_some_and(|(v, _, _)| visits.contains(&v))
            })
            .cloned()
            .collect();
        for id in mine {
            self.disarm(&id);
        }
    }

    /// What the paths of a state of `th` read besides its data: the context object (`$$`;
    /// `null` when no path of the machine reads it, without `Execution.Input` (a copy of the
    /// run's input) when none can reach that), the thread's variables, and the seed of its
    /// visit and attempt.
    pub fn context(&self, th: &Thread) -> Scope {
        let seed = format!("{}/{}/{}", self.inst.id, th.visit, th.attempt);
        let input = match self.m.context {
            ContextUse::None => {
                return Scope {
                    context: Value::Null,
                    vars: self.vars(th),
                    seed,
                    states: Value::Null,
                    now: self.now,
                }
            }
            ContextUse::WithoutInput => Value::Null,
            ContextUse::Full => self.input.clone(),
        };
        let context = json!({
            "Execution": {
                "Id": self.inst.id,
                "Name": self.inst.id,
                "Input": input,
                "StartTime": self.started,
            },
            "StateMachine": {"Id": self.inst.workflow_id, "Name": self.inst.workflow_id},
            "State": {"Name": th.state, "EnteredTime": th.entered, "RetryCount": th.attempt},
        });
        let states = if self.m.jsonata {
            json!({"input": th.input, "context": context})
        } else {
            Value::Null
        };
        Scope {
            context,
            vars: self.vars(th),
            seed,
            states,
            now: self.now,
        }
    }

    /// The variables `th` sees: the outer threads', then its own.
    fn vars(&self, th: &Thread) -> Map<String, Value> {
        let mut all = Map::new();
        for scope in &self.outer {
            all.extend(scope.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        all.extend(th.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }

    /// Disarms every timer of the run (it ends: the machine's deadline among them).
    pub fn disarm_all(&mut self) {
        timers::disarm_all(&mut self.inst, &mut self.out);
    }

    /// Ends the run: the machine's output.
    pub fn complete(&mut self, output: Value) {
        self.disarm_all();
        self.inst.status = Status::Completed;
        self.inst.output = Some(output.clone());
        self.out.push(Action::Complete { output });
    }

    /// Ends the run failed: every timer goes.
    pub fn fail(&mut self, f: Failure) {
        self.disarm_all();
        let error = ErrorInfo::new(f.error, f.cause);
        self.inst.status = Status::Failed;
        self.inst.error = Some(error.clone());
        self.out.push(Action::Fail { error });
    }
}
