//! A running machine as stored data: the machine's run (its input and start time) and its
//! threads of control. The root thread walks the machine's states; a Parallel or Map state
//! holds one lane per branch or item, each a thread of its own over the branch's (or
//! iterator's) states. Plain serde data, part of the instance record.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A machine's run: what the context object's `Execution` shows, and the root thread.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineRun {
    /// The execution's input (`$$.Execution.Input`).
    pub input: Value,
    /// When it started, RFC 3339 (`$$.Execution.StartTime`).
    pub started: String,
    pub root: Thread,
}

/// One thread of control: the state it is in and what that state is doing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    pub state: String,
    /// The instance-wide visit number of this entry into the state: the middle part of every
    /// call key and timer id it makes, so inputs find their thread and stale ones are told.
    pub visit: u64,
    /// When the state was entered, RFC 3339 (`$$.State.EnteredTime`).
    pub entered: String,
    /// The state's raw input.
    pub input: Value,
    /// Which attempt of the state's work this is (0: the first; `$$.State.RetryCount`).
    pub attempt: u32,
    /// Retries used so far by each of the state's retriers, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<u32>,
    pub doing: Doing,
    /// The variables this thread sees (`Assign`): a lane starts with a copy of its fork's,
    /// which cannot change while it runs, and its own are gone when it ends.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub vars: Map<String, Value>,
}

/// What the current state is doing while its thread waits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Doing {
    /// Nothing yet (the state is being entered).
    Entering,
    /// A Task's call is out (answered by its result, or by a token event).
    Call,
    /// A `.waitForTaskToken` Task: its event was sent; waiting for the token's answer.
    Token,
    /// A Wait state's timer is armed.
    Wait,
    /// Waiting for the retry timer before the next attempt.
    Retry,
    /// A Parallel state's branches or a Map state's items.
    Fork {
        lanes: Vec<Lane>,
        /// Map: at most this many lanes run at once (0: no limit).
        #[serde(default)]
        limit: u64,
        /// Map with `ToleratedFailure...`: what it tolerates and how many have failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tolerate: Option<Tolerated>,
    },
}

/// A Map's tolerated failures, read when it starts, and the failures so far.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Tolerated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage: Option<f64>,
    pub failed: u64,
}

impl Tolerated {
    /// Whether the failures so far, of `total` iterations, are more than it tolerates.
    pub fn exceeded(&self, total: usize) -> bool {
        let over_count = self.count.is_some_and(|c| self.failed > c);
        let over_share = self
            .percentage
            .is_some_and(|p| total > 0 && (self.failed as f64) * 100.0 / (total as f64) > p);
        over_count || over_share
    }
}

/// A branch or an item of a fork.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Lane {
    /// Not started yet (a Map over `MaxConcurrency`): the iteration's input.
    Waiting {
        input: Value,
    },
    Running {
        thread: Box<Thread>,
    },
    Done {
        output: Value,
    },
}

impl Thread {
    /// A thread not in any state yet (`flow::enter` fills it in).
    pub fn blank() -> Thread {
        Thread {
            state: String::new(),
            visit: 0,
            entered: String::new(),
            input: Value::Null,
            attempt: 0,
            retries: Vec::new(),
            doing: Doing::Entering,
            vars: Map::new(),
        }
    }

    /// Every thread from this one down (this first).
    pub fn walk(&self) -> Vec<&Thread> {
        let mut out = vec![self];
        if let Doing::Fork { lanes, .. } = &self.doing {
            for l in lanes {
                if let Lane::Running { thread } = l {
                    out.extend(thread.walk());
                }
            }
        }
        out
    }
}
