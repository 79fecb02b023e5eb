//! Deployment by directory: every `*.json|*.yaml|*.yml` under `workflows_dir` (recursively,
//! hidden files skipped; `list`) is read at start and whenever the directory changes.
//! Polling (by default every second) rather than inotify: it works the same on bind mounts,
//! network file systems and container volumes, and a full read is cheap for workflow-sized
//! files. The core gets the whole set each time something changed and diffs it itself.
//!
//! A change counts once it has held for [`QUIET`], as this process sees it on its own
//! monotonic clock (so coarse or skewed file times do not matter): a file is read once its
//! length and modification time have stayed the same that long and did not change while it
//! was read, and a file that disappears counts as deleted once it has stayed away that long.
//! A poll that lands between an editor's truncate and its write (or inside a write in
//! several chunks, or in the gap an editor leaves when it renames the old file away before
//! writing the new one) would otherwise deploy, report as invalid, or undeploy what is not
//! the file. Whatever still changes after [`QUIET_WAIT`] of waiting in one scan is read as it
//! is, and a file still away keeps its last text; the next poll settles both.
//!
//! Nothing that cannot be read takes away what was deployed: a directory that cannot be
//! listed keeps the last set whole, and a file that cannot be read (its permissions, text
//! that is not UTF-8) keeps its last text. A directory that is not there is empty.

mod list;

pub use list::workflow_files;

use crate::broker::Cmd;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// How long a change must hold before a scan acts on it.
pub const QUIET: Duration = Duration::from_millis(100);
/// The most one scan waits for changes to hold.
pub const QUIET_WAIT: Duration = Duration::from_secs(2);

/// Workflow files by path, with their text.
pub type Files = BTreeMap<String, String>;

/// What says a file changed: its length and modification time.
type Stamp = (u64, SystemTime);

/// A file's stamp; `None` when it is not there.
fn stamp(path: &Path) -> io::Result<Option<Stamp>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some((m.len(), m.modified()?))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What the watch knows of one path.
#[derive(Debug)]
struct Known {
    /// Its stamp when last looked at (`None`: not there).
    stamp: Option<Stamp>,
    /// When this process first saw that stamp.
    since: Instant,
    /// The text last read, while the file counts as there.
    text: Option<String>,
    /// The stamp the current scan read it at: a scan that looks again after another file
    /// changed does not read it twice.
    read_at: Option<Stamp>,
}

/// The workflow directory as the scans have seen it.
#[derive(Debug)]
pub struct Watch {
    dir: PathBuf,
    known: BTreeMap<PathBuf, Known>,
    /// [`QUIET`] and [`QUIET_WAIT`], but in tests.
    quiet: Duration,
    quiet_wait: Duration,
    /// How many times the scans waited for a change to hold.
    #[cfg(test)]
    waits: u64,
}

impl Watch {
    /// A watch of `dir` that has seen nothing yet: its first scan waits [`QUIET`] once.
    pub fn new(dir: PathBuf) -> Watch {
        Watch::with(dir, QUIET, QUIET_WAIT)
    }

