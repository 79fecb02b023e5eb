//! Amazon States Language, flowbroker's second language (docs/asl.md): state machines in
//! `*.asl.json` / `*.asl.yaml` files.
//!
//! - [`model`]: a machine as data (the eight state types, paths, retriers, catchers).
//! - [`read`]: JSON/YAML value -> model, every field's type and range checked, each problem
//!   located by JSON path with the fix.
//! - [`check`]: whole-machine checks (transitions resolve in their scope, reachability,
//!   termination, unique names).
//! - [`rules`]: Choice Rules, read and evaluated.
//! - [`data`]: input and output processing (`InputPath`, `Parameters`, `ResultSelector`,
//!   `ResultPath`, `OutputPath`), `Assign`, a Fail state's texts, and the errors they raise.
//! - [`path`]: Paths (on the data, the `$$` context object or a `$name` variable: a
//!   [`path::Scope`]) and Reference Paths.
//! - [`jsonata`]: JSONata expressions (`{% %}`) in JSONata states, pure.
//! - [`failure`]: a runtime error (name and cause).
//! - [`intrinsic`]: intrinsic functions (`States.Format(...)` and 17 more), checked at deploy.
//! - [`steps`]: the steps of a path naming one node, parsed and walked.
//! - [`vars`]: variables (`Assign`, `$name`) across scopes, checked at deploy.
//! - [`out`]: diagnostics and JSON paths while reading.

pub mod check;
pub mod data;
pub mod failure;
pub mod intrinsic;
pub mod jsonata;
pub mod model;
pub mod out;
pub mod path;
pub mod read;
pub mod rules;
pub mod steps;
pub mod vars;

use crate::diag::Diagnostic;
use crate::diag::Invalid;
use crate::load::{parse_value, Format};
use std::path::Path;

pub use model::Machine;

/// A machine that validated, with its warnings.
#[derive(Debug, Clone)]
pub struct Checked {
    pub machine: Machine,
    pub warnings: Vec<Diagnostic>,
}

/// Whether a file holds an ASL machine: its name ends in `.asl.json`, `.asl.yaml` or
/// `.asl.yml`.
pub fn is_asl(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    [".asl.json", ".asl.yaml", ".asl.yml"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// The workflow id of an ASL file: its name without `.asl.json` (`.asl.yaml`, `.asl.yml`).
pub fn id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    [".asl.json", ".asl.yaml", ".asl.yml"]
        .iter()
        .find(|s| lower.ends_with(*s))
        .map(|s| name[..name.len() - s.len()].to_string())
        .filter(|id| !id.is_empty())
}

/// Parses and validates a machine read from `file`: every problem at once.
pub fn parse(file: &str, text: &str, format: Format) -> Result<Checked, Invalid> {
    let value = parse_value(file, text, format).map_err(|d| Invalid {
        diagnostics: vec![d],
    })?;
    let mut out = out::Out::new(file);
    let machine = read::machine(&value, &mut out);
    if let Some(m) = &machine {
        check::check(m, &mut out);
        vars::check(m, &mut out);
    }
    match machine {
        Some(machine) if !out.has_errors() => Ok(Checked {
            machine,
            warnings: out.diags,
        }),
        _ => Err(Invalid {
            diagnostics: out.diags,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asl_files_are_told_by_their_name() {
        assert!(is_asl(Path::new("w/order.asl.json")));
        assert!(is_asl(Path::new("w/Order.ASL.yaml")));
        assert!(!is_asl(Path::new("w/order.json")));
        assert_eq!(
            id_of(Path::new("w/order-flow.asl.yml")).as_deref(),
            Some("order-flow")
        );
        assert_eq!(id_of(Path::new("w/.asl.json")), None);
    }
}
