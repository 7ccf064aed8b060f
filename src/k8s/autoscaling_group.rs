//! SIG Autoscaling's API group, `autoscaling.x-k8s.io`, which CapacityBuffers, CapacityQuotas and
//! ProvisioningRequests share, and the one way to read and write a custom resource of it (or of any group):
//! [`CustomResource`], a kind's group, versions served, plural and status, and how one object is read into
//! what the loop uses. The live cluster's watch and status writer (the companion's `control/`) and the
//! snapshot and demo readers go through it, so a fourth kind is a type and an impl.

use crate::model::Invalid;

pub const GROUP: &str = "autoscaling.x-k8s.io";

/// A custom resource kind: where the API server serves it, the status subresource written back, and one
/// object read (from a file, or from a watch with its `apiVersion` set to the version watched).
pub trait CustomResource {
    /// The API group (`autoscaling.x-k8s.io` for SIG Autoscaling's kinds).
    const GROUP: &'static str = GROUP;
    const KIND: &'static str;
    /// The resource's plural, as the RBAC and the CRD in `deploy/` name it.
    const PLURAL: &'static str;
    /// The versions read, the preferred first.
    const VERSIONS: &'static [&'static str];
    /// The status subresource as written back (a merge patch of the whole of it).
    type Status: serde::Serialize + std::fmt::Debug;
    /// What one object is read into.
    type Read;

    /// One object as a file or the API server writes it, with its `apiVersion`.
    fn read(object: serde_json::Value) -> Result<Self::Read, Invalid>;
}

/// The version of `kind` that `api_version` names, when it is one of `versions` of the group; otherwise why
/// not, naming the ones read.
pub fn read_version(
    api_version: &str,
    kind: &str,
    versions: &[&'static str],
) -> Result<&'static str, Invalid> {
    version_in(api_version, versions).ok_or_else(|| {
        let read: Vec<String> = versions.iter().map(|v| format!("{GROUP}/{v}")).collect();
        Invalid::value(format!(
            "apiVersion {api_version:?}: {kind}s are read as {}",
            read.join(" or ")
        ))
    })
}

/// A SIG Autoscaling object of kind `R` as a file writes it: its `apiVersion` must be one of `R`'s versions
/// of `autoscaling.x-k8s.io` and it must have a name. Returns the version it was read as.
pub fn read_object<R: CustomResource, T: serde::de::DeserializeOwned>(
    object: serde_json::Value,
) -> Result<(&'static str, T), Invalid> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let version = read_version(api_version, R::KIND, R::VERSIONS)?;
    if object["metadata"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        return Err(Invalid::value("no metadata.name"));
    }
    let read = serde_json::from_value(object).map_err(|e| Invalid::value(e.to_string()))?;
    Ok((version, read))
}

/// `api_version`'s version when it is `autoscaling.x-k8s.io/` and one of `versions`.
pub fn version_in(api_version: &str, versions: &[&'static str]) -> Option<&'static str> {
    let version = api_version.strip_prefix(GROUP)?.strip_prefix('/')?;
    versions.iter().copied().find(|v| *v == version)
}
