//! The definitions topic (`cluster.definitions_topic`, docs/scale.md "Definitions on several
//! brokers"): how brokers agree on the deployed workflow files. A file changed in one broker's
//! `workflows_dir` is published as a [`Published`] record keyed by its [`FileName`]; every
//! broker folds the topic into a [`Catalog`] and deploys what it holds. This module is the
//! data and the rule that decides, at start, between a broker's own files and the cluster's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The format of [`Published`] records this build writes and reads.
pub const FORMAT: u32 = 1;

/// A workflow file's path relative to `workflows_dir`, with `/` separators: the record key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FileName(String);

impl FileName {
    /// The name of `path` under `dir` (`dir` itself when it is the one workflow file).
    pub fn under(dir: &Path, path: &Path) -> Option<FileName> {
        let rel = match path.strip_prefix(dir) {
            Ok(r) if !r.as_os_str().is_empty() => r,
            _ => Path::new(path.file_name()?),
        };
        let parts: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
        Some(FileName(parts.join("/")))
    }

    /// From a record key.
    pub fn from_key(key: &[u8]) -> Option<FileName> {
        let s = std::str::from_utf8(key).ok()?;
        let bad = s.is_empty() || s.starts_with('/') || s.split('/').any(|c| c == "..");
        (!bad).then(|| FileName(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the file is (or would be) under `dir`.
    pub fn path_in(&self, dir: &Path) -> String {
        if dir.is_file() {
            return dir.display().to_string();
        }
        self.0
            .split('/')
            .fold(dir.to_path_buf(), |p, c| p.join(c))
            .display()
            .to_string()
    }
}

impl std::fmt::Display for FileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One record of the definitions topic: a file's text as a broker deployed it, or its
/// deletion (`text: None`, kept in the topic so a broker with a stale copy does not bring it
/// back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Published {
    #[serde(rename = "v")]
    pub format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The broker that published it.
    pub broker: String,
    /// When the change was made (the file's modification time).
    pub at: DateTime<Utc>,
    /// The workflow id and version the text deploys, for operators reading the topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Why a record of the definitions topic is not used.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the key is not a workflow file name relative to workflows_dir")]
    Key,
    #[error("not a definitions record: {0}")]
    Decode(#[from] serde_json::Error),
    #[error(
        "written in format {0} by a newer flowbroker (this one reads format {FORMAT}); \
         upgrade this broker"
    )]
    Format(u32),
}

impl Published {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a definitions record serializes")
    }

    pub fn decode(key: &[u8], value: &[u8]) -> Result<(FileName, Published), RecordError> {
        let name = FileName::from_key(key).ok_or(RecordError::Key)?;
        let p: Published = serde_json::from_slice(value)?;
        if p.format != FORMAT {
            return Err(RecordError::Format(p.format));
        }
        Ok((name, p))
    }
}

/// The files the cluster has deployed: the latest record per file name.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    files: BTreeMap<FileName, Published>,
}

impl Catalog {
    pub fn fold(&mut self, name: FileName, p: Published) {
        self.files.insert(name, p);
    }

    pub fn get(&self, name: &FileName) -> Option<&Published> {
        self.files.get(name)
    }

    /// The deployed files (deleted ones left out).
    pub fn texts(&self) -> impl Iterator<Item = (&FileName, &String)> {
        self.files
            .iter()
            .filter_map(|(n, p)| p.text.as_ref().map(|t| (n, t)))
    }
}

/// A file in this broker's own `workflows_dir` at start.
#[derive(Debug, Clone)]
pub struct LocalFile {
    pub text: String,
    pub modified: DateTime<Utc>,
}

/// What a broker does at start with one of its own files.
#[derive(Debug, Clone, PartialEq)]
pub enum AtStart<'a> {
    /// The cluster has the same text.
    Same,
    /// New to the cluster, or changed after the cluster's record: publish it.
    Publish,
    /// The cluster's record is newer (another broker changed or deleted the file since this
    /// copy was written): the cluster's stands.
    Stale(&'a Published),
}

/// Decides for a broker's own file at start. The later change wins: a broker restarted with
/// an old copy (a config map not updated yet) does not undo a newer deployment, and a file
/// edited while its broker was down is deployed.
pub fn at_start<'a>(local: &LocalFile, cluster: Option<&'a Published>) -> AtStart<'a> {
    match cluster {
        None => AtStart::Publish,
        Some(p) if p.text.as_deref() == Some(local.text.as_str()) => AtStart::Same,
        Some(p) if local.modified > p.at => AtStart::Publish,
        Some(p) => AtStart::Stale(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn published(text: Option<&str>, when: &str) -> Published {
        Published {
            format: FORMAT,
            text: text.map(str::to_string),
            broker: "b".into(),
            at: at(when),
            workflow: None,
            version: None,
        }
    }

    #[test]
    fn names_are_relative_with_slashes_and_keys_cannot_escape() {
        let dir = Path::new("/etc/wf");
        let n = FileName::under(dir, Path::new("/etc/wf/team/a.yaml")).unwrap();
        assert_eq!(n.as_str(), "team/a.yaml");
        assert_eq!(n.path_in(Path::new("/srv/x")), "/srv/x/team/a.yaml");
        assert_eq!(FileName::from_key(b"team/a.yaml"), Some(n));
        for bad in [&b"../a.yaml"[..], b"/a.yaml", b"", b"a/../../b.yaml"] {
            assert_eq!(FileName::from_key(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn records_round_trip_and_unknown_formats_are_refused() {
        let p = published(Some("id: x"), "2026-01-01T00:00:00Z");
        let (n, back) = Published::decode(b"a.yaml", &p.encode()).unwrap();
        assert_eq!((n.as_str(), back), ("a.yaml", p));
        let newer = br#"{"v":2,"broker":"b","at":"2026-01-01T00:00:00Z"}"#;
        let e = Published::decode(b"a.yaml", newer).unwrap_err();
        assert!(e.to_string().contains("upgrade this broker"), "{e}");
        assert!(Published::decode(b"a.yaml", b"{").is_err());
    }

    #[test]
    fn the_later_change_wins_at_start() {
        let local = |t: &str, m: &str| LocalFile {
            text: t.into(),
            modified: at(m),
        };
        let cluster = published(Some("v2"), "2026-01-02T00:00:00Z");
        assert_eq!(
            at_start(&local("v1", "2026-01-01T00:00:00Z"), None),
            AtStart::Publish
        );
        assert_eq!(
            at_start(&local("v2", "2026-01-01T00:00:00Z"), Some(&cluster)),
            AtStart::Same
        );
        assert_eq!(
            at_start(&local("v1", "2026-01-01T00:00:00Z"), Some(&cluster)),
            AtStart::Stale(&cluster)
        );
        assert_eq!(
            at_start(&local("v3", "2026-01-03T00:00:00Z"), Some(&cluster)),
            AtStart::Publish
        );
        let deleted = published(None, "2026-01-02T00:00:00Z");
        assert_eq!(
            at_start(&local("v1", "2026-01-01T00:00:00Z"), Some(&deleted)),
            AtStart::Stale(&deleted)
        );
        let mut c = Catalog::default();
        c.fold(FileName::from_key(b"a.yaml").unwrap(), cluster.clone());
        c.fold(FileName::from_key(b"b.yaml").unwrap(), deleted);
        let live: Vec<&str> = c.texts().map(|(n, _)| n.as_str()).collect();
        assert_eq!(live, ["a.yaml"]);
    }
}
