//! Deployed workflows: the current version of each workflow id, every version an instance may
//! still run on, the files that failed validation, and the event index from CloudEvent
//! `(source, type)` to the event definitions that match it.

use crate::definition::Definition;
use crate::diag::Diagnostic;
use crate::family::Family;
use crate::load::Format;
use crate::model::State;
use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One deployed version.
#[derive(Debug, Clone)]
pub struct Deployed {
    pub id: String,
    pub version: String,
    pub file: String,
    pub source: String,
    pub def: Arc<Definition>,
    pub deployed: DateTime<Utc>,
}

/// An event definition that matches a `(source, type)`.
#[derive(Debug, Clone)]
pub struct EventMatch {
    pub workflow: String,
    pub event: String,
    pub def: Arc<Definition>,
}

/// The `type` label of events whose type no deployed definition names.
pub const OTHER_TYPE: &str = "_other";

#[derive(Debug, Default)]
pub struct Registry {
    current: BTreeMap<String, Arc<Deployed>>,
    versions: HashMap<(String, String), Arc<Deployed>>,
    /// file -> the errors that keep it from deploying.
    invalid: BTreeMap<String, Vec<Diagnostic>>,
    /// file -> the workflow id it deployed.
    files: BTreeMap<String, String>,
    /// source -> type -> the event definitions that match (looked up by `&str`, no copy).
    by_type: HashMap<String, HashMap<String, Vec<EventMatch>>>,
    /// Every consumed event type a deployed definition names: the metric labels allowed.
    types: HashSet<String>,
    /// Definitions of sub-workflow instances with what they inherit, by lineage.
    inherited: Mutex<HashMap<Lineage, Arc<Definition>>>,
    /// When each workflow id was first deployed (bare-duration intervals count from it).
    anchors: BTreeMap<String, DateTime<Utc>>,
}

/// A version and the versions of the instances above it (parent first): what a sub-workflow
/// instance runs on.
pub type Lineage = (String, String, Vec<(String, String)>);

/// The content version of a source text: the first 12 hex digits of its UUID v5.
pub fn version_of(source: &str) -> String {
    let u = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, source.as_bytes());
    u.simple().to_string()[..12].to_string()
}

/// What a change of files did, for logs.
#[derive(Debug, Default)]
pub struct Changes {
    pub deployed: Vec<Arc<Deployed>>,
    pub undeployed: Vec<String>,
    pub rejected: Vec<(String, Vec<Diagnostic>)>,
}

/// The built-in definitions: Amazon SWF's executions and domains (docs/swf.md). Every
/// broker has them; no file deploys them, and a file cannot take their ids.
fn builtins() -> &'static BTreeMap<String, Arc<Deployed>> {
    static BUILTINS: std::sync::LazyLock<BTreeMap<String, Arc<Deployed>>> =
        std::sync::LazyLock::new(|| {
            [
                (
                    crate::swf::EXECUTIONS,
                    "Amazon SWF workflow executions (the decider is yours)",
                ),
                (
                    crate::swf::DOMAINS,
                    "Amazon SWF domains and their registered types",
                ),
            ]
            .into_iter()
            .map(|(id, description)| {
                let d = Deployed {
                    id: id.to_string(),
                    version: BUILTIN_VERSION.to_string(),
                    file: "(built in)".into(),
                    source: String::new(),
                    def: Arc::new(Definition::swf(id, description)),
                    deployed: DateTime::<Utc>::UNIX_EPOCH,
                };
                (id.to_string(), Arc::new(d))
            })
            .collect()
        });
    &BUILTINS
}

/// The version of a built-in definition.
pub const BUILTIN_VERSION: &str = "builtin";

impl Registry {
    pub fn current(&self, id: &str) -> Option<&Arc<Deployed>> {
        self.current.get(id).or_else(|| builtins().get(id))
    }

    /// Whether `id` is a built-in definition's (no file may deploy it).
    pub fn is_builtin(id: &str) -> bool {
        builtins().contains_key(id)
    }

    pub fn all_current(&self) -> impl Iterator<Item = &Arc<Deployed>> {
        self.current.values()
    }

    pub fn invalid(&self) -> &BTreeMap<String, Vec<Diagnostic>> {
        &self.invalid
    }

    /// A version by id, current or not.
    pub fn version(&self, id: &str, version: &str) -> Option<&Arc<Deployed>> {
        self.versions
            .get(&(id.to_string(), version.to_string()))
            .or_else(|| builtins().get(id).filter(|d| d.version == version))
    }

