//! A domain and the workflow and activity types registered in it, with each type's default
//! configuration (the `default*` members of its registration, kept as SWF names them).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A workflow or activity type: name and version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TypeId {
    pub name: String,
    pub version: String,
}

impl TypeId {
    /// Reads `{"name", "version"}`.
    pub fn from_wire(v: &Value) -> Option<TypeId> {
        Some(TypeId {
            name: v.get("name")?.as_str()?.to_string(),
            version: v.get("version")?.as_str()?.to_string(),
        })
    }

    pub fn wire(&self) -> Value {
        json!({"name": self.name, "version": self.version})
    }
}

/// `REGISTERED` or `DEPRECATED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegistrationStatus {
    Registered,
    Deprecated,
}

impl RegistrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RegistrationStatus::Registered => "REGISTERED",
            RegistrationStatus::Deprecated => "DEPRECATED",
        }
    }
}

/// Workflow types or activity types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TypeKind {
    Workflow,
    Activity,
}

impl TypeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TypeKind::Workflow => "workflow",
            TypeKind::Activity => "activity",
        }
    }
}

/// One registered type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registered {
    pub id: TypeId,
    pub description: Option<String>,
    pub status: RegistrationStatus,
    pub created: DateTime<Utc>,
    pub deprecated: Option<DateTime<Utc>>,
    /// The registration's `default*` members, as sent.
    pub defaults: Map<String, Value>,
}

impl Registered {
    /// The `*TypeInfo` shape.
    pub fn info(&self, kind: TypeKind) -> Value {
        let mut v = json!({
            format!("{}Type", kind.as_str()): self.id.wire(),
            "status": self.status.as_str(),
            "creationDate": super::history::epoch(self.created),
        });
        if let Some(d) = &self.description {
            v["description"] = json!(d);
        }
        if let Some(t) = self.deprecated {
            v["deprecationDate"] = super::history::epoch(t);
        }
        v
    }

    pub fn default_str(&self, name: &str) -> Option<&str> {
        self.defaults.get(name).and_then(Value::as_str)
    }
}

/// A domain's registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    pub name: String,
    pub description: Option<String>,
    pub retention_days: String,
    pub status: RegistrationStatus,
    pub workflow_types: Vec<Registered>,
    pub activity_types: Vec<Registered>,
}

/// What a registry call refused, named by its SWF fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    TypeAlreadyExists(String),
    #[error("{0}")]
    UnknownResource(String),
    #[error("{0}")]
    TypeDeprecated(String),
    #[error("{0}")]
    DomainDeprecated(String),
    #[error("{0}")]
    DomainAlreadyExists(String),
}

impl RegistryError {
    /// The fault's shape name (botocore's exception name).
    pub fn fault(&self) -> &'static str {
        match self {
            RegistryError::TypeAlreadyExists(_) => "TypeAlreadyExistsFault",
            RegistryError::UnknownResource(_) => "UnknownResourceFault",
            RegistryError::TypeDeprecated(_) => "TypeDeprecatedFault",
            RegistryError::DomainDeprecated(_) => "DomainDeprecatedFault",
            RegistryError::DomainAlreadyExists(_) => "DomainAlreadyExistsFault",
        }
    }
}

impl Domain {
    /// The `DomainInfo` shape.
    pub fn info(&self) -> Value {
        let mut v = json!({
            "name": self.name,
            "status": self.status.as_str(),
            "arn": format!("arn:aws:swf:{}:{}:/domain/{}", crate::durable::arn::REGION,
                crate::durable::arn::ACCOUNT, self.name),
        });
        if let Some(d) = &self.description {
            v["description"] = json!(d);
        }
        v
    }

    pub fn types(&self, kind: TypeKind) -> &Vec<Registered> {
        match kind {
            TypeKind::Workflow => &self.workflow_types,
            TypeKind::Activity => &self.activity_types,
        }
    }

    fn types_mut(&mut self, kind: TypeKind) -> &mut Vec<Registered> {
        match kind {
            TypeKind::Workflow => &mut self.workflow_types,
            TypeKind::Activity => &mut self.activity_types,
        }
    }

    /// The registered type `id` of `kind`, deprecated or not.
    pub fn find(&self, kind: TypeKind, id: &TypeId) -> Option<&Registered> {
        self.types(kind).iter().find(|t| t.id == *id)
    }