    fn with(dir: PathBuf, quiet: Duration, quiet_wait: Duration) -> Watch {
        Watch {
            dir,
            known: BTreeMap::new(),
            quiet,
            quiet_wait,
            #[cfg(test)]
            waits: 0,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The modification time `path` had when it was last looked at.
    pub fn modified(&self, path: &Path) -> Option<SystemTime> {
        Some(self.known.get(path)?.stamp?.1)
    }

    /// The workflow files (path -> text) as they are once every change has held for
    /// [`QUIET`], waiting [`QUIET_WAIT`] at most (see the module docs). A missing directory is
    /// empty. Blocks: async callers use [`Watch::scan_async`].
    pub fn scan(&mut self) -> Files {
        self.scan_until(Instant::now() + self.quiet_wait)
    }

    /// [`Watch::scan`] on a blocking thread. A scan that panicked gives no files, and the
    /// watch keeps what it knew (the texts it keeps for files it cannot read among them).
    pub async fn scan_async(mut self) -> (Watch, Option<Files>) {
        let dir = self.dir.clone();
        let scanned = tokio::task::spawn_blocking(move || {
            let files = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.scan()));
            (self, files.ok())
        })
        .await;
        match scanned {
            Ok((watch, files)) => {
                if files.is_none() {
                    tracing::error!(dir = %dir.display(),
                        "scanning the workflows directory panicked; the deployed files stay as they are");
                }
                (watch, files)
            }
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e,
                    "scanning the workflows directory failed");
                (Watch::new(dir), None)
            }
        }
    }

    fn scan_until(&mut self, deadline: Instant) -> Files {
        for k in self.known.values_mut() {
            k.read_at = None;
        }
        loop {
            let listed = match self.list() {
                Ok(listed) => listed,
                Err(e) => {
                    tracing::warn!(dir = %self.dir.display(), error = %e,
                        "cannot list the workflows directory; the deployed files stay as they are");
                    return self.files();
                }
            };
            let now = Instant::now();
            self.look(&listed, now);
            if let Some(wait) = self.unsettled(now) {
                if now < deadline {
                    #[cfg(test)]
                    {
                        self.waits += 1;
                    }
                    std::thread::sleep(wait.min(deadline - now));
                    continue;
                }
            }
            if self.read(deadline) {
                return self.files();
            }
        }
    }

    /// The workflow files there are now; a missing directory has none (one that cannot be
    /// told is an error).
    fn list(&self) -> io::Result<Vec<PathBuf>> {
        match self.dir.try_exists()? {
            true => workflow_files(&self.dir),
            false => Ok(Vec::new()),
        }
    }

    /// Takes each path's stamp: the files `listed` and the ones known before.
    fn look(&mut self, listed: &[PathBuf], now: Instant) {
        for path in listed {
            self.known.entry(path.clone()).or_insert(Known {
                stamp: None,
                since: now,
                text: None,
                read_at: None,
            });
        }
        self.known.retain(|path, k| {
            let seen = match listed.binary_search(path) {
                Ok(_) => match stamp(path) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(file = %path.display(), error = %e,
                            "cannot read workflow file");
                        k.stamp // as it was: the read below keeps what was read before
                    }
                },
                Err(_) => None,
            };
            if seen != k.stamp {
                k.since = now;
            }
            k.stamp = seen;
            // a path gone, and never read or already counted as deleted, is forgotten
            seen.is_some() || k.text.is_some()
        });
    }

    /// How long until every change seen has held for [`QUIET`]; `None` if they all have.
    fn unsettled(&self, now: Instant) -> Option<Duration> {
        self.known
            .values()
            .map(|k| now.duration_since(k.since))
            .filter(|held| *held < self.quiet)
            .map(|held| self.quiet - held)
            .max()
    }

    /// Reads every file that is there and lets go of the ones that stayed away. `false`: one
    /// changed while it was read, before `deadline`, and the scan looks again.
    fn read(&mut self, deadline: Instant) -> bool {
        let now = Instant::now();
        for (path, k) in &mut self.known {
            if k.stamp.is_none() {
                if now.duration_since(k.since) >= self.quiet {
                    k.text = None; // deleted: it stayed away
                }
                continue;
            }
            if k.read_at.is_some() && k.read_at == k.stamp {
                continue;
            }
            match std::fs::read_to_string(path) {
                Ok(text) => match stamp(path) {
                    Ok(after) if after != k.stamp && Instant::now() < deadline => {
                        (k.stamp, k.since) = (after, Instant::now());
                        return false;
                    }
                    _ => (k.text, k.read_at) = (Some(text), k.stamp),
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound && Instant::now() < deadline => {
                    (k.stamp, k.since) = (None, Instant::now());
                    return false;
                }
                Err(e) if k.text.is_some() => {
                    tracing::warn!(file = %path.display(), error = %e,
                        "cannot read workflow file; the version read before stays deployed");
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "cannot read workflow file");
                }
            }
        }
        self.known
            .retain(|_, k| k.stamp.is_some() || k.text.is_some());
        true
    }

    /// The files as last read.
    fn files(&self) -> Files {
        self.known
            .iter()
            .filter_map(|(path, k)| Some((path.display().to_string(), k.text.clone()?)))
            .collect()
    }
}

