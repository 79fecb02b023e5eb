//! Cron starts, exactly once (SEMANTICS.md "Schedules"; docs/schedules.md).
//!
//! Each scheduled workflow has a `Schedules` record with the last tick that started an
//! instance and one durable timer (`cron SEP workflow`) for its next tick. Firing a tick
//! creates the instance and advances `last_tick` in the same transaction, so a crash can
//! neither lose nor double a tick. Instance ids derive from (workflow, tick), a second guard.
//!
//! Planning happens on start and on every deploy of the workflow:
//! - an unchanged expression continues after `last_tick`; ticks that fell due while the
//!   broker was down (or the file was absent) are *missed* and follow the catch-up policy:
//!   `none` skips them, `one` (default) fires the latest, `all` fires them oldest first, at
//!   most `schedules.max_catch_up` (the oldest beyond that are skipped);
//! - a changed expression or zone starts from its next tick after now (no catch-up);
//! - a deleted workflow keeps its record (so a re-added file resumes without re-firing) and
//!   loses its timer.
//!
//! Daylight saving: ticks are computed in the schedule's zone by croner. A local time that
//! does not exist (spring-forward gap) fires once at the first instant after the gap; a local
//! time that occurs twice (fall-back) fires once, at its first occurrence (see
//! docs/schedules.md and the tests in tests/schedules.rs).
//!
//! A cron start on an Event start state: the broker is the "event service" the spec asks
//! for. At each tick it issues the start state's events itself (source and type from their
//! definitions, fixed correlation values as attributes, data `{"scheduledTime": …}`) and
//! routes them like consumed events, in the tick's transaction.

use super::batch::{Batch, Result};
use super::entries::ScheduleOf;
use super::records::{ScheduleState, TimerEntry};
use super::registry::{event_start, Deployed};
use super::window::schedule;
use super::Stat;
use crate::cluster::partition::InstanceId;
use crate::cluster::work::Work;
use crate::config::CatchUp;
use crate::engine::Event;
use crate::store::SEP;
use crate::time::CronSchedule;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};

/// Ticks enumerated at most when catching up (older ones are skipped without enumeration).
pub const MAX_ENUMERATED: usize = 100_000;

fn timer_id(workflow: &str) -> String {
    format!("cron{SEP}{workflow}")
}

/// The zone of a schedule: its own, else the broker's, else the machine's, else UTC.
pub fn zone_name(own: Option<&str>, broker: &str) -> String {
    if let Some(z) = own.filter(|z| !z.is_empty()) {
        return z.to_string();
    }
    if !broker.is_empty() {
        return broker.to_string();
    }
    iana_time_zone::get_timezone()
        .ok()
        .filter(|z| z.parse::<chrono_tz::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_string())
}

/// A workflow's cron, parsed, with its zone.
fn cron_of(
    d: &Deployed,
    broker_zone: &str,
) -> Option<(String, CronSchedule, String, chrono_tz::Tz)> {
    let s = schedule(d)?;
    let src = s.cron.clone()?;
    let cron = CronSchedule::parse(&src).ok()?;
    let zone = zone_name(s.timezone.as_deref(), broker_zone);
    let tz = crate::time::parse_timezone(&zone).ok()?;
    Some((src, cron, zone, tz))
}

