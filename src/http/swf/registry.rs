//! Domains and their workflow and activity types: register, describe, list, deprecate and
//! undeprecate. A domain's registry is an instance on the domain name's partition; these
//! calls are served by its owner.

use super::{
    apply, fault, invalid, ok, relay, start_instance, stored, unknown, Answer, Fault, Req,
};
use crate::engine::swf::{domain_of, Call};
use crate::engine::Input;
use crate::http::forward::Route;
use crate::http::AppState;
use crate::swf::registry::{Domain, Registered, RegistrationStatus, TypeId, TypeKind};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

/// The registry of domain `name`, from its owner.
pub async fn domain(s: &AppState, name: &str) -> Result<Domain, Fault> {
    let id = crate::swf::domain_instance(s.peers.parts, name);
    let missing = || unknown(format!("Unknown domain: {name}"));
    match s.peers.route(&s.shared, id.partition(), false) {
        Route::Local => stored(s, &id.to_string())?
            .and_then(|r| domain_of(&r.instance).cloned())
            .ok_or_else(missing),
        Route::Remote(url) => {
            let target = format!("{}{}", super::TARGET, super::REGISTRY);
            let body = json!({"name": name}).to_string().into_bytes();
            let r = s
                .peers
                .relay_with(
                    Method::POST,
                    &url,
                    "/",
                    Some(body),
                    &[("x-amz-target", &target)],
                )
                .await;
            if r.status().is_server_error() {
                return Err(Fault(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailableException",
                    format!("the broker that owns domain {name:?} did not answer; retry"),
                ));
            }
            if r.status() != StatusCode::OK {
                return Err(missing());
            }
            let bytes = axum::body::to_bytes(r.into_body(), 64 << 20)
                .await
                .map_err(|e| {
                    Fault(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalFailure",
                        e.to_string(),
                    )
                })?;
            serde_json::from_slice(&bytes).map_err(|_| missing())
        }
        Route::Unavailable(why) => Err(Fault(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            why,
        )),
    }
}

fn kind_of(action: &str) -> TypeKind {
    if action.contains("Activity") {
        TypeKind::Activity
    } else {
        TypeKind::Workflow
    }
}

/// The type an action names (`workflowType` / `activityType`).
fn type_of(r: &Req, kind: TypeKind) -> Result<TypeId, Fault> {
    let field = format!("{}Type", kind.as_str());
    r.get(&field)
        .and_then(TypeId::from_wire)
        .ok_or_else(|| invalid(format!("{field} with a name and a version is required")))
}

