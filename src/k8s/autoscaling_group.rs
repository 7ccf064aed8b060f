//! SIG Autoscaling's API group, `autoscaling.x-k8s.io`, which CapacityBuffers, CapacityQuotas and
//! ProvisioningRequests share: which of a resource's versions an object is written in, and an object of
//! the group read from a file.

pub const GROUP: &str = "autoscaling.x-k8s.io";

/// The version of `kind` that `api_version` names, when it is one of `versions` of the group; otherwise why
/// not, naming the ones read.
pub fn read_version(
    api_version: &str,
    kind: &str,
    versions: &[&'static str],
) -> Result<&'static str, String> {
    version_in(api_version, versions).ok_or_else(|| {
        let read: Vec<String> = versions.iter().map(|v| format!("{GROUP}/{v}")).collect();
        format!(
            "apiVersion {api_version:?}: {kind}s are read as {}",
            read.join(" or ")
        )
    })
}

/// A SIG Autoscaling object of `kind` as a file writes it: its `apiVersion` must be one of `versions` of
/// `autoscaling.x-k8s.io` and it must have a name. Returns the version it was read as.
pub fn read_object<T: serde::de::DeserializeOwned>(
    object: serde_json::Value,
    kind: &str,
    versions: &[&'static str],
) -> Result<(&'static str, T), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let version = read_version(api_version, kind, versions)?;
    if object["metadata"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        return Err("no metadata.name".into());
    }
    let read = serde_json::from_value(object).map_err(|e| e.to_string())?;
    Ok((version, read))
}

/// `api_version`'s version when it is `autoscaling.x-k8s.io/` and one of `versions`.
pub fn version_in(api_version: &str, versions: &[&'static str]) -> Option<&'static str> {
    let version = api_version.strip_prefix(GROUP)?.strip_prefix('/')?;
    versions.iter().copied().find(|v| *v == version)
}