    /// What an instance of `id`/`version` runs on: the version's definition plus what it
    /// inherits from `ancestors` (parent first; empty for a top-level instance). `None` when
    /// the version is unknown. An ancestor version that is unknown contributes nothing.
    pub fn effective(
        &self,
        id: &str,
        version: &str,
        ancestors: &[(String, String)],
    ) -> Option<Arc<Definition>> {
        let base = self.version(id, version)?.def.clone();
        if ancestors.is_empty() {
            return Some(base);
        }
        let k = (id.to_string(), version.to_string(), ancestors.to_vec());
        let mut cache = self.inherited.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = cache.get(&k) {
            return Some(d.clone());
        }
        let defs: Vec<Arc<Definition>> = ancestors
            .iter()
            .filter_map(|(w, v)| self.version(w, v).map(|d| d.def.clone()))
            .collect();
        let d = base
            .inherit(defs.iter().map(|d| &**d))
            .map(Arc::new)
            .unwrap_or(base);
        cache.insert(k, d.clone());
        Some(d)
    }

    /// Event definitions of any known version matching a CloudEvent's source and type.
    /// The metric label for a consumed event type: the type when a deployed definition names
    /// it, else [`OTHER_TYPE`], so untrusted input cannot grow the label set.
    pub fn type_label(&self, event_type: String) -> String {
        if self.types.contains(&event_type) {
            event_type
        } else {
            OTHER_TYPE.to_string()
        }
    }

    pub fn matching(&self, source: &str, event_type: &str) -> &[EventMatch] {
        self.by_type
            .get(source)
            .and_then(|types| types.get(event_type))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Remembers when a workflow was first deployed (the earliest time given wins).
    pub fn anchor(&mut self, workflow: &str, at: DateTime<Utc>) {
        let e = self.anchors.entry(workflow.to_string()).or_insert(at);
        *e = (*e).min(at);
    }

    /// When `workflow` was first deployed, if known.
    pub fn anchored(&self, workflow: &str) -> Option<DateTime<Utc>> {
        self.anchors.get(workflow).copied()
    }

    /// Adds a version that instances run on (loaded from the store at start), not current.
    pub fn remember(&mut self, d: Deployed) {
        let d = Arc::new(d);
        self.index(&d);
        self.versions.insert((d.id.clone(), d.version.clone()), d);
    }

    /// Applies the full set of workflow files (path -> text). Returns what changed. A file that
    /// fails validation keeps the previous version of its workflow deployed.
    pub fn sync(&mut self, files: &BTreeMap<String, String>, now: DateTime<Utc>) -> Changes {
        let mut changes = Changes::default();
        let gone: Vec<String> = self
            .files
            .keys()
            .chain(self.invalid.keys())
            .filter(|f| !files.contains_key(*f))
            .cloned()
            .collect();
        for file in gone {
            self.invalid.remove(&file);
            if let Some(id) = self.files.remove(&file) {
                self.current.remove(&id);
                changes.undeployed.push(id);
            }
        }
        // Files deploy together: a sub-workflow may use what a workflow running it defines.
        let mut family = Family::default();
        for d in self.current.values() {
            family.add(&d.def.workflow);
        }
        for (file, text) in files {
            if !crate::definition::is_workflow_file(Path::new(file)) {
                continue; // machines and durable functions define nothing to inherit
            }
            if let Some(format) = Format::from_path(Path::new(file)) {
                if let Some(wf) = crate::load::parse_workflow(file, text, format).workflow {
                    family.add(&wf);
                }
            }
        }
        for (file, text) in files {
            let version = version_of(text);
            let same = self
                .files
                .get(file)
                .and_then(|id| self.current.get(id))
                .is_some_and(|d| d.version == version);
            if same {
                self.invalid.remove(file);
                continue;
            }
            let Some(format) = Format::from_path(Path::new(file)) else {
                continue;
            };
            match Definition::parse_in(file, text, format, &family) {
                Err(e) => {
                    self.invalid.insert(file.clone(), e.diagnostics.clone());
                    changes.rejected.push((file.clone(), e.diagnostics));
                }
                Ok(def) => {
                    let id = def.id().to_string();
                    if Registry::is_builtin(&id) {
                        let d = vec![Diagnostic::error(
                            file,
                            "$.id",
                            format!(
                                "workflow id {id:?} is built in (Amazon SWF's executions and \
                                 domains); give this workflow another id"
                            ),
                        )];
                        self.invalid.insert(file.clone(), d.clone());
                        changes.rejected.push((file.clone(), d));
                        continue;
                    }
                    let owner = self.files.iter().find(|(f, i)| **i == id && *f != file);
                    if let Some((other, _)) = owner {
                        let d = vec![Diagnostic::error(
                            file,
                            "$.id",
                            format!(
                                "workflow id {id:?} is already deployed from {other}; \
                                 give this workflow another id or delete one of the files"
                            ),
                        )];
                        self.invalid.insert(file.clone(), d.clone());
                        changes.rejected.push((file.clone(), d));
                        continue;
                    }
                    if let Some(old) = self.files.insert(file.clone(), id.clone()) {
                        if old != id {
                            self.current.remove(&old);
                            changes.undeployed.push(old);
                        }
                    }
                    self.invalid.remove(file);
                    let d = Arc::new(Deployed {
                        id: id.clone(),
                        version: version.clone(),
                        file: file.clone(),
                        source: text.clone(),
                        def: Arc::new(def),
                        deployed: now,
                    });
                    self.index(&d);
                    self.versions.insert((id.clone(), version), d.clone());
                    self.current.insert(id, d.clone());
                    changes.deployed.push(d);
                }
            }
        }
        changes
    }

    fn index(&mut self, d: &Arc<Deployed>) {
        // A workflow's consumed events also reach instances of the sub-workflows it runs, which
        // inherit them (the sub-workflow's own definition of a name, indexed under its id,
        // wins).
        let children = crate::family::children_of(&d.def.workflow);
        for e in &d.def.workflow.events {
            let Some(source) = &e.source else { continue };
            self.types.insert(e.ce_type().to_string());
            let list = self
                .by_type
                .entry(source.clone())
                .or_default()
                .entry(e.ce_type().to_string())
                .or_default();
            for child in &children {
                if !list
                    .iter()
                    .any(|m| m.workflow == *child && m.event == e.name)
                {
                    list.push(EventMatch {
                        workflow: child.clone(),
                        event: e.name.clone(),
                        def: d.def.clone(),
                    });
                }
            }
            if !list.iter().any(|m| m.workflow == d.id && m.event == e.name) {
                list.push(EventMatch {
                    workflow: d.id.clone(),
                    event: e.name.clone(),
                    def: d.def.clone(),
                });
            } else if self
                .current
                .get(&d.id)
                .is_none_or(|c| c.version == d.version)
            {
                // keep the newest definition for key computation
                for m in list.iter_mut() {
                    if m.workflow == d.id && m.event == e.name {
                        m.def = d.def.clone();
                    }
                }
            }
        }
    }
}

/// How a definition starts on events: the event names of its start state and whether all of
/// them are needed (`exclusive: false`) with the gap timeout.
pub struct EventStart<'a> {
    pub names: Vec<&'a str>,
    pub all: bool,
    pub timeout: Option<crate::time::Duration>,
}

