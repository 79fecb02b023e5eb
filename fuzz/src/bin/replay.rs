//! Runs saved inputs through a target without instrumentation: `replay TARGET FILE|DIR...`.
//! A panic is reported with the file that caused it and makes the exit code 1.

use std::path::{Path, PathBuf};

fn files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            files(&e, out);
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().expect("usage: replay TARGET FILE|DIR...");
    let Some((_, target)) = flowbroker_fuzz::TARGETS.iter().find(|(n, _)| *n == name) else {
        eprintln!("no target {name:?}");
        std::process::exit(2);
    };
    let mut all = Vec::new();
    for a in args {
        files(Path::new(&a), &mut all);
    }
    let mut failed = 0;
    for f in &all {
        let data = std::fs::read(f).expect("readable input");
        if std::panic::catch_unwind(|| target(&data)).is_err() {
            eprintln!("{name}: {} panicked", f.display());
            failed += 1;
        }
    }
    println!("{name}: {} inputs, {failed} panicked", all.len());
    if failed > 0 {
        std::process::exit(1);
    }
}
