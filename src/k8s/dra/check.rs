//! What every DRA conversion shares: the message that names the object and the field, the one API version
//! read, object names, quantities, selectors and node selections.

use super::api;
use super::names;
use crate::k8s::object_error::{ObjectError, invalid};
use crate::k8s::scheduling::node_selector;
use crate::model::{Name, NodeScope, NodeSelector, Quantity};
use serde::de::DeserializeOwned;
use std::fmt::Display;

/// The group read, and its versions: `v1` (Kubernetes 1.34 and later) and `v1beta2` (1.33, the same
/// fields), the first preferred.
pub const GROUP: &str = "resource.k8s.io";
pub const VERSIONS: [&str; 2] = ["v1", "v1beta2"];

/// The object being read (`ResourceClaim web/gpu`), named in every refusal.
pub struct Object(pub String);

impl Object {
    /// `field` is wrong, because `reason`.
    pub fn fail(&self, field: impl Display, reason: impl Display) -> ObjectError {
        invalid(&self.0, format!("{field}: {reason}"))
    }

    /// At most `max` entries in list `field`.
    pub fn at_most(&self, field: &str, len: usize, max: usize) -> Result<(), ObjectError> {
        match len > max {
            true => Err(self.fail(field, format!("{len} entries, at most {max} allowed"))),
            false => Ok(()),
        }
    }
}

/// Whether objects of a kind live in a namespace (claims and their templates) or in the cluster (classes,
/// slices): what their names in refusals carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectScope {
    Namespaced,
    Cluster,
}

/// Reads `value`, an object of `kind`, as `T`: named first from its metadata (so that a refusal names it
/// even when the rest does not read), then its `apiVersion` checked (one left out, as a typed list's items
/// may, is taken as read).
pub fn read<T: DeserializeOwned>(
    kind: &str,
    scope: ObjectScope,
    value: serde_json::Value,
) -> Result<(Object, T), ObjectError> {
    let meta = &value["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let object = Object(match scope {
        ObjectScope::Namespaced => {
            let namespace = meta["namespace"].as_str().filter(|n| !n.is_empty());
            format!("{kind} {}/{name}", namespace.unwrap_or("default"))
        }
        ObjectScope::Cluster => format!("{kind} {name}"),
    });
    if let Some(version) = value.get("apiVersion").and_then(|v| v.as_str()) {
        let read = VERSIONS
            .iter()
            .any(|v| version.strip_prefix(GROUP) == Some(&format!("/{v}")));
        if !read {
            return Err(object.fail(
                "apiVersion",
                format!(
                    "{version:?}: only {GROUP}/v1 (Kubernetes 1.34 and later) and {GROUP}/v1beta2 (1.33) are \
                     read; older versions lay requests and devices out differently (kubectl get \
                     {}s.v1.{GROUP} prints v1)",
                    kind.to_ascii_lowercase()
                ),
            ));
        }
    }
    let read = serde_json::from_value(value).map_err(|e| invalid(&object.0, e.to_string()))?;
    Ok((object, read))
}

/// An object's `metadata.name`: a DNS subdomain.
pub fn object_name(object: &Object, meta: &api::Meta) -> Result<Name, ObjectError> {
    let name = meta.name.as_deref().unwrap_or_default();
    names::dns_subdomain(name, 253).map_err(|e| object.fail("metadata.name", e))?;
    Ok(name.into())
}

/// A namespaced object's namespace (`default` when it leaves it out, as kubectl and the API take it).
pub fn namespace(meta: &api::Meta) -> Name {
    match meta.namespace.as_deref() {
        None | Some("") => "default".into(),
        Some(namespace) => namespace.into(),
    }
}

/// A quantity of `field` (a capacity's or a counter's `value`), which must be there.
pub fn quantity(
    object: &Object,
    field: &str,
    written: Option<&api::QuantityText>,
) -> Result<Quantity, ObjectError> {
    let Some(text) = written else {
        return Err(object.fail(field, "missing"));
    };
    text.0.parse().map_err(|e| object.fail(field, e))
}

/// The CEL expressions of `selectors` (class, request or sub-request), at most 32, each with `cel`.
pub fn selectors(
    object: &Object,
    field: &str,
    selectors: &[api::DeviceSelector],
) -> Result<Vec<Name>, ObjectError> {
    object.at_most(field, selectors.len(), 32)?;
    selectors
        .iter()
        .enumerate()
        .map(|(i, selector)| {
            let Some(cel) = &selector.cel else {
                return Err(object.fail(
                    format!("{field}[{i}]"),
                    "no cel: a selector is a CEL expression, the only kind there is",
                ));
            };
            let expression = cel.expression.as_str();
            if expression.trim().is_empty() {
                return Err(object.fail(format!("{field}[{i}].cel.expression"), "empty"));
            }
            if expression.len() > CEL_MAX {
                return Err(object.fail(
                    format!("{field}[{i}].cel.expression"),
                    format!("{} bytes, at most {CEL_MAX}", expression.len()),
                ));
            }
            Ok(expression.into())
        })
        .collect()
}

/// The longest CEL selector expression (`CELSelectorExpressionMaxLength`).
const CEL_MAX: usize = 10 * 1024;

/// A node selector of a slice, a device or an allocation, in the model.
pub fn selector(
    object: &Object,
    field: &str,
    selector: &k8s_openapi::api::core::v1::NodeSelector,
) -> Result<NodeSelector, ObjectError> {
    node_selector(&format!("{}: {field}", object.0), selector)
}

/// Which nodes reach a slice's devices (`per_device` allowed) or one device's: exactly one of `nodeName`,
/// `nodeSelector` (of exactly one term), `allNodes: true` and `perDeviceNodeSelection: true`.
pub fn node_scope(
    object: &Object,
    at: &str,
    node_name: Option<&str>,
    selector_written: Option<&k8s_openapi::api::core::v1::NodeSelector>,
    all_nodes: Option<bool>,
    per_device: Option<Option<bool>>,
) -> Result<Option<NodeScope>, ObjectError> {
    let per_device_set = per_device.flatten() == Some(true);
    let set: Vec<&str> = [
        node_name.map(|_| "nodeName"),
        selector_written.map(|_| "nodeSelector"),
        (all_nodes == Some(true)).then_some("allNodes"),
        per_device_set.then_some("perDeviceNodeSelection"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let fields = match per_device {
        Some(_) => "nodeName, nodeSelector, allNodes: true and perDeviceNodeSelection: true",
        None => "nodeName, nodeSelector and allNodes: true",
    };
    if set.len() > 1 {
        return Err(object.fail(
            at,
            format!(
                "{} are set: exactly one of {fields} may be",
                set.join(" and ")
            ),
        ));
    }
    let Some(&which) = set.first() else {
        return Ok(None);
    };
    let field = format!("{at}.{which}");
    let field = field.trim_start_matches('.');
    Ok(Some(match which {
        "nodeName" => {
            let name = node_name.unwrap_or_default();
            names::dns_subdomain(name, 253).map_err(|e| object.fail(field, e))?;
            NodeScope::Node(name.into())
        }
        "nodeSelector" => {
            let written = selector_written.expect("set");
            let selector = selector(object, field, written)?;
            if selector.terms.len() != 1 {
                return Err(object.fail(
                    field,
                    format!(
                        "{} terms: a slice's or device's node selector has exactly one",
                        selector.terms.len()
                    ),
                ));
            }
            NodeScope::Selector(selector)
        }
        "allNodes" => NodeScope::All,
        _ => NodeScope::PerDevice,
    }))
}
