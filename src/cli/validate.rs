//! `flowbroker validate PATH...`

use super::OutputFormat;
use crate::definition::Definition;
use crate::diag::Diagnostic;
use crate::family::Family;
use crate::load::Format;
use std::path::PathBuf;
use std::process::ExitCode;

/// Validates every workflow file under `paths`; exit status 1 if any is invalid.
pub fn run(paths: &[PathBuf], format: OutputFormat) -> ExitCode {
    let mut all: Vec<Diagnostic> = Vec::new();
    let mut files = Vec::new();
    for p in paths {
        match crate::watch::workflow_files(p) {
            Ok(f) => files.extend(f),
            Err(e) => all.push(Diagnostic::error(
                &p.display().to_string(),
                "$",
                format!("cannot read: {e}"),
            )),
        }
    }
    // The files are validated together: a sub-workflow may use what its parent defines.
    let texts: Vec<_> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f)))
        .collect();
    let mut family = Family::default();
    for (f, text) in &texts {
        if !crate::definition::is_workflow_file(f) {
            continue;
        }
        if let (Ok(text), Some(format)) = (text, Format::from_path(f)) {
            let name = f.display().to_string();
            if let Some(wf) = crate::load::parse_workflow(&name, text, format).workflow {
                family.add(&wf);
            }
        }
    }
    let mut results = Vec::new();
    for (f, text) in &texts {
        let name = f.display().to_string();
        let loaded = match (text, Format::from_path(f)) {
            // Amazon States Language machines (`*.asl.json`, `*.asl.yaml`)
            (Ok(text), Some(format)) if crate::asl::is_asl(f) => {
                crate::asl::parse(&name, text, format).map(|m| m.warnings)
            }
            (Ok(text), Some(format)) if crate::durable::is_durable(f) => {
                crate::durable::parse(&name, text, format).map(|m| m.warnings)
            }
            (Ok(text), Some(format)) => {
                Definition::parse_in(&name, text, format, &family).map(|d| d.warnings)
            }
            _ => Definition::load(f).map(|d| d.warnings),
        };
        let diags = match loaded {
            Ok(warnings) => warnings,
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
