//! Deployment across brokers (docs/scale.md "Definitions on several brokers"): what this
//! broker deploys, from its own `workflows_dir` and the definitions topic. A file changed in
//! the directory is validated with everything else deployed, then published; what the topic
//! holds (the latest record per file) is what every broker deploys. Until a change of this
//! broker's is read back from the topic it stands over the topic's copy here, so a deploy
//! takes effect at once on the broker it was made on. An invalid file is never published: it
//! is reported here and the cluster keeps the last good version. The Kafka side is
//! [`crate::kafka::definitions`].

use crate::broker::registry::Registry;
use crate::cluster::definitions::{at_start, AtStart, Catalog, FileName, LocalFile, Published};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A change of this broker's the cluster does not have yet.
#[derive(Debug, Clone, PartialEq)]
struct Held {
    /// The new text, or `None` for a deleted file.
    text: Option<String>,
    state: HeldState,
    at: DateTime<Utc>,
    workflow: Option<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum HeldState {
    /// To publish (again, if a publish failed).
    Unsent,
    /// Acknowledged by Kafka, not read back yet.
    Sent,
    /// Failed validation: reported here, never published.
    Invalid,
}

/// This broker's view of the deployed files.
#[derive(Debug)]
pub struct Rollout {
    dir: PathBuf,
    broker: String,
    catalog: Catalog,
    /// The directory as last scanned.
    scanned: BTreeMap<FileName, String>,
    held: BTreeMap<FileName, Held>,
}

/// The workflow files `watch` just scanned, with the modification times it saw them at, by
/// name.
pub fn local_files(
    watch: &crate::watch::Watch,
    files: crate::watch::Files,
) -> BTreeMap<FileName, LocalFile> {
    files
        .into_iter()
        .filter_map(|(path, text)| {
            let name = FileName::under(watch.dir(), Path::new(&path))?;
            let modified = watch
                .modified(Path::new(&path))
                .map(DateTime::<Utc>::from)
                .unwrap_or_else(Utc::now);
            Some((name, LocalFile { text, modified }))
        })
        .collect()
}

/// The workflow files under `dir` as scanned (`crate::watch`), by name.
pub fn named(dir: &Path, files: crate::watch::Files) -> BTreeMap<FileName, String> {
    files
        .into_iter()
        .filter_map(|(path, text)| Some((FileName::under(dir, Path::new(&path))?, text)))
        .collect()
}

impl Rollout {
    pub fn new(dir: PathBuf, broker: String) -> Rollout {
        Rollout {
            dir,
            broker,
            catalog: Catalog::default(),
            scanned: BTreeMap::new(),
            held: BTreeMap::new(),
        }
    }

    /// A record read from the topic. A change of this broker's that it confirms stops
    /// standing over it; an invalid local edit gives way to a newer deployment elsewhere.
    pub fn fold(&mut self, name: FileName, p: Published) {
        if let Some(h) = self.held.get(&name) {
            let ours = p.broker == self.broker;
            let done = match h.state {
                HeldState::Sent | HeldState::Unsent => ours && p.text == h.text,
                HeldState::Invalid => !ours,
            };
            if done {
                self.held.remove(&name);
            }
        }
        if p.broker != self.broker {
            match &p.text {
                Some(_) => tracing::info!(file = %name, broker = %p.broker,
                    workflow = p.workflow.as_deref().unwrap_or(""),
                    version = p.version.as_deref().unwrap_or(""),
                    "deploying a file another broker published"),
                None => tracing::info!(file = %name, broker = %p.broker,
                    "undeploying a file another broker deleted"),
            }
        }
        self.catalog.fold(name, p);
    }

