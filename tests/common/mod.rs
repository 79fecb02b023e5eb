//! Test harness for the pure engine: a definition, an instance, a manual clock.
#![allow(dead_code)]

use chrono::{DateTime, Duration, Utc};
use flowbroker::definition::Definition;
use flowbroker::engine::{apply, Action, EngineError, ErrorInfo, Event, Input, Instance, Status};
use flowbroker::load::Format;
use serde_json::{json, Map, Value};

#[path = "../root/mod.rs"]
mod root;
pub use root::root;

pub struct Env {
    pub def: Definition,
    pub inst: Instance,
    pub now: DateTime<Utc>,
    /// Every action returned so far, in order.
    pub log: Vec<Action>,
}

impl Env {
    pub fn yaml(text: &str) -> Env {
        let def = Definition::parse("test.yaml", text, Format::Yaml)
            .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics));
        Env::with(def)
    }

    /// An Amazon States Language machine (JSON) named `machine.asl.json`.
    pub fn asl(text: &str) -> Env {
        let def = Definition::parse("machine.asl.json", text, Format::Json)
            .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics));
        Env::with(def)
    }

    /// A Lambda durable function named `fn.durable.yaml`.
    pub fn durable(text: &str) -> Env {
        let def = Definition::parse("fn.durable.yaml", text, Format::Yaml)
            .unwrap_or_else(|e| panic!("{:#?}", e.diagnostics));
        Env::with(def)
    }

    pub fn json_file(path: &str) -> Env {
        let full = root().join(path);
        Env::with(Definition::load(&full).unwrap_or_else(|e| panic!("{:#?}", e.diagnostics)))
    }

    pub fn with_definition(def: Definition) -> Env {
        Env::with(def)
    }

    fn with(def: Definition) -> Env {
        let inst = Instance::new("i1", def.id());
        Env {
            def,
            inst,
            now: "2020-01-01T00:00:00Z".parse().unwrap(),
            log: vec![],
        }
    }

    pub fn try_feed(&mut self, input: Input) -> Result<Vec<Action>, EngineError> {
        let step = apply(&self.def, self.inst.clone(), input, self.now)?;
        // Every instance survives a store round trip at every step.
        let stored = serde_json::to_string(&step.instance).unwrap();
        self.inst = serde_json::from_str(&stored).unwrap();
        assert_eq!(self.inst, step.instance);
        self.log.extend(step.actions.clone());
        Ok(step.actions)
    }

    pub fn feed(&mut self, input: Input) -> Vec<Action> {
        self.try_feed(input).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn start(&mut self, input: Value) -> Vec<Action> {
        self.feed(Input::Start {
            input,
            events: vec![],
        })
    }

    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    pub fn result(&mut self, key: &str, result: Value) -> Vec<Action> {
        self.feed(Input::ActionResult {
            key: key.into(),
            result,
        })
    }

    pub fn fail(&mut self, key: &str, name: &str) -> Vec<Action> {
        self.feed(Input::ActionFailed {
            key: key.into(),
            error: ErrorInfo::new(name, format!("{name} happened")),
        })
    }

    pub fn fire(&mut self, id: &str) -> Vec<Action> {
        self.feed(Input::TimerFired { id: id.into() })
    }

    pub fn event(&mut self, ev: Event) -> Vec<Action> {
        self.feed(Input::Event { event: ev })
    }

    pub fn status(&self) -> Status {
        self.inst.status
    }

    pub fn output(&self) -> Value {
        self.inst.output.clone().expect("instance has output")
    }
}

pub fn event(source: &str, ty: &str, data: Value, ext: &[(&str, &str)]) -> Event {
    let mut extensions = Map::new();
    for (k, v) in ext {
        extensions.insert(k.to_string(), json!(v));
    }
    Event {
        id: format!("ev-{ty}"),
        source: source.into(),
        event_type: ty.into(),
        time: None,
        datacontenttype: Some("application/json".into()),
        subject: None,
        data: Some(data),
        extensions,
    }
}

/// The invocations among `actions`: (key, function, parameters, attempt).
pub fn invokes(actions: &[Action]) -> Vec<(String, String, Value, u32)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Invoke {
                key,
                function,
                parameters,
                attempt,
                ..
            } => Some((key.clone(), function.clone(), parameters.clone(), *attempt)),
            _ => None,
        })
        .collect()
}

/// The timers armed among `actions`: (id, due).
pub fn timers(actions: &[Action]) -> Vec<(String, DateTime<Utc>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ArmTimer { id, due } => Some((id.clone(), *due)),
            _ => None,
        })
        .collect()
}

pub fn produced(actions: &[Action]) -> Vec<Event> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Produce { event } => Some(event.clone()),
            _ => None,
        })
        .collect()
}

/// The diagnostics (path, message) of a machine that must not deploy.
pub fn rejected(text: &str) -> Vec<(String, String)> {
    match Definition::parse("m.asl.json", text, Format::Json) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e
            .diagnostics
            .into_iter()
            .map(|d| (d.path, d.message))
            .collect(),
    }
}

/// The error (name, message) a failed instance ended with.
pub fn failure(env: &Env) -> (String, String) {
    let e = env.inst.error.clone().expect("failed");
    (e.name, e.message)
}
