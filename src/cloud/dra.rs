//! The ResourceSlices a new node of a group will publish (its template slices, scale from zero with DRA):
//! derived from the node group's instance type for the DRA drivers the group says its nodes run. A driver
//! publishes its slices only once the node is up, so cluster-autoscaler can plan DRA pods onto a group at
//! zero nodes only from these (`NodeInfo.LocalResourceSlices` of the template).
//!
//! Known drivers: NVIDIA's `gpu.nvidia.com` (k8s-dra-driver-gpu), which publishes one pool named after the
//! node, node-local, in one slice holding a device `gpu-<minor>` per full GPU.

use super::instance_types::GpuModel;
use crate::model::{AttrValue, Device, Name, NodeScope, PoolRef, QualifiedName, ResourceSlice};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// NVIDIA's GPU driver.
pub const NVIDIA_GPU_DRIVER: &str = "gpu.nvidia.com";

/// The drivers whose slices can be derived from an instance type.
pub const KNOWN_DRIVERS: &[&str] = &[NVIDIA_GPU_DRIVER];

/// The NVIDIA driver and the CUDA version it supports, as on EKS's accelerated AMIs (AL2023 NVIDIA, 2025):
/// what the DRA driver publishes as `driverVersion` and `cudaDriverVersion`. A node's own AMI may differ;
/// selectors on these attributes should ask for a minimum.
const NVIDIA_DRIVER_VERSION: &str = "570.133.20";
const CUDA_DRIVER_VERSION: &str = "12.8.0";

/// What a template's slices are derived from.
#[derive(Clone, Copy, Debug)]
pub struct InstanceGpus<'a> {
    pub instance_type: &'a str,
    pub count: u32,
    /// `None` when the instance type has GPUs of a model the table does not know.
    pub model: Option<&'a GpuModel>,
}

/// Why a group's slices cannot be derived.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DraError {
    #[error("unknown DRA driver {0:?}: the known drivers are {known}", known = KNOWN_DRIVERS.join(", "))]
    UnknownDriver(String),
    #[error("DRA driver {driver:?} needs GPUs, and instance type {instance_type:?} has none")]
    NoGpu {
        driver: String,
        instance_type: String,
    },
    #[error("DRA driver {driver:?}: the GPU of instance type {instance_type:?} is not one we know")]
    UnknownGpu {
        driver: String,
        instance_type: String,
    },
    #[error("DRA driver {0:?} listed twice")]
    Twice(String),
}

/// The slices a new node named `node_name` publishes, one per driver, in the drivers' order.
pub fn template_slices(
    node_name: &str,
    drivers: &[String],
    gpus: InstanceGpus,
) -> Result<Vec<ResourceSlice>, DraError> {
    let mut slices = Vec::with_capacity(drivers.len());
    for (i, driver) in drivers.iter().enumerate() {
        if drivers[..i].contains(driver) {
            return Err(DraError::Twice(driver.clone()));
        }
        match driver.as_str() {
            NVIDIA_GPU_DRIVER => slices.push(nvidia_gpu_slice(node_name, gpus)?),
            _ => return Err(DraError::UnknownDriver(driver.clone())),
        }
    }
    Ok(slices)
}