pub fn event_start(def: &Definition) -> Option<EventStart<'_>> {
    match def.workflow.start_state()? {
        State::Event(e) => Some(EventStart {
            names: e
                .events_actions
                .iter()
                .flat_map(|ea| ea.event_refs.iter().map(String::as_str))
                .collect(),
            all: !e.exclusive,
            timeout: e.timeout.as_ref().and_then(crate::time::Written::get),
        }),
        _ => None,
    }
}

/// A deployed workflow as the admin API lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowView {
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_version: Option<String>,
    /// `serverless-workflow` or `asl`.
    pub language: &'static str,
    pub file: String,
    pub deployed: DateTime<Utc>,
    pub warnings: Vec<String>,
}

impl From<&Deployed> for WorkflowView {
    fn from(d: &Deployed) -> Self {
        WorkflowView {
            id: d.id.clone(),
            name: d.def.workflow.name.clone(),
            version: d.version.clone(),
            workflow_version: d.def.workflow.version.as_ref().map(|v| v.0.clone()),
            language: d.def.language().as_str(),
            file: d.file.clone(),
            deployed: d.deployed,
            warnings: d.def.warnings.iter().map(|w| w.to_string()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asl_files_deploy_under_their_stem_and_bad_ones_are_reported_located() {
        let mut reg = Registry::default();
        let files = BTreeMap::from([
            (
                "w/ok.asl.json".to_string(),
                r#"{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}"#.to_string(),
            ),
            (
                "w/bad.asl.json".to_string(),
                r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}}}"#.to_string(),
            ),
        ]);
        let changes = reg.sync(&files, Utc::now());
        let deployed: Vec<&str> = changes.deployed.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(deployed, vec!["ok"]);
        assert!(matches!(
            reg.current("ok").unwrap().def.body,
            crate::definition::Body::Machine(_)
        ));
        let bad = &reg.invalid()["w/bad.asl.json"];
        assert_eq!(bad[0].path, "$.States.A.Next", "{bad:?}");
        assert!(!reg.invalid().contains_key("w/ok.asl.json"));
    }
}
