//! A domain's registry as an instance: started by `RegisterDomain`, changed by the
//! register, deprecate and undeprecate calls, never finished.

use super::{Call, SwfError};
use crate::engine::instance::{Activity, Instance, Status};
use crate::engine::{EngineError, Input, Step};
use crate::swf::registry::{Domain, RegistrationStatus};
use chrono::{DateTime, Utc};

pub fn apply(mut inst: Instance, input: Input, now: DateTime<Utc>) -> Result<Step, EngineError> {
    match (std::mem::take(&mut inst.activity), input) {
        (_, Input::Start { input, .. }) => {
            let d: Domain = serde_json::from_value(input)
                .map_err(|e| SwfError::Validation(format!("not a domain registration: {e}")))?;
            inst.visit = 1;
            inst.state = Some(RegistrationStatus::Registered.as_str().into());
            inst.status = Status::Waiting;
            inst.activity = Activity::SwfDomain {
                domain: Box::new(d),
            };
            Ok(Step {
                instance: inst,
                actions: vec![],
                entered: vec!["RegisterDomain".into()],
            })
        }
        (Activity::SwfDomain { domain }, Input::Swf { call }) => {
            let mut d = *domain;
            let what = match call {
                Call::RegisterType { kind, registered } => {
                    d.register(kind, registered).map_err(SwfError::from)?;
                    "RegisterType"
                }
                Call::SetTypeStatus {
                    kind,
                    id,
                    deprecate,
                } => {
                    d.set_type_status(kind, &id, deprecate, now)
                        .map_err(SwfError::from)?;
                    if deprecate {
                        "DeprecateType"
                    } else {
                        "UndeprecateType"
                    }
                }
                Call::SetDomainStatus { deprecate } => {
                    use crate::swf::registry::RegistryError;
                    let want = if deprecate {
                        RegistrationStatus::Deprecated
                    } else {
                        RegistrationStatus::Registered
                    };
                    if d.status == want {
                        let e = if deprecate {
                            RegistryError::DomainDeprecated(format!(
                                "Domain is deprecated: {}",
                                d.name
                            ))
                        } else {
                            RegistryError::DomainAlreadyExists(format!(
                                "Domain is registered: {}",
                                d.name
                            ))
                        };
                        return Err(SwfError::from(e).into());
                    }
                    d.status = want;
                    if deprecate {
                        "DeprecateDomain"
                    } else {
                        "UndeprecateDomain"
                    }
                }
                _ => {
                    return Err(
                        SwfError::Validation("a domain takes registry calls only".into()).into(),
                    )
                }
            };
            inst.visit += 1;
            inst.state = Some(d.status.as_str().into());
            inst.activity = Activity::SwfDomain {
                domain: Box::new(d),
            };
            Ok(Step {
                instance: inst,
                actions: vec![],
                entered: vec![what.into()],
            })
        }
        (Activity::SwfDomain { .. }, _) => {
            Err(SwfError::Validation("a domain takes registry calls only".into()).into())
        }
        _ => Err(EngineError::NotStarted(inst.id.clone())),
    }
}
