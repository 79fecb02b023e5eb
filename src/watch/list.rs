//! Which files under a directory are workflow files: `*.json|*.yaml|*.yml`, recursively,
//! hidden files and directories skipped. Symbolic links are followed (a Kubernetes config map
//! mounts its files as links), but each directory is walked once, so a link back up the tree
//! is not a loop.

use crate::load::Format;
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// Workflow files under `path` (or `path` itself when it is not a directory), sorted. A
/// directory that goes away while it is listed has no files; any other error fails the whole
/// listing, since a listing with a part left out would read as those files deleted.
pub fn workflow_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    walk(path, &mut BTreeSet::new(), &mut out)?;
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, walked: &mut BTreeSet<PathBuf>, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let entries = match std::fs::canonicalize(dir).and_then(|real| {
        let first = walked.insert(real);
        first.then(|| std::fs::read_dir(dir)).transpose()
    }) {
        Ok(Some(entries)) => entries,
        Ok(None) => return Ok(()), // walked already, through another link
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    // in name order, so a directory reached by two paths is always listed under the same one
    let mut paths = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()?;
    paths.sort();
    for p in paths {
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            walk(&p, walked, out)?;
        } else if Format::from_path(&p).is_some() {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_back_up_the_tree_is_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.yaml"), "id: w\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), "").unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("v.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path(), sub.join("up")).unwrap();
        let files = workflow_files(dir.path()).unwrap();
        assert_eq!(files, vec![sub.join("v.json"), dir.path().join("w.yaml")]);
    }

    #[test]
    fn a_linked_file_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("..data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("w.yaml"), "id: w\n").unwrap();
        std::os::unix::fs::symlink(data.join("w.yaml"), dir.path().join("w.yaml")).unwrap();
        let files = workflow_files(dir.path()).unwrap();
        assert_eq!(files, vec![dir.path().join("w.yaml")]);
    }
}
