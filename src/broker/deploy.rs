//! Deploying the workflow directory: the registry diff, stored versions, first-deployment
//! times (for interval schedules) and the view `GET /v1/workflows` shows.

use super::compound::VersionOf;
use super::core::Core;
use super::records::StoredVersion;
use super::registry::WorkflowView;
use crate::store::{StoreError, Txn};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::BTreeMap;

impl Core {
    /// Applies the workflow directory; returns the ids whose current version changed.
    pub(super) fn deploy(
        &mut self,
        tx: &Txn<'_>,
        files: &BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        let changes = self.reg.sync(files, now);
        let mut changed = Vec::new();
        for d in &changes.deployed {
            let vk = VersionOf::new(&d.id, &d.version);
            if !tx.holds(&vk)? {
                let v = StoredVersion {
                    file: d.file.clone(),
                    source: d.source.clone(),
                    deployed: now,
                };
                tx.write(&vk, &v)?;
            }
            let fk = super::window::FirstDeployed(&d.id);
            match tx.read(&fk)? {
                Some(at) => self.reg.anchor(&d.id, at),
                None => {
                    tx.write(&fk, &now)?;
                    self.reg.anchor(&d.id, now);
                }
            }
            for w in &d.def.warnings {
                tracing::warn!(file = %d.file, "{w}");
            }
            tracing::info!(workflow = %d.id, version = %d.version, file = %d.file, "deployed");
            changed.push(d.id.clone());
        }
        for id in &changes.undeployed {
            tracing::info!(workflow = %id, "undeployed (file removed); running instances continue");
            changed.push(id.clone());
        }
        for (file, diags) in &changes.rejected {
            for d in diags {
                tracing::error!(file = %file, "{d}");
            }
            tracing::error!(file = %file, "workflow file rejected; the previous version (if any) keeps running");
        }
        self.publish_workflows();
        Ok(changed)
    }

    fn publish_workflows(&self) {
        let deployed: Vec<WorkflowView> = self
            .reg
            .all_current()
            .map(|d| WorkflowView::from(&**d))
            .collect();
        let invalid: Vec<Value> = self
            .reg
            .invalid()
            .iter()
            .map(|(file, diags)| {
                json!({
                    "file": file,
                    "errors": diags.iter().filter(|d| d.is_error()).map(|d| json!({
                        "path": d.path, "message": d.message, "text": d.to_string(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        if let Ok(mut w) = self.shared.workflows.write() {
            *w = json!({"workflows": deployed, "invalid": invalid});
        }
        if let Ok(mut d) = self.shared.definitions.write() {
            *d = self
                .reg
                .all_current()
                .map(|d| (d.id.clone(), d.clone()))
                .collect();
        }
    }
}