    /// At start, once the topic has been read to its end: each of this broker's files is
    /// published when it is new to the cluster or changed after the cluster's record, and
    /// left alone when the cluster's record is newer (docs/scale.md).
    pub fn start(&mut self, local: BTreeMap<FileName, LocalFile>, now: DateTime<Utc>) {
        for (name, file) in &local {
            match at_start(file, self.catalog.get(name)) {
                AtStart::Same => {}
                AtStart::Publish => self.change(name, Some(file.text.clone()), file.modified, now),
                AtStart::Stale(p) => match &p.text {
                    Some(_) => tracing::warn!(file = %name, broker = %p.broker, since = %p.at,
                        "this file differs from the version the cluster deployed after it was \
                         written; the cluster's version stands (edit the file to deploy yours)"),
                    None => tracing::warn!(file = %name, broker = %p.broker, since = %p.at,
                        "this file was deleted on another broker after it was written here; it \
                         stays undeployed (edit the file to deploy it again)"),
                },
            }
        }
        for (name, _) in self.catalog.texts() {
            if !local.contains_key(name) {
                tracing::info!(file = %name, "deployed from the definitions topic (not in this broker's workflows_dir)");
            }
        }
        self.scanned = local.into_iter().map(|(n, f)| (n, f.text)).collect();
    }

    /// The directory as scanned now: every file added, changed or deleted since the last scan
    /// is a deployment.
    pub fn scanned(&mut self, files: BTreeMap<FileName, String>, now: DateTime<Utc>) {
        let before = std::mem::take(&mut self.scanned);
        for (name, text) in &files {
            if before.get(name) != Some(text) {
                self.change(name, Some(text.clone()), now, now);
            }
        }
        for name in before.keys() {
            if !files.contains_key(name) {
                self.change(name, None, now, now);
            }
        }
        self.scanned = files;
    }

    fn change(
        &mut self,
        name: &FileName,
        text: Option<String>,
        at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) {
        let deployed = self.deployed(name);
        if deployed == text.as_ref() {
            self.held.remove(name); // the cluster has it already (a config map caught up)
            return;
        }
        let Some(t) = text else {
            // deleting a file only this broker had (never valid) undeploys nothing
            let published = self.catalog.get(name).is_some_and(|p| p.text.is_some());
            if published {
                self.held.insert(
                    name.clone(),
                    Held {
                        text: None,
                        state: HeldState::Unsent,
                        at,
                        workflow: None,
                    },
                );
            } else {
                self.held.remove(name);
            }
            return;
        };
        let (state, workflow) = match self.check(name, &t, now) {
            Some(w) => (HeldState::Unsent, Some(w)),
            None => (HeldState::Invalid, None),
        };
        self.held.insert(
            name.clone(),
            Held {
                text: Some(t),
                state,
                at,
                workflow,
            },
        );
    }

    /// What `name` deploys here now.
    fn deployed(&self, name: &FileName) -> Option<&String> {
        match self.held.get(name) {
            Some(h) => h.text.as_ref(),
            None => self.catalog.get(name).and_then(|p| p.text.as_ref()),
        }
    }

    /// Validates `text` as `name` with everything else deployed here (sub-workflows deploy
    /// together); its workflow id and version when it deploys.
    fn check(&self, name: &FileName, text: &str, now: DateTime<Utc>) -> Option<(String, String)> {
        let path = name.path_in(&self.dir);
        let mut files = self.files();
        files.insert(path.clone(), text.to_string());
        let changes = Registry::default().sync(&files, now);
        changes
            .deployed
            .iter()
            .find(|d| d.file == path)
            .map(|d| (d.id.clone(), d.version.clone()))
    }

    /// The changes to publish.
    pub fn unsent(&self) -> Vec<(FileName, Published)> {
        self.held
            .iter()
            .filter(|(_, h)| h.state == HeldState::Unsent)
            .map(|(name, h)| {
                let p = Published {
                    format: crate::cluster::definitions::FORMAT,
                    text: h.text.clone(),
                    broker: self.broker.clone(),
                    at: h.at,
                    workflow: h.workflow.as_ref().map(|w| w.0.clone()),
                    version: h.workflow.as_ref().map(|w| w.1.clone()),
                };
                (name.clone(), p)
            })
            .collect()
    }

    /// Kafka acknowledged the publish of `name` with `text`.
    pub fn sent(&mut self, name: &FileName, text: &Option<String>) {
        if let Some(h) = self.held.get_mut(name) {
            if h.text == *text && h.state == HeldState::Unsent {
                h.state = HeldState::Sent;
            }
        }
    }

    /// What the cluster has deployed, as the core takes files (path -> text).
    pub fn cluster_files(&self) -> BTreeMap<String, String> {
        self.catalog
            .texts()
            .map(|(n, t)| (n.path_in(&self.dir), t.clone()))
            .collect()
    }

