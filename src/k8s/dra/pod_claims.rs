//! What a pod claims: `spec.resourceClaims`, each resolved to its claim where the pod says
//! (`resourceclaim.Name`): a shared claim by its name, a template's claim by the name
//! `status.resourceClaimStatuses` gives once the claim controller made it. The containers' `resources.claims`
//! must name entries of `spec.resourceClaims`, as the API server checks.

use super::names;
use crate::k8s::object_error::{ObjectError, invalid};
use crate::model::{ClaimSource, PodClaim};
use k8s_openapi::api::core::v1 as api;
use std::collections::BTreeSet;

/// The claims of pod `key` (`namespace/name`): none, and nothing allocated, for a pod without DRA.
pub fn pod_claims(
    key: &str,
    spec: &api::PodSpec,
    status: Option<&api::PodStatus>,
) -> Result<Vec<PodClaim>, ObjectError> {
    let entries = spec.resource_claims.as_deref().unwrap_or_default();
    let fail = |field: String, reason: String| invalid(key, format!("{field}: {reason}"));
    let mut seen = BTreeSet::new();
    let mut claims = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |name: &str| format!("spec.resourceClaims[{i}].{name}");
        names::dns_label(&entry.name).map_err(|e| fail(field("name"), e.to_string()))?;
        if !seen.insert(entry.name.as_str()) {
            return Err(fail(
                field("name"),
                format!("{:?} is not unique", entry.name),
            ));
        }
        let claim = entry.resource_claim_name.as_deref();
        let template = entry.resource_claim_template_name.as_deref();
        let source = match (claim, template) {
            (Some(claim), None) => {
                names::dns_subdomain(claim, 253)
                    .map_err(|e| fail(field("resourceClaimName"), e.to_string()))?;
                ClaimSource::Claim(claim.into())
            }
            (None, Some(template)) => {
                names::dns_subdomain(template, 253)
                    .map_err(|e| fail(field("resourceClaimTemplateName"), e.to_string()))?;
                let statuses = status.and_then(|s| s.resource_claim_statuses.as_deref());
                let made = statuses
                    .unwrap_or_default()
                    .iter()
                    .find(|s| s.name == entry.name);
                match made.map(|s| s.resource_claim_name.as_deref()) {
                    // The claim controller found no claim was needed: nothing to allocate.
                    Some(None) => continue,
                    made => ClaimSource::Template {
                        template: template.into(),
                        made: made.flatten().map(Into::into),
                    },
                }
            }
            _ => {
                return Err(fail(
                    format!("spec.resourceClaims[{i}]"),
                    "exactly one of resourceClaimName and resourceClaimTemplateName must be set"
                        .into(),
                ));
            }
        };
        claims.push(PodClaim {
            name: entry.name.as_str().into(),
            source,
        });
    }
    // Every container's (and the pod's own) `resources.claims` names one of the pod's claims, each once.
    let containers = (spec.containers.iter().map(|c| ("containers", c))).chain(
        spec.init_containers
            .iter()
            .flatten()
            .map(|c| ("initContainers", c)),
    );
    let used = containers
        .map(|(list, c)| (format!("spec.{list}[{}]", c.name), c.resources.as_ref()))
        .chain([("spec".to_string(), spec.resources.as_ref())]);
    for (at, resources) in used {
        let Some(used) = resources.and_then(|r| r.claims.as_deref()) else {
            continue;
        };
        let mut seen_here = BTreeSet::new();
        for (j, claim) in used.iter().enumerate() {
            let field = format!("{at}.resources.claims[{j}]");
            if !seen.contains(claim.name.as_str()) {
                return Err(fail(
                    field,
                    format!("{:?} is not in spec.resourceClaims", claim.name),
                ));
            }
            if !seen_here.insert((claim.name.as_str(), claim.request.as_deref())) {
                return Err(fail(field, format!("{:?} is named twice", claim.name)));
            }
        }
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Name;
    use serde_json::json;

    fn claims(pod: serde_json::Value) -> Result<Vec<PodClaim>, ObjectError> {
        let pod: api::Pod = serde_json::from_value(pod).unwrap();
        pod_claims("web/p", pod.spec.as_ref().unwrap(), pod.status.as_ref())
    }

    #[test]
    fn claims_resolve_as_the_pod_says() {
        let read = claims(json!({"spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}, {"name": "nic"}]}}],
            "resourceClaims": [
                {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                {"name": "nic", "resourceClaimName": "shared-nic"},
                {"name": "later", "resourceClaimTemplateName": "one-gpu"},
                {"name": "none", "resourceClaimTemplateName": "maybe"}]},
            "status": {"resourceClaimStatuses": [
                {"name": "gpu", "resourceClaimName": "p-gpu-x7k2p"}, {"name": "none"}]}}))
        .unwrap();
        let made = |name: &str| Some(Name::from(name));
        assert_eq!(
            read,
            [
                PodClaim {
                    name: "gpu".into(),
                    source: ClaimSource::Template {
                        template: "one-gpu".into(),
                        made: made("p-gpu-x7k2p")
                    }
                },
                PodClaim {
                    name: "nic".into(),
                    source: ClaimSource::Claim("shared-nic".into())
                },
                PodClaim {
                    name: "later".into(),
                    source: ClaimSource::Template {
                        template: "one-gpu".into(),
                        made: None
                    }
                },
            ],
            "a template entry without a status is not made yet; one whose status names no claim needs none"
        );
    }

    #[test]
    fn what_the_api_server_refuses_is_refused() {
        for (pod, expected) in [
            (
                json!({"spec": {"containers": [], "resourceClaims": [{"name": "gpu"}]}}),
                "web/p: spec.resourceClaims[0]: exactly one of",
            ),
            (
                json!({"spec": {"containers": [], "resourceClaims": [{"name": "gpu",
                    "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]}}),
                "web/p: spec.resourceClaims[0]: exactly one of",
            ),
            (
                json!({"spec": {"containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]}}),
                "web/p: spec.containers[c].resources.claims[0]: \"gpu\" is not in spec.resourceClaims",
            ),
            (
                json!({"spec": {"containers": [], "resourceClaims": [
                    {"name": "g", "resourceClaimName": "a"}, {"name": "g", "resourceClaimName": "b"}]}}),
                "web/p: spec.resourceClaims[1].name: \"g\" is not unique",
            ),
        ] {
            let error = claims(pod).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
