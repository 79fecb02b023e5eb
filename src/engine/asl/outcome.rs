//! What a state did (its [`Outcome`]) and how a thread stands after following it ([`Ended`]).

use crate::asl::data::Failure;
use crate::asl::model::{Flow, State};
use serde_json::Value;

/// What a state did when it was entered or when an input reached it.
#[derive(Debug)]
pub enum Outcome {
    /// It waits for a call, a timer or an event.
    Waiting,
    /// It is done: go on with this output.
    Go(Flow, Value),
    /// It failed.
    Error(Fault),
    /// A Parallel or Map state whose lanes may have changed: start the waiting ones, and
    /// finish the state if every lane is done (`flow` does it).
    Lanes,
}

/// A state's error, and whether a branch or iteration raised it (`States.BranchFailed`
/// matches those).
#[derive(Debug)]
pub struct Fault {
    pub failure: Failure,
    pub branch: bool,
}

impl Outcome {
    pub fn error(failure: Failure) -> Outcome {
        Outcome::Error(Fault {
            failure,
            branch: false,
        })
    }
}

/// How a thread stands after settling.
#[derive(Debug)]
pub enum Ended {
    No,
    Output(Value),
    Failed(Failure),
}

/// The state is done with `output`: its `Next` (or the end).
pub fn go(st: &State, output: Value) -> Outcome {
    Outcome::Go(st.flow.clone().unwrap_or(Flow::End), output)
}
