//! The four kinds read into one [`DraObjects`], object by object, as a snapshot's items or a watch's cache
//! hand them over. An object the API server would refuse is left out, with the reason naming it and the
//! field, and the rest read on: one odd claim must not stop the loop.

use super::check::{GROUP, VERSIONS};
use super::claim::{claim_template, resource_claim};
use super::class::device_class;
use super::slice::resource_slice;
use crate::k8s::object_error::ObjectError;
use crate::model::DraObjects;
use std::sync::Arc;

/// The kinds of `resource.k8s.io` read, with their resources (plurals), cluster-scoped first.
pub const DRA_KINDS: [(&str, &str); 4] = [
    ("DeviceClass", "deviceclasses"),
    ("ResourceSlice", "resourceslices"),
    ("ResourceClaim", "resourceclaims"),
    ("ResourceClaimTemplate", "resourceclaimtemplates"),
];

/// `resource.k8s.io` and the versions read, the preferred first.
pub const DRA_GROUP: &str = GROUP;
pub const DRA_VERSIONS: [&str; 2] = VERSIONS;

/// Reads `value`, an object of `kind` (one of [`DRA_KINDS`]), into `into`; an object that does not read,
/// or a kind that is not one of them, is refused with the reason, `into` untouched.
pub fn read_dra_object(
    into: &mut DraObjects,
    kind: &str,
    value: serde_json::Value,
) -> Result<(), ObjectError> {
    match kind {
        "DeviceClass" => into.classes.push(Arc::new(device_class(value)?)),
        "ResourceClaim" => into.claims.push(Arc::new(resource_claim(value)?)),
        "ResourceClaimTemplate" => into.templates.push(Arc::new(claim_template(value)?)),
        "ResourceSlice" => into.slices.push(Arc::new(resource_slice(value)?)),
        other => {
            return Err(ObjectError::Invalid {
                object: other.to_string(),
                reason: format!("not a kind of {GROUP}"),
            });
        }
    }
    Ok(())
}