    /// The type `id`, registered and not deprecated (what starting or scheduling needs).
    pub fn usable(&self, kind: TypeKind, id: &TypeId) -> Result<&Registered, RegistryError> {
        match self.find(kind, id) {
            None => Err(RegistryError::UnknownResource(format!(
                "Unknown type: {}Type=[name={}, version={}]",
                if kind == TypeKind::Workflow {
                    "Workflow"
                } else {
                    "Activity"
                },
                id.name,
                id.version
            ))),
            Some(t) if t.status == RegistrationStatus::Deprecated => {
                Err(RegistryError::TypeDeprecated(format!(
                    "Type is deprecated: name={}, version={}",
                    id.name, id.version
                )))
            }
            Some(t) => Ok(t),
        }
    }

    pub fn register(&mut self, kind: TypeKind, t: Registered) -> Result<(), RegistryError> {
        if self.status == RegistrationStatus::Deprecated {
            return Err(RegistryError::DomainDeprecated(format!(
                "Domain is deprecated: {}",
                self.name
            )));
        }
        if self.find(kind, &t.id).is_some() {
            return Err(RegistryError::TypeAlreadyExists(format!(
                "{}Type=[name={}, version={}]",
                if kind == TypeKind::Workflow {
                    "Workflow"
                } else {
                    "Activity"
                },
                t.id.name,
                t.id.version
            )));
        }
        self.types_mut(kind).push(t);
        Ok(())
    }

    /// Deprecates (`deprecate`) or restores a type.
    pub fn set_type_status(
        &mut self,
        kind: TypeKind,
        id: &TypeId,
        deprecate: bool,
        now: DateTime<Utc>,
    ) -> Result<(), RegistryError> {
        let unknown = || {
            RegistryError::UnknownResource(format!(
                "Unknown type: name={}, version={}",
                id.name, id.version
            ))
        };
        let t = self
            .types_mut(kind)
            .iter_mut()
            .find(|t| t.id == *id)
            .ok_or_else(unknown)?;
        match (t.status, deprecate) {
            (RegistrationStatus::Deprecated, true) => Err(RegistryError::TypeDeprecated(format!(
                "Type is already deprecated: name={}, version={}",
                id.name, id.version
            ))),
            (RegistrationStatus::Registered, false) => {
                Err(RegistryError::TypeAlreadyExists(format!(
                    "Type is registered: name={}, version={}",
                    id.name, id.version
                )))
            }
            (_, true) => {
                t.status = RegistrationStatus::Deprecated;
                t.deprecated = Some(now);
                Ok(())
            }
            (_, false) => {
                t.status = RegistrationStatus::Registered;
                t.deprecated = None;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(name: &str) -> Registered {
        Registered {
            id: TypeId {
                name: name.into(),
                version: "1".into(),
            },
            description: None,
            status: RegistrationStatus::Registered,
            created: Utc::now(),
            deprecated: None,
            defaults: Map::new(),
        }
    }

    #[test]
    fn types_register_once_and_deprecated_ones_cannot_be_used() {
        let mut d = Domain {
            name: "d".into(),
            description: None,
            retention_days: "1".into(),
            status: RegistrationStatus::Registered,
            workflow_types: vec![],
            activity_types: vec![],
        };
        d.register(TypeKind::Activity, reg("ship")).unwrap();
        let again = d.register(TypeKind::Activity, reg("ship")).unwrap_err();
        assert_eq!(again.fault(), "TypeAlreadyExistsFault");
        let id = reg("ship").id;
        assert!(d.usable(TypeKind::Activity, &id).is_ok());
        assert_eq!(
            d.usable(TypeKind::Workflow, &id).unwrap_err().fault(),
            "UnknownResourceFault"
        );
        d.set_type_status(TypeKind::Activity, &id, true, Utc::now())
            .unwrap();
        assert_eq!(
            d.usable(TypeKind::Activity, &id).unwrap_err().fault(),
            "TypeDeprecatedFault"
        );
        d.set_type_status(TypeKind::Activity, &id, false, Utc::now())
            .unwrap();
        assert!(d.usable(TypeKind::Activity, &id).is_ok());
    }
}
