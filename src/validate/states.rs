//! Per-state checks: the shared fields, then what each state type requires.

use super::checks;
use super::Cx;
use crate::model::{Action, CompletionType, EventDataFilter, EventKind, State};

pub fn state(cx: &mut Cx, at: &str, s: &State) {
    let c = s.common();
    if c.name.trim().is_empty() {
        cx.err(
            format!("{at}.name"),
            "the state `name` is empty: name the state",
        );
    }
    if let Some(st) = c.start {
        checks::start(cx, &format!("{at}.start"), st);
        if let State::Event(e) = s {
            checks::cron_ticks(cx, st, e);
        }
    }
    if let Some(f) = c.state_data_filter {
        checks::state_data_filter(cx, &format!("{at}.stateDataFilter"), f);
    }
    for (i, e) in c.on_error.iter().enumerate() {
        checks::on_error(cx, &format!("{at}.onError[{i}]"), e);
    }
    for (i, r) in c.retry.iter().enumerate() {
        checks::retry(cx, &format!("{at}.retry[{i}]"), r);
    }
    let is_switch = matches!(s, State::Switch(_));
    match (c.transition, c.end) {
        (Some(_), Some(_)) if !is_switch => cx.err(
            format!("{at}.end"),
            "a state has either `transition` or `end`, not both: remove one",
        ),
        (None, None) if !is_switch => cx.err(
            format!("{at}.transition"),
            format!(
                "state {:?} has no `transition` and no `end`: add `transition: {{nextState: ...}}` or `end: {{kind: default}}`",
                c.name
            ),
        ),
        _ => {}
    }
    if let Some(t) = c.transition {
        checks::transition(cx, &format!("{at}.transition"), t);
    }
    if let Some(e) = c.end {
        if is_switch {
            cx.err(
                format!("{at}.end"),
                "a switch state cannot be an end state: route its conditions and `default` to a state that ends",
            );
        } else {
            checks::end(cx, &format!("{at}.end"), e);
        }
    }
    match s {
        State::Event(e) => {
            if e.events_actions.is_empty() {
                cx.err(
                    format!("{at}.eventsActions"),
                    "an event state needs at least one `eventsActions` entry",
                );
            }
            for (i, ea) in e.events_actions.iter().enumerate() {
                let eat = format!("{at}.eventsActions[{i}]");
                if ea.event_refs.is_empty() {
                    cx.err(
                        format!("{eat}.eventRefs"),
                        "`eventRefs` is empty: name at least one consumed event",
                    );
                }
                for (j, r) in ea.event_refs.iter().enumerate() {
                    cx.event_ref(&format!("{eat}.eventRefs[{j}]"), r, EventKind::Consumed);
                }
                actions(cx, &format!("{eat}.actions"), &ea.actions);
                if let Some(f) = &ea.event_data_filter {
                    event_data_filter(cx, &format!("{eat}.eventDataFilter"), f);
                }
            }
            if let Some(t) = &e.timeout {
                cx.written(&format!("{at}.timeout"), t);
            }
        }
        State::Operation(o) => {
            if o.actions.is_empty() {
                cx.warn(
                    format!("{at}.actions"),
                    "an operation state without actions only passes its data on",
                );
            }
            actions(cx, &format!("{at}.actions"), &o.actions);
        }
        State::Switch(sw) => {
            match (&sw.data_conditions, &sw.event_conditions) {
                (Some(_), Some(_)) => cx.err(at, "a switch state has either `dataConditions` or `eventConditions`, not both"),
                (None, None) => cx.err(at, "a switch state needs `dataConditions` or `eventConditions`"),
                (None, Some(_)) if sw.event_timeout.is_none() => cx.err(
                    format!("{at}.eventTimeout"),
                    "`eventConditions` need an `eventTimeout` (e.g. \"PT15M\"); `default` is taken when it expires",
                ),
                _ => {}
            }
            for (i, d) in sw.data_conditions.iter().flatten().enumerate() {
                let dat = format!("{at}.dataConditions[{i}]");
                cx.expr(&format!("{dat}.condition"), &d.condition);
                checks::transition(cx, &format!("{dat}.transition"), &d.transition);
            }
            for (i, e) in sw.event_conditions.iter().flatten().enumerate() {
                let eat = format!("{at}.eventConditions[{i}]");
                cx.event_ref(
                    &format!("{eat}.eventRef"),
                    &e.event_ref,
                    EventKind::Consumed,
                );
                checks::transition(cx, &format!("{eat}.transition"), &e.transition);
                if let Some(f) = &e.event_data_filter {
                    event_data_filter(cx, &format!("{eat}.eventDataFilter"), f);
                }
            }
            if let Some(t) = &sw.event_timeout {
                cx.written(&format!("{at}.eventTimeout"), t);
            }
            match &sw.default {
                Some(d) => checks::transition(cx, &format!("{at}.default"), d),
                None => cx.err(
                    format!("{at}.default"),
                    "a switch state needs a `default` transition, taken when no condition matches or the event timeout expires",
                ),
            }
        }
        State::Delay(d) => cx.written(&format!("{at}.timeDelay"), &d.time_delay),
        State::Parallel(p) => {
            if p.branches.is_empty() {
                cx.err(
                    format!("{at}.branches"),
                    "a parallel state needs at least one branch",
                );
            }
            for (i, b) in p.branches.iter().enumerate() {
                let bat = format!("{at}.branches[{i}]");
                match (&b.actions, &b.workflow_id) {
                    (Some(a), None) => actions(cx, &format!("{bat}.actions"), a),
                    (None, Some(w)) if !w.trim().is_empty() => {}
                    (Some(_), Some(_)) => cx.err(
                        &bat,
                        "a branch has either `actions` or `workflowId`, not both",
                    ),
                    _ => cx.err(&bat, "a branch needs `actions` or a `workflowId` to run"),
                }
            }
            match (p.completion_type, p.n) {
                (CompletionType::NOfM, None) => cx.err(
                    format!("{at}.n"),
                    "`completionType: n_of_m` needs `n`, the number of branches to wait for",
                ),
                (CompletionType::NOfM, Some(n)) if n.0 == 0 || n.0 as usize > p.branches.len() => {
                    cx.err(
                        format!("{at}.n"),
                        format!(
                            "`n` is {} but must be between 1 and the number of branches ({})",
                            n.0,
                            p.branches.len()
                        ),
                    )
                }
                (CompletionType::And | CompletionType::Xor, Some(_)) => cx.warn(
                    format!("{at}.n"),
                    "`n` is ignored unless `completionType: n_of_m`",
                ),
                _ => {}
            }
        }
        State::Subflow(sf) => {
            if sf.workflow_id.trim().is_empty() {
                cx.err(
                    format!("{at}.workflowId"),
                    "`workflowId` is empty: name the workflow to run",
                );
            }
            if sf.wait_for_completion.is_none() {
                cx.warn(
                    format!("{at}.waitForCompletion"),
                    format!(
                        "subflow state {:?} has no `waitForCompletion`; it waits for its \
                         sub-workflow and merges its output (true); write \
                         `waitForCompletion: false` to continue at once",
                        sf.name
                    ),
                );
            }
        }
        State::Inject(_) => {}
        State::ForEach(f) => {
            cx.expr(&format!("{at}.inputCollection"), &f.input_collection);
            if let Some(o) = &f.output_collection {
                cx.member_path(&format!("{at}.outputCollection"), o);
            }
            if f.iteration_param.trim().is_empty() {
                cx.err(
                    format!("{at}.iterationParam"),
                    "`iterationParam` is empty: name the variable each element is bound to",
                );
            }
            match (&f.actions, &f.workflow_id) {
                (Some(a), None) => actions(cx, &format!("{at}.actions"), a),
                (None, Some(w)) if !w.trim().is_empty() => {}
                (Some(_), Some(_)) => cx.err(
                    at,
                    "a foreach state has either `actions` or `workflowId`, not both",
                ),
                _ => cx.err(
                    format!("{at}.actions"),
                    "a foreach state needs `actions` or a `workflowId` to run per element",
                ),
            }
        }
        State::Callback(cb) => {
            action(cx, &format!("{at}.action"), &cb.action);
            cx.event_ref(
                &format!("{at}.eventRef"),
                &cb.event_ref,
                EventKind::Consumed,
            );
            if let Some(t) = &cb.timeout {
                cx.written(&format!("{at}.timeout"), t);
            }
            if let Some(f) = &cb.event_data_filter {
                event_data_filter(cx, &format!("{at}.eventDataFilter"), f);
            }
        }
    }
}