/// NVIDIA's slice of a node: every full GPU as `gpu-<minor>`, with the attributes and memory capacity the
/// driver reads from NVML (`cmd/gpu-kubelet-plugin/deviceinfo.go`).
fn nvidia_gpu_slice(node_name: &str, gpus: InstanceGpus) -> Result<ResourceSlice, DraError> {
    let driver: Name = NVIDIA_GPU_DRIVER.into();
    if gpus.count == 0 {
        return Err(DraError::NoGpu {
            driver: driver.to_string(),
            instance_type: gpus.instance_type.into(),
        });
    }
    let model = gpus.model.ok_or_else(|| DraError::UnknownGpu {
        driver: driver.to_string(),
        instance_type: gpus.instance_type.into(),
    })?;
    let own = |id: &str| QualifiedName {
        domain: driver.clone(),
        id: id.into(),
    };
    let text = |value: &str| AttrValue::Str(value.into());
    let version = |value: String| AttrValue::Version(value.into());
    let devices = (0..gpus.count)
        .map(|minor| {
            let attributes = BTreeMap::from([
                (own("type"), text("gpu")),
                (own("uuid"), text(&gpu_uuid(node_name, minor))),
                (own("productName"), text(model.product_name)),
                (own("brand"), text(model.brand)),
                (own("architecture"), text(model.architecture)),
                // The driver normalizes "8.6" to the semantic version "8.6.0".
                (
                    own("cudaComputeCapability"),
                    version(format!("{}.0", model.compute_capability)),
                ),
                (own("driverVersion"), version(NVIDIA_DRIVER_VERSION.into())),
                (
                    own("cudaDriverVersion"),
                    version(CUDA_DRIVER_VERSION.into()),
                ),
                (
                    QualifiedName {
                        domain: "resource.kubernetes.io".into(),
                        id: "pciBusID".into(),
                    },
                    text(&pci_bus_id(minor, gpus.count)),
                ),
            ]);
            let memory = crate::model::Quantity::from_millis(
                i128::from(model.memory_mib) * (1 << 20) * 1000,
            );
            Device {
                name: format!("gpu-{minor}").into(),
                attributes,
                capacity: BTreeMap::from([(own("memory"), memory)]),
                consumes: Vec::new(),
                taints: Vec::new(),
                scope: None,
                binding_conditions: false,
            }
        })
        .collect();
    Ok(ResourceSlice {
        name: format!("{node_name}-{driver}").into(),
        pool: PoolRef {
            name: node_name.into(),
            generation: 0,
            slice_count: 1,
        },
        scope: NodeScope::Node(node_name.into()),
        driver,
        devices,
        shared_counters: Vec::new(),
    })
}