impl Batch<'_, '_> {
    /// (Re)plans the schedule of `workflow` after a deploy, an undeploy or a start.
    pub fn plan_schedule(&mut self, workflow: &str, catch_up: bool) -> Result<()> {
        let tid = timer_id(workflow);
        let Some(d) = self.reg.current(workflow).cloned() else {
            return self.disarm(&tid);
        };
        let Some((src, cron, zone, tz)) = cron_of(&d, &self.cfg.timezone) else {
            return self.disarm(&tid);
        };
        let mut st: ScheduleState = self
            .tx
            .read(&ScheduleOf(workflow))?
            .unwrap_or(ScheduleState {
                cron: src.clone(),
                timezone: zone.clone(),
                last_tick: None,
                since: Some(self.now),
                fired: 0,
            });
        if st.cron != src || st.timezone != zone {
            tracing::info!(workflow, from = %st.cron, to = %src, zone = %zone,
                "cron changed; the new expression starts from its next tick");
            st.cron = src;
            st.timezone = zone;
            st.last_tick = None;
            st.since = Some(self.now);
        }
        if let (Some(last), true) = (st.last_tick.or(st.since), catch_up) {
            let missed = ticks_between(&cron, &tz, last, self.now);
            if !missed.is_empty() {
                self.catch_up(&d, &mut st, missed)?;
            }
        }
        let from = st.last_tick.map_or(self.now, |l| l.max(self.now));
        self.tx.write(&ScheduleOf(workflow), &st)?;
        if let Some(next) = cron.next_after(from, &tz) {
            let entry = TimerEntry::Schedule {
                workflow: workflow.to_string(),
            };
            self.arm(&tid, next, &entry)?;
        }
        Ok(())
    }

    /// Applies the catch-up policy to ticks missed while the schedule was not running.
    fn catch_up(
        &mut self,
        d: &Deployed,
        st: &mut ScheduleState,
        missed: Vec<DateTime<Utc>>,
    ) -> Result<()> {
        let policy = policy(d).unwrap_or(self.cfg.schedules.catch_up);
        let n = missed.len();
        let fire: Vec<DateTime<Utc>> = match policy {
            CatchUp::None => vec![],
            CatchUp::One => missed.last().copied().into_iter().collect(),
            CatchUp::All => {
                let max = self.cfg.schedules.max_catch_up as usize;
                missed[n.saturating_sub(max)..].to_vec()
            }
        };
        let skipped = (n - fire.len()) as u64;
        if skipped > 0 {
            tracing::info!(workflow = %d.id, skipped, policy = ?policy, "missed cron ticks skipped");
            self.fx
                .stats
                .push(Stat::TicksSkipped(d.id.clone(), skipped));
        }
        for tick in fire {
            self.start_tick(d, st, tick, true)?;
        }
        if missed.last().is_some() {
            st.last_tick = missed.last().copied();
        }
        Ok(())
    }

    /// The schedule timer of `workflow` is due: fire every tick due by now, arm the next.
    pub fn fire_schedule(&mut self, workflow: &str) -> Result<()> {
        let Some(d) = self.reg.current(workflow).cloned() else {
            return Ok(());
        };
        let Some((_, cron, _, tz)) = cron_of(&d, &self.cfg.timezone) else {
            return Ok(());
        };
        let Some(mut st) = self.tx.read(&ScheduleOf(workflow))? else {
            return self.plan_schedule(workflow, false);
        };
        let from = st
            .last_tick
            .or(st.since)
            .unwrap_or(self.now - chrono::Duration::seconds(1));
        let due = ticks_between(&cron, &tz, from, self.now);
        for tick in &due {
            self.start_tick(&d, &mut st, *tick, false)?;
        }
        if let Some(last) = due.last() {
            st.last_tick = Some(*last);
        }
        self.tx.write(&ScheduleOf(workflow), &st)?;
        let after = st.last_tick.unwrap_or(self.now).max(self.now);
        if let Some(next) = cron.next_after(after, &tz) {
            let entry = TimerEntry::Schedule {
                workflow: workflow.to_string(),
            };
            self.arm(&timer_id(workflow), next, &entry)?;
        }
        Ok(())
    }

