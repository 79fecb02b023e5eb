//! An instance's timers: the set the instance keeps and the actions that arm and cancel them,
//! always changed together (both languages' interpreters go through here).

use super::instance::Instance;
use super::Action;
use chrono::{DateTime, Utc};

pub fn arm(inst: &mut Instance, out: &mut Vec<Action>, id: String, due: DateTime<Utc>) {
    inst.timers.insert(id.clone());
    out.push(Action::ArmTimer { id, due });
}

/// Cancels timer `id` if it is armed.
pub fn disarm(inst: &mut Instance, out: &mut Vec<Action>, id: &str) {
    if inst.timers.remove(id) {
        out.push(Action::CancelTimer { id: id.to_string() });
    }
}

/// Cancels every armed timer.
pub fn disarm_all(inst: &mut Instance, out: &mut Vec<Action>) {
    for id in std::mem::take(&mut inst.timers) {
        out.push(Action::CancelTimer { id });
    }
}
