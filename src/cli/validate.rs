//! `flowbroker validate PATH...`

use super::OutputFormat;
use crate::definition::Definition;
use crate::diag::Diagnostic;
use crate::load::Format;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Every workflow file under `path` (the path itself when it is a file), sorted.
pub fn workflow_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(workflow_files(&p)?);
        } else if Format::from_path(&p).is_some() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

pub fn run(paths: &[PathBuf], format: OutputFormat) -> ExitCode {
    let mut all: Vec<Diagnostic> = Vec::new();
    let mut files = Vec::new();
    for p in paths {
        match workflow_files(p) {
            Ok(f) => files.extend(f),
            Err(e) => all.push(Diagnostic::error(
                &p.display().to_string(),
                "$",
                format!("cannot read: {e}"),
            )),
        }
    }
    let mut results = Vec::new();
    for f in &files {
        let diags = match Definition::load(f) {
            Ok(def) => def.warnings,
            Err(invalid) => invalid.diagnostics,
        };
        let ok = !diags.iter().any(Diagnostic::is_error);
        results.push(
            serde_json::json!({"file": f.display().to_string(), "valid": ok, "diagnostics": diags}),
        );
        all.extend(diags);
    }
    let failed = all.iter().any(Diagnostic::is_error);
    match format {
        OutputFormat::Text => {
            for d in &all {
                eprintln!("{d}");
            }
            let bad = results.iter().filter(|r| r["valid"] == false).count();
            eprintln!(
                "{} file(s) checked: {} valid, {} invalid",
                files.len(),
                files.len() - bad,
                bad
            );
        }
        OutputFormat::Json => {
            let out = serde_json::json!({"valid": !failed, "files": results});
            eprintln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
