//! ResourceClaims and ResourceClaimTemplates into the model, checked as the API server checks them (after
//! its defaulting: `allocationMode` ExactCount and `count` 1 when left out), so that the allocator can rely
//! on every request being one it understands.

use super::api;
use super::check::{self, Object};
use super::names;
use crate::k8s::object_error::ObjectError;
use crate::model::{
    AllocatedDevice, Allocation, AllocationMode, ClaimSpec, ClaimTemplate, DeviceAsk, DeviceId,
    DeviceRequest, DeviceTaintEffect, DeviceToleration, EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    MatchAttribute, Name, ResourceClaim,
};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The API's limits (`resource.k8s.io/v1` types): requests and constraints of a claim, sub-requests of a
/// request, tolerations of a request, devices of an allocation, consumers of a claim.
const REQUESTS_MAX: usize = 32;
const SUB_REQUESTS_MAX: usize = 8;
const CONSTRAINTS_MAX: usize = 32;
const TOLERATIONS_MAX: usize = 16;
const RESULTS_MAX: usize = 32;
const RESERVED_MAX: usize = 256;

/// A ResourceClaim from its JSON: its spec, the pod it was made for, its allocation and reservations.
pub fn resource_claim(value: serde_json::Value) -> Result<ResourceClaim, ObjectError> {
    let (object, claim): (Object, api::ResourceClaim) =
        check::read("ResourceClaim", check::ObjectScope::Namespaced, value)?;
    let name = check::object_name(&object, &claim.metadata)?;
    let spec = claim_spec(&object, "spec", &claim.spec)?;
    // A claim made from a template for a pod has that pod as its controller (what `IsForPod` checks).
    let owner_pod = (claim.metadata.owner_references.iter())
        .find(|o| o.controller == Some(true) && o.kind == "Pod" && o.api_version == "v1")
        .map(|o| Name::from(o.uid.as_str()));
    let extended_resources = (claim.metadata.annotations)
        .get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
        .is_some_and(|v| v == "true");
    let allocation = (claim.status.allocation.as_ref())
        .map(|a| allocation(&object, a))
        .transpose()?;
    let reserved = &claim.status.reserved_for;
    object.at_most("status.reservedFor", reserved.len(), RESERVED_MAX)?;
    let reserved_for = reserved
        .iter()
        .filter(|r| r.api_group.is_empty() && r.resource == "pods")
        .map(|r| Name::from(r.uid.as_str()))
        .collect();
    Ok(ResourceClaim {
        namespace: check::namespace(&claim.metadata),
        name,
        spec: Arc::new(spec),
        owner_pod,
        allocation,
        reserved_for,
        extended_resources,
    })
}

/// A ResourceClaimTemplate from its JSON: the claim spec each pod naming it gets.
pub fn claim_template(value: serde_json::Value) -> Result<ClaimTemplate, ObjectError> {
    let (object, template): (Object, api::ResourceClaimTemplate) = check::read(
        "ResourceClaimTemplate",
        check::ObjectScope::Namespaced,
        value,
    )?;
    let name = check::object_name(&object, &template.metadata)?;
    let spec = claim_spec(&object, "spec.spec", &template.spec.spec)?;
    Ok(ClaimTemplate {
        namespace: check::namespace(&template.metadata),
        name,
        spec: Arc::new(spec),
    })
}

/// `spec.devices` of a claim (at `at`): its requests, then its constraints, which name them.
fn claim_spec(
    object: &Object,
    at: &str,
    spec: &api::ResourceClaimSpec,
) -> Result<ClaimSpec, ObjectError> {
    let at = format!("{at}.devices");
    let devices = &spec.devices;
    object.at_most(
        &format!("{at}.requests"),
        devices.requests.len(),
        REQUESTS_MAX,
    )?;
    let mut seen = BTreeSet::new();
    let mut requests = Vec::with_capacity(devices.requests.len());
    for (i, request) in devices.requests.iter().enumerate() {
        let field = format!("{at}.requests[{i}]");
        unique_label(object, &format!("{field}.name"), &request.name, &mut seen)?;
        requests.push(device_request(object, &field, request)?);
    }
    let constraints = &devices.constraints;
    object.at_most(
        &format!("{at}.constraints"),
        constraints.len(),
        CONSTRAINTS_MAX,
    )?;
    let constraints = (constraints.iter().enumerate())
        .map(|(i, c)| constraint(object, &format!("{at}.constraints[{i}]"), c, &requests))
        .collect::<Result<_, _>>()?;
    Ok(ClaimSpec {
        requests,
        constraints,
    })
}