/// Polls the watch's directory and sends the file set to the core whenever it differs from
/// the last one.
pub async fn run(mut watch: Watch, every: Duration, mut last: Files, core: mpsc::Sender<Cmd>) {
    loop {
        tokio::time::sleep(every).await;
        let (w, files) = watch.scan_async().await;
        watch = w;
        let Some(now) = files else { continue };
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
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tempfile::TempDir;

    fn text(files: &Files, path: &Path) -> Option<String> {
        files.get(&path.display().to_string()).cloned()
    }

    /// A directory holding `w.yaml` with `text`, and a watch of it that has read it.
    fn watched(text: &str, quiet: Duration, quiet_wait: Duration) -> (TempDir, PathBuf, Watch) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, text).unwrap();
        let mut watch = Watch::with(dir.path().into(), quiet, quiet_wait);
        let deadline = Instant::now() + QUIET_WAIT * 5;
        while self::text(&watch.scan(), &path).as_deref() != Some(text) {
            assert!(Instant::now() < deadline, "never read");
        }
        (dir, path, watch)
    }

    fn set_modified(path: &Path, at: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn a_file_being_written_is_read_once_it_is_quiet() {
        let quiet = Duration::from_millis(300);
        let (_dir, path, mut watch) = watched("id: old\n", quiet, QUIET_WAIT);
        // truncated, as an editor does before writing, then written in chunks: each gap
        // shorter than the quiet time, all of them longer
        let mut file = std::fs::File::create(&path).unwrap();
        let writer = std::thread::spawn(move || {
            for chunk in ["id: w\n", "name: w\n", "version: '1'\n", "start: a\n"] {
                std::thread::sleep(quiet / 3);
                file.write_all(chunk.as_bytes()).unwrap();
            }
        });
        let files = watch.scan();
        writer.join().unwrap();
        assert_eq!(
            text(&files, &path).as_deref(),
            Some("id: w\nname: w\nversion: '1'\nstart: a\n")
        );
    }

    #[test]
    fn an_unchanged_directory_is_read_again_without_waiting() {
        let (_dir, path, mut watch) = watched("a", QUIET, QUIET_WAIT);
        assert_eq!(
            watch.waits, 1,
            "what a watch has not seen before waits once"
        );
        let again = watch.scan();
        assert_eq!(text(&again, &path).as_deref(), Some("a"));
        assert_eq!(watch.waits, 1, "nothing changed: no wait");
        std::fs::write(&path, "bb").unwrap();
        assert_eq!(text(&watch.scan(), &path).as_deref(), Some("bb"));
        assert_eq!(watch.waits, 2, "a change waits");
    }

    #[test]
    fn a_file_replaced_through_a_rename_stays_deployed() {
        let (dir, path, mut watch) = watched("a", Duration::from_millis(500), QUIET_WAIT);
        // an editor moves the old file away, then writes the new one
        std::fs::rename(&path, dir.path().join("w.yaml~")).unwrap();
        let new = path.clone();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::write(new, "b").unwrap();
        });
        let files = watch.scan();
        writer.join().unwrap();
        assert_eq!(text(&files, &path).as_deref(), Some("b"));
    }

    #[test]
    fn a_deleted_file_is_let_go_once_it_stays_away() {
        let (_dir, path, mut watch) = watched("a", QUIET, QUIET_WAIT);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(watch.scan(), Files::new());
        assert_eq!(watch.waits, 2, "the deletion was held for the quiet time");
        assert!(watch.known.is_empty(), "{:?}", watch.known);
    }

    #[test]
    fn a_file_still_away_at_the_deadline_keeps_its_text_until_it_stays_away() {
        let quiet = Duration::from_millis(300);
        let (_dir, path, mut watch) = watched("a", quiet, quiet / 6);
        std::fs::remove_file(&path).unwrap();
        let gone = Instant::now();
        assert_eq!(
            text(&watch.scan(), &path).as_deref(),
            Some("a"),
            "away too briefly"
        );
        loop {
            let files = watch.scan();
            if text(&files, &path).is_none() {
                break;
            }
            assert!(gone.elapsed() < QUIET_WAIT * 5, "never let go");
        }
        assert!(gone.elapsed() >= quiet, "let go after {:?}", gone.elapsed());
    }

    #[test]
    fn a_directory_that_cannot_be_listed_keeps_the_last_set() {
        let base = tempfile::tempdir().unwrap();
        let parent = base.path().join("mnt");
        let dir = parent.join("workflows");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("w.yaml"), "a").unwrap();
        let mut watch = Watch::new(dir.clone());
        let first = watch.scan();
        assert_eq!(first.len(), 1);
        // the directory cannot be told any more (its parent is now a file: ENOTDIR)
        std::fs::rename(&parent, base.path().join("away")).unwrap();
        std::fs::write(&parent, "").unwrap();
        assert_eq!(watch.scan(), first);
        // a directory that is not there is empty
        std::fs::remove_file(&parent).unwrap();
        let deadline = Instant::now() + QUIET_WAIT * 5;
        while !watch.scan().is_empty() {
            assert!(Instant::now() < deadline, "never let go");
        }
    }

    #[test]
    fn a_file_that_cannot_be_read_keeps_its_last_text() {
        let (dir, path, mut watch) = watched("id: w\n", QUIET, QUIET_WAIT);
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap(); // not UTF-8
        let other = dir.path().join("v.yaml");
        std::fs::write(&other, [0xff]).unwrap();
        let files = watch.scan();
        assert_eq!(text(&files, &path).as_deref(), Some("id: w\n"));
        assert_eq!(text(&files, &other), None, "never read: nothing to keep");
    }

    #[test]
    fn a_file_that_keeps_changing_is_read_as_it_is_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "x").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut file = std::fs::File::options().append(true).open(path).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    file.write_all(b"x").unwrap();
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let wait = Duration::from_millis(300);
        let started = Instant::now();
        let files = Watch::with(dir.path().into(), QUIET, wait).scan();
        let took = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let read = text(&files, &path).unwrap();
        assert!(
            !read.is_empty() && read.bytes().all(|b| b == b'x'),
            "{read}"
        );
        assert!(took >= wait, "it waited for the file to go quiet: {took:?}");
        assert!(took < wait * 5, "then read it as it was: {took:?}");
    }

    #[test]
    fn file_times_do_not_decide_when_a_file_is_quiet() {
        let (_dir, path, mut watch) = watched("a", QUIET, QUIET_WAIT);
        // a file server whose clock is behind: the new text looks an hour old
        std::fs::write(&path, "bb").unwrap();
        set_modified(&path, SystemTime::now() - Duration::from_secs(3600));
        assert_eq!(text(&watch.scan(), &path).as_deref(), Some("bb"));
        assert_eq!(watch.waits, 2, "it waited although the time says an hour");
        // one whose clock is ahead: read after the quiet time alone
        std::fs::write(&path, "ccc").unwrap();
        set_modified(&path, SystemTime::now() + Duration::from_secs(3600));
        let started = Instant::now();
        assert_eq!(text(&watch.scan(), &path).as_deref(), Some("ccc"));
        assert_eq!(watch.waits, 3);
        assert!(started.elapsed() < QUIET_WAIT, "{:?}", started.elapsed());
    }
}