fn event_data_filter(cx: &mut Cx, at: &str, f: &EventDataFilter) {
    if let Some(p) = &f.data_output_path {
        cx.expr(&format!("{at}.dataOutputPath"), p);
    }
    for (name, v) in [
        ("dataInputPath", &f.data_input_path),
        ("inputPath", &f.input_path),
    ] {
        if let Some(p) = v {
            let path = format!("{at}.{name}");
            cx.warn(&path, format!("an event data filter selects with `dataOutputPath`; `{name}` is read as `dataOutputPath`"));
            if f.data_output_path.is_none() {
                cx.expr(&path, p);
            }
        }
    }
}

fn actions(cx: &mut Cx, at: &str, list: &[Action]) {
    for (i, a) in list.iter().enumerate() {
        action(cx, &format!("{at}[{i}]"), a);
    }
}

fn action(cx: &mut Cx, at: &str, a: &Action) {
    match (&a.function_ref, &a.event_ref) {
        (Some(_), Some(_)) => cx.err(at, "an action has either `functionRef` or `eventRef`, not both"),
        (None, None) => cx.err(at, "an action needs a `functionRef` (call a function) or an `eventRef` (produce an event and wait for its reply)"),
        _ => {}
    }
    if let Some(f) = &a.function_ref {
        cx.function_ref(&format!("{at}.functionRef.refName"), &f.ref_name);
        if let Some(p) = &f.parameters {
            if !p.is_object() {
                cx.err(
                    format!("{at}.functionRef.parameters"),
                    "`parameters` must be an object of parameter names to values",
                );
            }
            cx.templates(&format!("{at}.functionRef.parameters"), p);
        }
    }
    if let Some(e) = &a.event_ref {
        let eat = format!("{at}.eventRef");
        cx.event_ref(
            &format!("{eat}.triggerEventRef"),
            &e.trigger_event_ref,
            EventKind::Produced,
        );
        cx.event_ref(
            &format!("{eat}.resultEventRef"),
            &e.result_event_ref,
            EventKind::Consumed,
        );
        if let Some(d) = &e.data {
            checks::event_data(cx, &format!("{eat}.data"), d);
        }
        if let Some(c) = &e.context_attributes {
            checks::context_attributes(cx, &format!("{eat}.contextAttributes"), c);
        }
    }
    if let Some(t) = &a.timeout {
        cx.written(&format!("{at}.timeout"), t);
    }
    if let Some(f) = &a.action_data_filter {
        if let Some(p) = &f.data_input_path {
            cx.expr(&format!("{at}.actionDataFilter.dataInputPath"), p);
        }
        if let Some(p) = &f.data_results_path {
            cx.expr(&format!("{at}.actionDataFilter.dataResultsPath"), p);
        }
    }
}