/// A DNS label not seen before in its list.
fn unique_label<'a>(
    object: &Object,
    field: &str,
    name: &'a str,
    seen: &mut BTreeSet<&'a str>,
) -> Result<(), ObjectError> {
    names::dns_label(name).map_err(|e| object.fail(field, e))?;
    match seen.insert(name) {
        true => Ok(()),
        false => Err(object.fail(field, format!("{name:?} is not unique"))),
    }
}

/// One request: exactly one of `exactly` and `firstAvailable`.
fn device_request(
    object: &Object,
    field: &str,
    request: &api::DeviceRequest,
) -> Result<DeviceRequest, ObjectError> {
    let sub_requests = request.first_available.as_deref().filter(|s| !s.is_empty());
    let (first_available, asks) = match (&request.exactly, sub_requests) {
        (Some(exactly), None) => {
            let fields = AskFields {
                class: &exactly.device_class_name,
                selectors: &exactly.selectors,
                mode: exactly.allocation_mode.as_deref(),
                count: exactly.count,
                admin_access: exactly.admin_access,
                tolerations: &exactly.tolerations,
            };
            (
                false,
                vec![ask(object, &format!("{field}.exactly"), "", fields)?],
            )
        }
        (None, Some(subs)) => {
            let at = format!("{field}.firstAvailable");
            object.at_most(&at, subs.len(), SUB_REQUESTS_MAX)?;
            let mut seen = BTreeSet::new();
            let mut asks = Vec::with_capacity(subs.len());
            for (i, sub) in subs.iter().enumerate() {
                let at = format!("{at}[{i}]");
                unique_label(object, &format!("{at}.name"), &sub.name, &mut seen)?;
                let fields = AskFields {
                    class: &sub.device_class_name,
                    selectors: &sub.selectors,
                    mode: sub.allocation_mode.as_deref(),
                    count: sub.count,
                    admin_access: None,
                    tolerations: &sub.tolerations,
                };
                asks.push(ask(object, &at, &sub.name, fields)?);
            }
            (true, asks)
        }
        (Some(_), Some(_)) => {
            return Err(object.fail(
                field,
                "exactly and firstAvailable are both set: exactly one of them may be",
            ));
        }
        (None, None) => {
            return Err(object.fail(
                field,
                "neither exactly nor firstAvailable is set: exactly one of them must be",
            ));
        }
    };
    Ok(DeviceRequest {
        name: request.name.as_str().into(),
        first_available,
        asks,
    })
}

/// What `exactly` and a sub-request share (a sub-request has no admin access).
struct AskFields<'a> {
    class: &'a str,
    selectors: &'a [api::DeviceSelector],
    mode: Option<&'a str>,
    count: Option<i64>,
    admin_access: Option<bool>,
    tolerations: &'a [api::DeviceToleration],
}

fn ask(
    object: &Object,
    field: &str,
    name: &str,
    fields: AskFields<'_>,
) -> Result<DeviceAsk, ObjectError> {
    names::dns_subdomain(fields.class, 253)
        .map_err(|e| object.fail(format!("{field}.deviceClassName"), e))?;
    let selectors = check::selectors(object, &format!("{field}.selectors"), fields.selectors)?;
    let count_field = format!("{field}.count");
    let mode = match fields.mode.unwrap_or_default() {
        // Defaulted as the API server defaults it: a count left out (or 0) is one device.
        "" | "ExactCount" => match fields.count.unwrap_or(0) {
            0 => AllocationMode::ExactCount(1),
            count @ 1.. => AllocationMode::ExactCount(
                u32::try_from(count).map_err(|_| object.fail(&count_field, "too large"))?,
            ),
            count => {
                return Err(
                    object.fail(&count_field, format!("{count}: must be greater than zero"))
                );
            }
        },
        "All" => match fields.count.unwrap_or(0) {
            0 => AllocationMode::All,
            count => {
                return Err(object.fail(
                    &count_field,
                    format!("{count}: must not be set when allocationMode is All"),
                ));
            }
        },
        other => {
            return Err(object.fail(
                format!("{field}.allocationMode"),
                format!("unknown mode {other:?}: ExactCount or All"),
            ));
        }
    };
    let at = format!("{field}.tolerations");
    object.at_most(&at, fields.tolerations.len(), TOLERATIONS_MAX)?;
    let tolerations = (fields.tolerations.iter().enumerate())
        .map(|(i, t)| toleration(object, &format!("{at}[{i}]"), t))
        .collect::<Result<_, _>>()?;
    Ok(DeviceAsk {
        name: name.into(),
        class: fields.class.into(),
        selectors,
        mode,
        admin_access: fields.admin_access.unwrap_or(false),
        tolerations,
    })
}

