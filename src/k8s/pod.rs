//! Pods as cluster-autoscaler sends them: `v1.Pod` protobuf bytes (k8s-pb).

use crate::k8s::quantity::Quantity;
use crate::model::Resources;
use crate::model::resources::{ContainerDemand, pod_demand};
use k8s_pb::api::core::v1::{Container, Pod};
use k8s_pb::apimachinery::pkg::api::resource::Quantity as PbQuantity;
use prost::Message;
use std::collections::BTreeMap;

/// Why a pod could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("pod bytes are not a v1.Pod: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("pod {pod}: {resource}: {reason}")]
    Resource {
        pod: String,
        resource: String,
        reason: String,
    },
}

/// Decodes `Pod.Marshal()` bytes.
pub fn decode(bytes: &[u8]) -> Result<Pod, PodError> {
    Ok(Pod::decode(bytes)?)
}

/// `namespace/name` of a pod, for messages.
pub fn key(pod: &Pod) -> String {
    let meta = pod.metadata.as_ref();
    let namespace = meta
        .and_then(|m| m.namespace.as_deref())
        .unwrap_or("default");
    let name = meta.and_then(|m| m.name.as_deref()).unwrap_or("");
    format!("{namespace}/{name}")
}

/// The pod's demand on a node (see [`pod_demand`]), from its requests. Kubernetes has already defaulted a
/// missing request to its limit by the time a pod is stored, so requests are all we read.
pub fn demand(pod: &Pod) -> Result<Resources, PodError> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(pod_demand(&[], &[], Resources::default()));
    };
    let requests = |c: &Container| {
        let empty = BTreeMap::new();
        let requests = c.resources.as_ref().map_or(&empty, |r| &r.requests);
        resources(pod, requests)
    };
    let init = spec
        .init_containers
        .iter()
        .map(|c| {
            Ok(ContainerDemand {
                requests: requests(c)?,
                sidecar: c.restart_policy.as_deref() == Some("Always"),
            })
        })
        .collect::<Result<Vec<_>, PodError>>()?;
    let containers = spec
        .containers
        .iter()
        .map(requests)
        .collect::<Result<Vec<_>, _>>()?;
    let overhead = resources(pod, &spec.overhead)?;
    Ok(pod_demand(&init, &containers, overhead))
}

fn resources(pod: &Pod, list: &BTreeMap<String, PbQuantity>) -> Result<Resources, PodError> {
    let mut out = Resources::default();
    for (name, value) in list {
        let text = value.string.as_deref().unwrap_or("");
        let fail = |reason: String| PodError::Resource {
            pod: key(pod),
            resource: name.clone(),
            reason,
        };
        let quantity: Quantity = text
            .parse()
            .map_err(|e: crate::k8s::quantity::QuantityError| fail(e.to_string()))?;
        let non_negative = |v: i128| {
            u64::try_from(v).map_err(|_| fail(format!("{text:?} is negative or too large")))
        };
        match name.as_str() {
            "cpu" => out.cpu_millis = non_negative(quantity.millis())?,
            "memory" => out.memory_bytes = non_negative(quantity.value())?,
            "ephemeral-storage" => out.ephemeral_storage_bytes = non_negative(quantity.value())?,
            "nvidia.com/gpu" => out.gpus = non_negative(quantity.value())?,
            _ => {} // other extended resources: the model grows them with the estimator
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::core::v1::{PodSpec, ResourceRequirements};

    fn container(cpu: &str, memory: &str) -> Container {
        let q = |s: &str| PbQuantity {
            string: Some(s.into()),
        };
        Container {
            resources: Some(ResourceRequirements {
                requests: BTreeMap::from([("cpu".into(), q(cpu)), ("memory".into(), q(memory))]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn demand_round_trips_through_bytes() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("250m", "512Mi"), container("250m", "512Mi")],
                init_containers: vec![container("1", "64Mi")],
                ..Default::default()
            }),
            ..Default::default()
        };
        let decoded = decode(&pod.encode_to_vec()).unwrap();
        let demand = demand(&decoded).unwrap();
        assert_eq!(
            (demand.cpu_millis, demand.memory_bytes, demand.pods),
            (1000, 1 << 30, 1)
        );
    }

    #[test]
    fn bad_quantities_and_bytes_are_errors() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("lots", "1Gi")],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(
            demand(&pod)
                .unwrap_err()
                .to_string()
                .contains("cpu: invalid quantity \"lots\"")
        );
        assert!(decode(&[0xff, 0xff, 0xff]).is_err());
    }
}