    /// Starts the instance of one tick.
    fn start_tick(
        &mut self,
        d: &Deployed,
        st: &mut ScheduleState,
        tick: DateTime<Utc>,
        catch_up: bool,
    ) -> Result<()> {
        let at = tick.to_rfc3339_opts(SecondsFormat::Secs, true);
        let input = json!({ "scheduledTime": at });
        let id = InstanceId::derived(self.p, format!("{}/cron/{at}", d.id).as_bytes()).to_string();
        let started = match event_start(&d.def) {
            Some(start) => {
                // the broker is the event service: it issues the start events itself
                let names: Vec<String> = start.names.iter().map(|n| n.to_string()).collect();
                let mut any = false;
                for name in names.iter().take(if start.all { usize::MAX } else { 1 }) {
                    let Some(ev) = tick_event(d, name, &id, &input) else {
                        continue;
                    };
                    let to = d
                        .def
                        .workflow
                        .event(name)
                        .and_then(|ed| super::index::event_key(ed, &ev))
                        .map(|k| self.parts.of_key(&d.id, &k));
                    match to {
                        Some(to) if to == self.p => {
                            let r = self.route(ev, Some(&d.id), false)?;
                            any |= !r.started.is_empty() || !r.delivered.is_empty();
                        }
                        Some(to) => {
                            // the key's partition starts it (exactly once: the message's
                            // position, and an id derived from the tick's events)
                            let only = Some(d.id.clone());
                            self.send(to, |source| Work::Event {
                                event: ev,
                                only,
                                sole: true,
                                returned: false,
                                source,
                            })?;
                            any = true;
                        }
                        None => {}
                    }
                }
                any
            }
            None => matches!(self.create(&id, d, input, vec![], None, None)?, Ok(true)),
        };
        self.drain()?;
        if started {
            st.fired += 1;
            let lag = (self.now - tick).num_milliseconds().max(0) as f64 / 1000.0;
            self.fx.stats.push(Stat::Tick {
                workflow: d.id.clone(),
                lag,
                catch_up,
            });
        }
        Ok(())
    }
}

/// The catch-up policy of a workflow from `metadata.catchUp` (`none` | `one` | `all`).
fn policy(d: &Deployed) -> Option<CatchUp> {
    let v = d.def.workflow.metadata.as_ref()?.get("catchUp")?;
    serde_json::from_value(v.clone()).ok()
}

/// Ticks in `(after, until]`, oldest first; at most the newest [`MAX_ENUMERATED`].
pub fn ticks_between(
    cron: &CronSchedule,
    tz: &chrono_tz::Tz,
    after: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<DateTime<Utc>> {
    let mut out = std::collections::VecDeque::new();
    let mut t = after;
    while let Some(next) = cron.next_after(t, tz) {
        if next > until {
            break;
        }
        if out.len() == MAX_ENUMERATED {
            out.pop_front();
        }
        out.push_back(next);
        t = next;
    }
    out.into()
}

/// The event a tick issues for start event `name`: `source` and `type` from its definition,
/// the tick's id and scheduled time. A rule on `subject` or an extension sets it to the rule's
/// fixed value, or to the tick's id (unique per workflow and tick) without one; a rule on
/// `time` or `datacontenttype` sets it only to a fixed value; `id`, `source`, `type` and
/// `specversion` are the event's own, and a rule on them (or on `time` and `datacontenttype`
/// without a value) reads what the tick carries.
fn tick_event(d: &Deployed, name: &str, id: &str, data: &Value) -> Option<Event> {
    let ed = d.def.workflow.event(name)?;
    let mut ev = Event {
        id: format!("{id}/{name}"),
        source: ed.source.clone()?,
        event_type: ed.ce_type().to_string(),
        time: data["scheduledTime"].as_str().map(str::to_string),
        datacontenttype: Some("application/json".into()),
        subject: None,
        data: Some(data.clone()),
        extensions: Map::new(),
    };
    for rule in &ed.correlation {
        let fixed = rule.context_attribute_value.as_ref();
        let value = || fixed.cloned().unwrap_or_else(|| id.to_string());
        match rule.context_attribute_name.to_ascii_lowercase().as_str() {
            // the event's own, and `data` its payload (validation refuses a rule on it)
            "id" | "source" | "type" | "specversion" | "data" | "data_base64" => {}
            "subject" => ev.subject = Some(value()),
            "time" => ev.time = fixed.cloned().or(ev.time),
            "datacontenttype" => ev.datacontenttype = fixed.cloned().or(ev.datacontenttype),
            other => {
                ev.extensions.insert(other.to_string(), json!(value()));
            }
        }
    }
    Some(ev)
}