    /// What this broker deploys: the cluster's files with this broker's own changes over
    /// them.
    pub fn files(&self) -> BTreeMap<String, String> {
        let mut out = self.cluster_files();
        for (name, h) in &self.held {
            let path = name.path_in(&self.dir);
            match &h.text {
                Some(t) => out.insert(path, t.clone()),
                None => out.remove(&path),
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A1: &str = "id: a\nname: a\nstates:\n- name: S\n  type: inject\n  start: {kind: default}\n  end: {kind: default}\n";
    const A2: &str = "id: a\nname: a\nversion: '2'\nstates:\n- name: S\n  type: inject\n  start: {kind: default}\n  end: {kind: default}\n";
    const BAD: &str = "id: a\nname: a\nstates:\n- name: S\n  type: inject\n  start: {kind: default}\n  transition: {nextState: Nope}\n";

    fn name(s: &str) -> FileName {
        FileName::from_key(s.as_bytes()).unwrap()
    }

    fn now() -> DateTime<Utc> {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn record(broker: &str, text: Option<&str>) -> Published {
        Published {
            format: crate::cluster::definitions::FORMAT,
            text: text.map(str::to_string),
            broker: broker.into(),
            at: now(),
            workflow: None,
            version: None,
        }
    }

    fn rollout() -> Rollout {
        Rollout::new(PathBuf::from("/wf"), "me".into())
    }

    #[test]
    fn a_local_edit_stands_until_read_back_and_invalid_ones_are_never_published() {
        let mut r = rollout();
        r.fold(name("a.yaml"), record("other", Some(A1)));
        r.start(BTreeMap::new(), now());
        assert_eq!(r.files().get("/wf/a.yaml"), Some(&A1.to_string()));

        r.scanned([(name("a.yaml"), A2.to_string())].into(), now());
        let out = r.unsent();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.text.as_deref(), Some(A2));
        assert_eq!(out[0].1.workflow.as_deref(), Some("a"));
        assert_eq!(r.files()["/wf/a.yaml"], A2, "deployed here at once");
        r.sent(&name("a.yaml"), &Some(A2.to_string()));
        assert!(r.unsent().is_empty());
        // an older record read late does not undo it; its own read back settles it
        r.fold(name("a.yaml"), record("other", Some(A1)));
        assert_eq!(r.files()["/wf/a.yaml"], A2);
        r.fold(name("a.yaml"), record("me", Some(A2)));
        assert_eq!(r.files()["/wf/a.yaml"], A2);

        r.scanned([(name("a.yaml"), BAD.to_string())].into(), now());
        assert!(r.unsent().is_empty(), "an invalid file is not published");
        assert_eq!(r.files()["/wf/a.yaml"], BAD, "reported here");
        assert_eq!(r.cluster_files()["/wf/a.yaml"], A2, "the cluster keeps A2");

        r.scanned(BTreeMap::new(), now());
        let out = r.unsent();
        assert_eq!(out.len(), 1, "deleting the file undeploys it everywhere");
        assert_eq!(out[0].1.text, None);
        assert!(!r.files().contains_key("/wf/a.yaml"));
    }

    #[test]
    fn a_directory_catching_up_with_the_cluster_publishes_nothing() {
        let mut r = rollout();
        r.fold(name("a.yaml"), record("other", Some(A2)));
        r.start(
            [(
                name("a.yaml"),
                LocalFile {
                    text: A1.into(),
                    modified: now() - chrono::Duration::days(1),
                },
            )]
            .into(),
            now(),
        );
        assert!(r.unsent().is_empty(), "a stale copy is not published");
        assert_eq!(r.files()["/wf/a.yaml"], A2);
        r.scanned([(name("a.yaml"), A2.to_string())].into(), now());
        assert!(r.unsent().is_empty());
        // a file only this broker has, edited after the cluster's record, is published
        let mut r = rollout();
        r.fold(name("a.yaml"), record("other", Some(A1)));
        r.start(
            [(
                name("a.yaml"),
                LocalFile {
                    text: A2.into(),
                    modified: now() + chrono::Duration::days(1),
                },
            )]
            .into(),
            now(),
        );
        assert_eq!(r.unsent().len(), 1);
    }
}
