//! DeviceClasses into the model: the selectors every device of the class passes, and the extended resource
//! the class stands for. Its `config` is for drivers, not allocation, and is not read.

use super::api;
use super::check::{self, Object};
use super::names;
use crate::k8s::object_error::ObjectError;
use crate::model::{DeviceClass, Invalid};

/// A DeviceClass from its JSON (`resource.k8s.io/v1`), checked as the API server checks it.
pub fn device_class(value: serde_json::Value) -> Result<DeviceClass, ObjectError> {
    let (object, class): (Object, api::DeviceClass) =
        check::read("DeviceClass", check::ObjectScope::Cluster, value)?;
    let name = check::object_name(&object, &class.metadata)?;
    let selectors = check::selectors(&object, "spec.selectors", &class.spec.selectors)?;
    let extended_resource_name = match class.spec.extended_resource_name.as_deref() {
        None | Some("") => None,
        Some(resource) => {
            // An extended resource's name, as a pod's container requests it (`nvidia.com/gpu`).
            names::label_key(resource)
                .and_then(|()| match resource.contains('/') {
                    true => Ok(()),
                    false => Err(Invalid::value(format!(
                        "{resource:?} has no domain (such as nvidia.com/gpu)"
                    ))),
                })
                .map_err(|e| object.fail("spec.extendedResourceName", e))?;
            Some(resource.into())
        }
    };
    Ok(DeviceClass {
        name,
        selectors,
        extended_resource_name,
        created: (class.metadata.creation_timestamp.as_ref()).map(|t| {
            let seconds = u64::try_from(t.0.as_second()).unwrap_or(0);
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_class_is_its_selectors() {
        let class = device_class(
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com", "creationTimestamp": "2026-12-01T10:00:00Z"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
                     "extendedResourceName": "nvidia.com/gpu",
                     "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}]}}),
        )
        .unwrap();
        assert_eq!(&*class.name, "gpu.nvidia.com");
        assert_eq!(&*class.selectors[0], "device.driver == 'gpu.nvidia.com'");
        assert_eq!(
            class.extended_resource_name.as_deref(),
            Some("nvidia.com/gpu")
        );
        // Which of two classes for one resource serves it: the newer.
        let created = class.created.unwrap();
        assert_eq!(
            created
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            1_796_119_200
        );
    }

    #[test]
    fn a_selector_without_cel_or_an_old_version_is_refused() {
        let error = device_class(json!({"kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{}]}}))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("DeviceClass gpu: spec.selectors[0]: no cel"),
            "{error}"
        );
        let error = device_class(json!({"apiVersion": "resource.k8s.io/v1beta1",
            "kind": "DeviceClass", "metadata": {"name": "gpu"}}))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("DeviceClass gpu: apiVersion: \"resource.k8s.io/v1beta1\""),
            "{error}"
        );
        let class = device_class(json!({"apiVersion": "resource.k8s.io/v1beta2",
            "kind": "DeviceClass", "metadata": {"name": "gpu"}}));
        assert!(class.unwrap().selectors.is_empty());
    }
}
