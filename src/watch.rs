//! Deployment by directory: every `*.json|*.yaml|*.yml` under `workflows_dir` (recursively,
//! hidden files skipped) is read at start and whenever the directory changes. Polling (by
//! default every second) rather than inotify: it works the same on bind mounts, network
//! file systems and container volumes, and a full read is cheap for workflow-sized files.
//! The core gets the whole set each time something changed and diffs it itself.

use crate::broker::Cmd;
use crate::load::Format;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// Workflow files under `path` (or `path` itself when it is a file), sorted.
pub fn workflow_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            out.extend(workflow_files(&p)?);
        } else if Format::from_path(&p).is_some() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Reads every workflow file under `dir` (path -> text). A missing directory is empty.
pub fn scan(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    match workflow_files(dir) {
        Ok(files) => {
            for f in files {
                match std::fs::read_to_string(&f) {
                    Ok(text) => {
                        out.insert(f.display().to_string(), text);
                    }
                    Err(e) => {
                        tracing::warn!(file = %f.display(), error = %e, "cannot read workflow file")
                    }
                }
            }
        }
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot list the workflows directory")
        }
    }
    out
}

/// Polls `dir` and sends the file set to the core whenever it differs from the last one.
pub async fn run(
    dir: PathBuf,
    every: Duration,
    mut last: BTreeMap<String, String>,
    core: mpsc::Sender<Cmd>,
) {
    loop {
        tokio::time::sleep(every).await;
        let d = dir.clone();
        let Ok(now) = tokio::task::spawn_blocking(move || scan(&d)).await else {
            continue;
        };
        if now != last {
            last = now.clone();
            if core.send(Cmd::Files(now)).await.is_err() {
                return;
            }
        }
    }
}