/// A GPU's UUID, in NVML's form (`GPU-` and a UUID): a real GPU's is random; a template's is fixed by the
/// node's name and the GPU's minor, so that a template is the same in every call.
fn gpu_uuid(node_name: &str, minor: u32) -> String {
    let half = |salt: u8| {
        let mut hasher = std::hash::DefaultHasher::new();
        (salt, node_name, minor).hash(&mut hasher);
        hasher.finish()
    };
    let bits = u128::from(half(0)) << 64 | u128::from(half(1));
    let hex = format!("{bits:032x}");
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Where EC2's Nitro instances put their GPUs: the last device slots of bus 0 (`0000:00:1e.0` for a
/// single GPU; `1b`..`1e` for four). Unique per node, which is what selectors and constraints can rely on.
fn pci_bus_id(minor: u32, count: u32) -> String {
    format!("0000:00:{:02x}.0", 0x1f - count + minor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::instance_types::lookup;

    fn gpus_of(instance_type: &'static str) -> InstanceGpus<'static> {
        let info = lookup(instance_type).unwrap();
        InstanceGpus {
            instance_type,
            count: info.gpus,
            model: info.gpu_model,
        }
    }

    fn attr<'a>(device: &'a Device, domain: &str, id: &str) -> &'a AttrValue {
        let name = QualifiedName {
            domain: domain.into(),
            id: id.into(),
        };
        &device.attributes[&name]
    }

    #[test]
    fn a_g5_12xlarge_publishes_four_a10gs_in_one_node_local_pool() {
        let drivers = vec![NVIDIA_GPU_DRIVER.to_string()];
        let slices = template_slices("node-a", &drivers, gpus_of("g5.12xlarge")).unwrap();
        assert_eq!(slices.len(), 1);
        let slice = &slices[0];
        assert_eq!(&*slice.driver, "gpu.nvidia.com");
        assert_eq!(slice.scope, NodeScope::Node("node-a".into()));
        let pool = PoolRef {
            name: "node-a".into(),
            generation: 0,
            slice_count: 1,
        };
        assert_eq!(slice.pool, pool);
        let names: Vec<&str> = slice.devices.iter().map(|d| &*d.name).collect();
        assert_eq!(names, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
        let gpu = &slice.devices[3];
        let nvidia = "gpu.nvidia.com";
        assert_eq!(
            attr(gpu, nvidia, "productName"),
            &AttrValue::Str("NVIDIA A10G".into())
        );
        assert_eq!(attr(gpu, nvidia, "type"), &AttrValue::Str("gpu".into()));
        assert_eq!(
            attr(gpu, nvidia, "architecture"),
            &AttrValue::Str("Ampere".into())
        );
        assert_eq!(
            attr(gpu, nvidia, "cudaComputeCapability"),
            &AttrValue::Version("8.6.0".into())
        );
        assert_eq!(
            attr(gpu, "resource.kubernetes.io", "pciBusID"),
            &AttrValue::Str("0000:00:1e.0".into())
        );
        let memory: crate::model::Quantity = "23028Mi".parse().unwrap();
        assert_eq!(gpu.capacity.values().collect::<Vec<_>>(), [&memory]);
        // Every GPU its own UUID and bus address.
        let distinct = |id: &str, domain: &str| {
            let values: std::collections::HashSet<_> =
                slice.devices.iter().map(|d| attr(d, domain, id)).collect();
            values.len()
        };
        assert_eq!(distinct("uuid", nvidia), 4);
        assert_eq!(distinct("pciBusID", "resource.kubernetes.io"), 4);
        let again = template_slices("node-a", &drivers, gpus_of("g5.12xlarge")).unwrap();
        assert_eq!(again, slices, "the same template every time");
    }

    #[test]
    fn a_t4_is_a_turing_with_15_gibibytes() {
        let drivers = vec![NVIDIA_GPU_DRIVER.to_string()];
        let slices = template_slices("n", &drivers, gpus_of("g4dn.xlarge")).unwrap();
        let gpu = &slices[0].devices[0];
        let nvidia = "gpu.nvidia.com";
        assert_eq!(
            attr(gpu, nvidia, "productName"),
            &AttrValue::Str("Tesla T4".into())
        );
        assert_eq!(
            attr(gpu, nvidia, "cudaComputeCapability"),
            &AttrValue::Version("7.5.0".into())
        );
        let memory: crate::model::Quantity = "15Gi".parse().unwrap();
        assert_eq!(gpu.capacity.values().next(), Some(&memory));
    }

    #[test]
    fn drivers_that_cannot_be_derived_are_errors() {
        let nvidia = vec![NVIDIA_GPU_DRIVER.to_string()];
        assert_eq!(
            template_slices("n", &nvidia, gpus_of("m5.large")).unwrap_err(),
            DraError::NoGpu {
                driver: "gpu.nvidia.com".into(),
                instance_type: "m5.large".into()
            }
        );
        let unknown = vec!["gpu.amd.com".to_string()];
        let error = template_slices("n", &unknown, gpus_of("g5.xlarge")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown DRA driver \"gpu.amd.com\": the known drivers are gpu.nvidia.com"
        );
        let gpus = InstanceGpus {
            model: None,
            ..gpus_of("g5.xlarge")
        };
        assert!(matches!(
            template_slices("n", &nvidia, gpus),
            Err(DraError::UnknownGpu { .. })
        ));
        let twice = vec![NVIDIA_GPU_DRIVER.to_string(), NVIDIA_GPU_DRIVER.to_string()];
        assert!(matches!(
            template_slices("n", &twice, gpus_of("g5.xlarge")),
            Err(DraError::Twice(_))
        ));
        assert_eq!(template_slices("n", &[], gpus_of("m5.large")), Ok(vec![]));
    }
}
