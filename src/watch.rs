//! Deployment by directory: every `*.json|*.yaml|*.yml` under `workflows_dir` (recursively,
//! hidden files skipped) is read at start and whenever the directory changes. Polling (by
//! default every second) rather than inotify: it works the same on bind mounts, network
//! file systems and container volumes, and a full read is cheap for workflow-sized files.
//! The core gets the whole set each time something changed and diffs it itself.
//!
//! A file is read once it has been quiet for [`QUIET`]: a poll that lands between an editor's
//! truncate and its write (or inside a write in several chunks) would otherwise deploy, or
//! report as invalid, a half-written file. Whatever still changes after [`QUIET_WAIT`] of
//! waiting in one scan is read as it is; the next poll sees it again once it settles.

use crate::broker::Cmd;
use crate::load::Format;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
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

/// How long a file must go unmodified before it is read.
pub const QUIET: Duration = Duration::from_millis(100);
/// The most one scan waits for files to go quiet.
pub const QUIET_WAIT: Duration = Duration::from_secs(2);

/// What says a file changed: its length and modification time.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Reads `path` once it has not been modified for [`QUIET`] and did not change while being
/// read, waiting until `deadline` at most (then it is read as it is).
fn read_quiet(path: &Path, deadline: Instant) -> std::io::Result<String> {
    loop {
        let before = stamp(path);
        // an age that cannot be told (no stamp, or a time ahead of this clock, as a skewed
        // file server gives) does not wait: the read below is still checked against the stamp
        let age = before
            .and_then(|(_, modified)| SystemTime::now().duration_since(modified).ok())
            .unwrap_or(QUIET);
        let now = Instant::now();
        if age < QUIET && now < deadline {
            std::thread::sleep((QUIET - age).min(deadline - now));
            continue;
        }
        let text = std::fs::read_to_string(path)?;
        if before.is_none() || stamp(path) == before || Instant::now() >= deadline {
            return Ok(text);
        }
    }
}

/// Reads every workflow file under `dir` (path -> text), each once it is quiet (see the module
/// docs). A missing directory is empty. Blocks: call it off the async threads.
pub fn scan(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    let deadline = Instant::now() + QUIET_WAIT;
    match workflow_files(dir) {
        Ok(files) => {
            for f in files {
                match read_quiet(&f, deadline) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_being_written_is_read_once_it_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        // truncated, as an editor does before writing: the rest comes 10 ms later
        let mut file = std::fs::File::create(&path).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            file.write_all(b"id: w\n").unwrap();
        });
        let files = scan(dir.path());
        writer.join().unwrap();
        assert_eq!(
            files.get(&path.display().to_string()).map(String::as_str),
            Some("id: w\n")
        );
    }

    #[test]
    fn a_file_stamped_in_the_future_is_read_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "a").unwrap();
        let ahead = SystemTime::now() + Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(ahead)
            .unwrap();
        let started = Instant::now();
        let text = read_quiet(&path, started + QUIET_WAIT).unwrap();
        assert_eq!(text, "a");
        assert!(
            started.elapsed() < QUIET_WAIT / 2,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_file_is_read_as_it_is_once_the_deadline_has_passed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "a").unwrap();
        let started = Instant::now();
        // a deadline already passed: read as it is, without waiting
        let text = read_quiet(&path, started).unwrap();
        assert_eq!(text, "a");
        assert!(started.elapsed() < QUIET, "{:?}", started.elapsed());
    }
}