/// A call about one domain, served by its owner.
pub async fn call(s: &AppState, r: &Req) -> Answer {
    let name = match r.action.as_str() {
        "RegisterDomain"
        | "DescribeDomain"
        | "DeprecateDomain"
        | "UndeprecateDomain"
        | super::REGISTRY => r.need("name")?,
        _ => r.need("domain")?,
    }
    .to_string();
    crate::swf::check_name("domain", &name).map_err(invalid)?;
    let id = crate::swf::domain_instance(s.peers.parts, &name);
    if let Some(answer) = relay(s, r, id.partition()).await? {
        return Ok(answer);
    }
    let iid = id.to_string();
    let current = stored(s, &iid)?.and_then(|rec| domain_of(&rec.instance).cloned());
    let missing = || unknown(format!("Unknown domain: {name}"));
    let action = r.action.as_str();
    match action {
        super::REGISTRY => match current {
            Some(d) => ok(serde_json::to_value(d).unwrap_or_default()),
            None => Err(missing()),
        },
        "RegisterDomain" => {
            if current.is_some() {
                return Err(fault(
                    "DomainAlreadyExistsFault",
                    format!("Domain already exists: {name}"),
                ));
            }
            let retention = r
                .need("workflowExecutionRetentionPeriodInDays")?
                .to_string();
            let d = Domain {
                name: name.clone(),
                description: r.str("description").map(str::to_string),
                retention_days: retention,
                status: RegistrationStatus::Registered,
                workflow_types: vec![],
                activity_types: vec![],
            };
            let input = serde_json::to_value(d).unwrap_or_default();
            start_instance(s, crate::swf::DOMAINS, input, id)
                .await
                .map_err(|e| Fault::from(crate::http::ApiError::from(e)))?;
            ok(json!({}))
        }
        "DescribeDomain" => {
            let d = current.ok_or_else(missing)?;
            ok(json!({
                "domainInfo": d.info(),
                "configuration": {"workflowExecutionRetentionPeriodInDays": d.retention_days},
            }))
        }
        "DeprecateDomain" | "UndeprecateDomain" => {
            current.ok_or_else(missing)?;
            let call = Call::SetDomainStatus {
                deprecate: action == "DeprecateDomain",
            };
            apply(s, &iid, Input::Swf { call }).await?;
            ok(json!({}))
        }
        "RegisterWorkflowType" | "RegisterActivityType" => {
            current.ok_or_else(missing)?;
            let kind = kind_of(action);
            let t = Registered {
                id: TypeId {
                    name: r.need("name")?.to_string(),
                    version: r.need("version")?.to_string(),
                },
                description: r.str("description").map(str::to_string),
                status: RegistrationStatus::Registered,
                created: chrono::Utc::now(),
                deprecated: None,
                defaults: r
                    .body
                    .iter()
                    .filter(|(k, v)| k.starts_with("default") && !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            };
            crate::swf::check_name("name", &t.id.name).map_err(invalid)?;
            crate::swf::check_name("version", &t.id.version).map_err(invalid)?;
            for (k, v) in &t.defaults {
                if k.ends_with("Timeout") {
                    crate::swf::Timeout::parse(v.as_str().unwrap_or_default())
                        .map_err(|e| invalid(format!("{k}: {e}")))?;
                }
            }
            let call = Call::RegisterType {
                kind,
                registered: t,
            };
            apply(s, &iid, Input::Swf { call }).await?;
            ok(json!({}))
        }
        "DescribeWorkflowType" | "DescribeActivityType" => {
            let d = current.ok_or_else(missing)?;
            let kind = kind_of(action);
            let tid = type_of(r, kind)?;
            let t = d.find(kind, &tid).ok_or_else(|| {
                unknown(format!(
                    "Unknown type: name={}, version={}",
                    tid.name, tid.version
                ))
            })?;
            ok(json!({"typeInfo": t.info(kind), "configuration": t.defaults}))
        }
        "ListWorkflowTypes" | "ListActivityTypes" => {
            let d = current.ok_or_else(missing)?;
            let kind = kind_of(action);
            let status = r.need("registrationStatus")?;
            let name = r.str("name");
            let mut infos: Vec<Value> = d
                .types(kind)
                .iter()
                .filter(|t| t.status.as_str() == status && name.is_none_or(|n| n == t.id.name))
                .map(|t| t.info(kind))
                .collect();
            if r.get("reverseOrder").and_then(Value::as_bool) == Some(true) {
                infos.reverse();
            }
            ok(json!({"typeInfos": infos}))
        }
        "DeprecateWorkflowType"
        | "DeprecateActivityType"
        | "UndeprecateWorkflowType"
        | "UndeprecateActivityType" => {
            current.ok_or_else(missing)?;
            let kind = kind_of(action);
            let call = Call::SetTypeStatus {
                kind,
                id: type_of(r, kind)?,
                deprecate: action.starts_with("Deprecate"),
            };
            apply(s, &iid, Input::Swf { call }).await?;
            ok(json!({}))
        }
        _ => Err(invalid(format!("{action} is not a registry action"))),
    }
}

/// `ListDomains`: the domains on the partitions this broker owns and, unless the request
/// was relayed, every other broker's.
pub async fn list_domains(s: &AppState, r: &Req) -> Answer {
    let status = r.need("registrationStatus")?.to_string();
    let mut infos = super::gather::local_instances(s, crate::swf::DOMAINS)?
        .into_iter()
        .filter_map(|rec| domain_of(&rec.instance).cloned())
        .filter(|d| d.status.as_str() == status)
        .map(|d| d.info())
        .collect::<Vec<_>>();
    if !r.forwarded {
        for v in super::gather::from_peers(s, r, "domainInfos").await {
            infos.push(v);
        }
    }
    infos.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    infos.dedup_by(|a, b| a["name"] == b["name"]);
    if r.get("reverseOrder").and_then(Value::as_bool) == Some(true) {
        infos.reverse();
    }
    ok(json!({"domainInfos": infos}))
}