/// A toleration of device taints: `Equal` (the default) compares the value, `Exists` takes none.
fn toleration(
    object: &Object,
    field: &str,
    toleration: &api::DeviceToleration,
) -> Result<DeviceToleration, ObjectError> {
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() {
        names::label_key(key).map_err(|e| object.fail(format!("{field}.key"), e))?;
    }
    let value = toleration.value.as_deref().unwrap_or_default();
    let exists = match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            names::label_value(value).map_err(|e| object.fail(format!("{field}.value"), e))?;
            false
        }
        "Exists" if value.is_empty() => true,
        "Exists" => {
            return Err(object.fail(
                format!("{field}.value"),
                format!("{value:?}: operator Exists takes no value"),
            ));
        }
        other => {
            return Err(object.fail(
                format!("{field}.operator"),
                format!("unknown operator {other:?}: Equal or Exists"),
            ));
        }
    };
    let effect = match toleration.effect.as_deref().unwrap_or_default() {
        "" => None,
        "NoSchedule" => Some(DeviceTaintEffect::NoSchedule),
        "NoExecute" => Some(DeviceTaintEffect::NoExecute),
        other => {
            return Err(object.fail(
                format!("{field}.effect"),
                format!(
                    "unknown effect {other:?}: NoSchedule, NoExecute, or none for every effect"
                ),
            ));
        }
    };
    Ok(DeviceToleration {
        key: key.into(),
        exists,
        value: value.into(),
        effect,
    })
}

/// A constraint: `matchAttribute` over the requests it names (each a request of the claim, or one of its
/// sub-requests as `request/sub-request`). `distinctAttribute` needs consumable capacity, which the stable
/// allocator does not implement.
fn constraint(
    object: &Object,
    field: &str,
    constraint: &api::DeviceConstraint,
    requests: &[DeviceRequest],
) -> Result<MatchAttribute, ObjectError> {
    let mut seen = BTreeSet::new();
    for (i, name) in constraint.requests.iter().enumerate() {
        let at = format!("{field}.requests[{i}]");
        let (request, sub) = match name.split_once('/') {
            Some((request, sub)) => (request, Some(sub)),
            None => (name.as_str(), None),
        };
        let known = requests.iter().any(|r| {
            &*r.name == request
                && sub.is_none_or(|sub| r.first_available && r.asks.iter().any(|a| &*a.name == sub))
        });
        if !known {
            return Err(object.fail(at, format!("{name:?} names no request of the claim")));
        }
        if !seen.insert(name.as_str()) {
            return Err(object.fail(at, format!("{name:?} is not unique")));
        }
    }
    let attribute = match (&constraint.match_attribute, &constraint.distinct_attribute) {
        (Some(attribute), None) => names::fully_qualified(attribute)
            .map_err(|e| object.fail(format!("{field}.matchAttribute"), e))?,
        (None, Some(_)) => {
            return Err(object.fail(
                format!("{field}.distinctAttribute"),
                "not supported: it needs consumable capacity (DRAConsumableCapacity), which the \
                 allocator does not implement",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(object.fail(
                field,
                "matchAttribute and distinctAttribute are both set: exactly one of them may be",
            ));
        }
        (None, None) => {
            return Err(object.fail(
                field,
                "no matchAttribute: a constraint says which attribute the devices share",
            ));
        }
    };
    Ok(MatchAttribute {
        requests: constraint
            .requests
            .iter()
            .map(|r| r.as_str().into())
            .collect(),
        attribute,
    })
}

/// `status.allocation`: the devices given to the claim and the nodes they are usable from.
fn allocation(
    object: &Object,
    allocation: &api::AllocationResult,
) -> Result<Allocation, ObjectError> {
    let at = "status.allocation.devices.results";
    let results = &allocation.devices.results;
    object.at_most(at, results.len(), RESULTS_MAX)?;
    let mut devices = Vec::with_capacity(results.len());
    for (i, result) in results.iter().enumerate() {
        let field = |name: &str| format!("{at}[{i}].{name}");
        if result.request.is_empty() {
            return Err(object.fail(field("request"), "must not be empty"));
        }
        names::driver(&result.driver).map_err(|e| object.fail(field("driver"), e))?;
        names::pool(&result.pool).map_err(|e| object.fail(field("pool"), e))?;
        names::dns_label(&result.device).map_err(|e| object.fail(field("device"), e))?;
        devices.push(AllocatedDevice {
            request: result.request.as_str().into(),
            device: DeviceId {
                driver: result.driver.as_str().into(),
                pool: result.pool.as_str().into(),
                device: result.device.as_str().into(),
            },
            admin_access: result.admin_access.unwrap_or(false),
        });
    }
    let node_selector = (allocation.node_selector.as_ref())
        .map(|s| check::selector(object, "status.allocation.nodeSelector", s))
        .transpose()?;
    Ok(Allocation {
        devices,
        node_selector,
    })
}

#[cfg(test)]
mod tests;
