//! Pods read once at the edge, from cluster-autoscaler's `v1.Pod` protobuf bytes (k8s-pb) or from the
//! JSON/YAML kubectl prints (k8s-openapi), into the facts decisions need.

use crate::k8s::quantity::{Quantity, QuantityError};
use crate::model::{ContainerDemand, pod_demand};
use crate::model::{Labels, Resources};
use prost::Message;
use std::collections::BTreeMap;

/// What decisions need to know of a pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodFacts {
    pub namespace: String,
    pub name: String,
    pub labels: Labels,
    pub scheduler_name: String,
    /// What it needs from a node: see [`pod_demand`].
    pub demand: Resources,
    /// Requested resources beyond cpu, memory, ephemeral-storage and hugepages (GPUs among them).
    pub extended_resources: Vec<String>,
    /// How much of each extended resource other than GPUs it needs (the larger of the containers' sum
    /// and the largest init container, as for cpu).
    pub extended: BTreeMap<String, u64>,
    pub owner_kinds: Vec<String>,
    pub host_network: bool,
    pub host_ports: bool,
    pub privileged: bool,
    /// Volumes backed by EBS, by name.
    pub ebs_volumes: Vec<String>,
}

impl PodFacts {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Why a pod could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("pod bytes are not a v1.Pod: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("pod text is not a v1.Pod in JSON or YAML: {0}")]
    Text(#[from] serde_norway::Error),
    #[error("pod {pod}: {resource}: {reason}")]
    Resource {
        pod: String,
        resource: String,
        reason: String,
    },
}

/// One container, reduced to what matters, whichever encoding it came from (borrowed from it: a snapshot's
/// 300,000 pods spent a tenth of their reading copying names and quantities only to parse them).
struct Container<'a> {
    name: &'a str,
    /// Requests, limits.
    resources: Lists<'a>,
    sidecar: bool,
    host_port: bool,
    privileged: bool,
}

/// The encoding-neutral pod the two readers below produce.
#[derive(Default)]
struct Parts<'a> {
    namespace: &'a str,
    name: &'a str,
    labels: BTreeMap<String, String>,
    scheduler_name: &'a str,
    owner_kinds: Vec<String>,
    host_network: bool,
    init: Vec<Container<'a>>,
    containers: Vec<Container<'a>>,
    overhead: List<'a>,
    /// Pod-level `spec.resources` (kube-scheduler's PodLevelResources): requests, limits.
    pod_resources: Lists<'a>,
    ebs_volumes: Vec<String>,
}

impl PodFacts {
    /// Reads `Pod.Marshal()` bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<PodFacts, PodError> {
        use k8s_pb::api::core::v1 as pb;
        fn quantities(
            map: &BTreeMap<String, k8s_pb::apimachinery::pkg::api::resource::Quantity>,
        ) -> List<'_> {
            map.iter()
                .map(|(k, v)| (k.as_str(), v.string.as_deref().unwrap_or_default()))
                .collect()
        }
        // Requests and limits, of a container or of the whole pod.
        fn requirements(r: Option<&pb::ResourceRequirements>) -> Lists<'_> {
            r.map(|r| (quantities(&r.requests), quantities(&r.limits)))
                .unwrap_or_default()
        }
        fn container(c: &pb::Container) -> Container<'_> {
            Container {
                name: c.name.as_deref().unwrap_or_default(),
                resources: requirements(c.resources.as_ref()),
                sidecar: c.restart_policy.as_deref() == Some("Always"),
                host_port: c.ports.iter().any(|p| p.host_port.unwrap_or(0) > 0),
                privileged: c
                    .security_context
                    .as_ref()
                    .and_then(|s| s.privileged)
                    .unwrap_or(false),
            }
        }
        let pod = pb::Pod::decode(bytes)?;
        let meta = pod.metadata.unwrap_or_default();
        let spec = pod.spec.unwrap_or_default();
        let ebs_volumes = spec
            .volumes
            .iter()
            .filter(|v| {
                let source = v.volume_source.as_ref();
                source.is_some_and(|s| {
                    s.aws_elastic_block_store.is_some()
                        || s.csi
                            .as_ref()
                            .is_some_and(|c| c.driver.as_deref() == Some(EBS_CSI_DRIVER))
                })
            })
            .map(|v| v.name.clone().unwrap_or_default())
            .collect();
        assemble(Parts {
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            name: meta.name.as_deref().unwrap_or_default(),
            labels: meta.labels.clone(),
            scheduler_name: spec.scheduler_name.as_deref().unwrap_or_default(),
            owner_kinds: meta
                .owner_references
                .iter()
                .filter_map(|o| o.kind.clone())
                .collect(),
            host_network: spec.host_network.unwrap_or(false),
            init: spec.init_containers.iter().map(container).collect(),
            containers: spec.containers.iter().map(container).collect(),
            overhead: quantities(&spec.overhead),
            pod_resources: requirements(spec.resources.as_ref()),
            ebs_volumes,
        })
    }

    /// Reads a pod as kubectl prints it, in JSON or YAML.
    pub fn from_text(text: &str) -> Result<PodFacts, PodError> {
        let pod: k8s_openapi::api::core::v1::Pod = serde_norway::from_str(text)?;
        PodFacts::from_api(&pod)
    }

    /// Reads a pod the kube API or a snapshot gave.
    pub fn from_api<'a>(pod: &'a k8s_openapi::api::core::v1::Pod) -> Result<PodFacts, PodError> {
        use k8s_openapi::api::core::v1 as api;
        let quantities = |map: &'a Option<
            BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >|
         -> List<'a> {
            map.iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect()
        };
        // Requests and limits, of a container or of the whole pod.
        let requirements = |r: Option<&'a api::ResourceRequirements>| {
            r.map(|r| (quantities(&r.requests), quantities(&r.limits)))
                .unwrap_or_default()
        };
        let container = |c: &'a api::Container| Container {
            name: &c.name,
            resources: requirements(c.resources.as_ref()),
            sidecar: c.restart_policy.as_deref() == Some("Always"),
            host_port: c
                .ports
                .iter()
                .flatten()
                .any(|p| p.host_port.unwrap_or(0) > 0),
            privileged: c
                .security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false),
        };
        let meta = &pod.metadata;
        static DEFAULT_SPEC: std::sync::LazyLock<api::PodSpec> =
            std::sync::LazyLock::new(Default::default);
        let spec = pod.spec.as_ref().unwrap_or(&DEFAULT_SPEC);
        let ebs_volumes = spec
            .volumes
            .iter()
            .flatten()
            .filter(|v| {
                v.aws_elastic_block_store.is_some()
                    || v.csi.as_ref().is_some_and(|c| c.driver == EBS_CSI_DRIVER)
            })
            .map(|v| v.name.clone())
            .collect();
        assemble(Parts {
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            name: meta.name.as_deref().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            scheduler_name: spec.scheduler_name.as_deref().unwrap_or_default(),
            owner_kinds: meta
                .owner_references
                .iter()
                .flatten()
                .map(|o| o.kind.clone())
                .collect(),
            host_network: spec.host_network.unwrap_or(false),
            init: spec
                .init_containers
                .iter()
                .flatten()
                .map(container)
                .collect(),
            containers: spec.containers.iter().map(container).collect(),
            overhead: quantities(&spec.overhead),
            pod_resources: requirements(spec.resources.as_ref()),
            ebs_volumes,
        })
    }
}

const EBS_CSI_DRIVER: &str = "ebs.csi.aws.com";

type Extended = BTreeMap<String, u64>;

/// Where a resource list is (`container web: resources.limits`), for errors; written only for one: a
/// snapshot's 300,000 pods spent a tenth of their reading on names of fields that were fine.
type Field<'f> = &'f dyn Fn() -> String;

/// A resource list as written: name, quantity.
type List<'a> = BTreeMap<&'a str, &'a str>;

/// A container's requests and limits.
type Lists<'a> = (List<'a>, List<'a>);

/// Reads a pod's resource lists, gathering the extended resources any of them requests, in first-seen order.
struct ListReader<'p> {
    namespace: &'p str,
    name: &'p str,
    extended: Vec<String>,
}

impl ListReader<'_> {
    /// Reads one resource list; `field` names where it is in errors.
    fn read(&mut self, field: Field, list: &List) -> Result<(Resources, Extended), PodError> {
        let mut out = Resources::default();
        let mut amounts = Extended::new();
        for (name, text) in list {
            let fail = |reason: String| PodError::Resource {
                pod: format!("{}/{}", self.namespace, self.name),
                resource: format!("{}.{name}", field()),
                reason,
            };
            let quantity: Quantity = text
                .parse()
                .map_err(|e: QuantityError| fail(e.to_string()))?;
            let amount = |v: i128| {
                u64::try_from(v).map_err(|_| fail(format!("{text:?} is negative or too large")))
            };
            match *name {
                "cpu" => out.cpu_millis = amount(quantity.millis())?,
                "memory" => out.memory_bytes = amount(quantity.value())?,
                "ephemeral-storage" => out.ephemeral_storage_bytes = amount(quantity.value())?,
                "pods" => {}
                other if other.starts_with("hugepages-") => {}
                other => {
                    if other == crate::model::GPU_RESOURCE {
                        out.gpus = amount(quantity.value())?;
                    } else {
                        amounts.insert(other.to_string(), amount(quantity.value())?);
                    }
                    if quantity.millis() > 0 && !self.extended.iter().any(|e| e == other) {
                        self.extended.push(other.to_string());
                    }
                }
            }
        }
        Ok((out, amounts))
    }

    /// Limits are checked like requests, then a request left out defaults to its limit, as the API server
    /// does when it stores a pod.
    fn requests(
        &mut self,
        field: Field,
        (requests, limits): &Lists,
    ) -> Result<(Resources, Extended), PodError> {
        self.read(&|| format!("{}resources.limits", field()), limits)?;
        // Name the request when it is the request that is wrong.
        let asked = self.read(&|| format!("{}resources.requests", field()), requests)?;
        if limits.is_empty() {
            return Ok(asked);
        }
        let mut merged = limits.clone();
        merged.extend(requests);
        self.read(&|| format!("{}resources", field()), &merged)
    }
}

fn assemble(parts: Parts) -> Result<PodFacts, PodError> {
    let namespace = match parts.namespace {
        "" => "default",
        namespace => namespace,
    };
    let mut reader = ListReader {
        namespace,
        name: parts.name,
        extended: Vec::new(),
    };
    let mut container = |kind: &str, c: &Container| {
        reader.requests(&|| format!("{kind} {}: ", c.name), &c.resources)
    };
    let mut extended_demand = Extended::new();
    let mut init = Vec::new();
    for c in &parts.init {
        let (requests, amounts) = container("init container", c)?;
        for (name, amount) in amounts {
            let peak = extended_demand.entry(name).or_default();
            *peak = (*peak).max(amount);
        }
        init.push(ContainerDemand {
            requests,
            sidecar: c.sidecar,
        });
    }
    let mut running = Extended::new();
    let mut containers = Vec::new();
    for c in &parts.containers {
        let (requests, amounts) = container("container", c)?;
        for (name, amount) in amounts {
            *running.entry(name).or_default() += amount;
        }
        containers.push(requests);
    }
    for (name, amount) in running {
        let peak = extended_demand.entry(name).or_default();
        *peak = (*peak).max(amount);
    }
    let (pod_level, _) = reader.requests(&|| "spec.".into(), &parts.pod_resources)?;
    let (overhead, overhead_extended) = reader.read(&|| "spec.overhead".into(), &parts.overhead)?;
    for (name, amount) in overhead_extended {
        *extended_demand.entry(name).or_default() += amount;
    }
    let mut demand = pod_demand(&init, &containers, overhead);
    // Pod-level requests (cpu and memory only) replace what the containers add up to.
    let (pod_requests, pod_limits) = &parts.pod_resources;
    let pod_level_set =
        |name: &str| pod_requests.contains_key(name) || pod_limits.contains_key(name);
    if pod_level_set("cpu") {
        demand.cpu_millis = pod_level.cpu_millis.saturating_add(overhead.cpu_millis);
    }
    if pod_level_set("memory") {
        demand.memory_bytes = pod_level.memory_bytes.saturating_add(overhead.memory_bytes);
    }
    let all = || parts.init.iter().chain(&parts.containers);
    Ok(PodFacts {
        demand,
        host_ports: all().any(|c| c.host_port),
        privileged: all().any(|c| c.privileged),
        extended_resources: reader.extended,
        extended: extended_demand,
        namespace: namespace.to_string(),
        name: parts.name.to_string(),
        labels: parts.labels.into(),
        scheduler_name: parts.scheduler_name.to_string(),
        owner_kinds: parts.owner_kinds,
        host_network: parts.host_network,
        ebs_volumes: parts.ebs_volumes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::core::v1::{Container as PbContainer, Pod, PodSpec, ResourceRequirements};
    use k8s_pb::apimachinery::pkg::api::resource::Quantity as PbQuantity;

    fn container(cpu: &str, memory: &str) -> PbContainer {
        let q = |s: &str| PbQuantity {
            string: Some(s.into()),
        };
        PbContainer {
            resources: Some(ResourceRequirements {
                requests: BTreeMap::from([("cpu".into(), q(cpu)), ("memory".into(), q(memory))]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn demand_from_bytes() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("250m", "512Mi"), container("250m", "512Mi")],
                init_containers: vec![container("1", "64Mi")],
                ..Default::default()
            }),
            ..Default::default()
        };
        let facts = PodFacts::from_bytes(&pod.encode_to_vec()).unwrap();
        assert_eq!(
            (
                facts.demand.cpu_millis,
                facts.demand.memory_bytes,
                facts.demand.pods
            ),
            (1000, 1 << 30, 1)
        );
        assert_eq!(facts.key(), "default/");
    }

    #[test]
    fn the_same_pod_reads_the_same_from_json_yaml_and_bytes() {
        let json = r#"{"apiVersion":"v1","kind":"Pod",
            "metadata":{"name":"api","namespace":"serverless","labels":{"app":"api"},
                        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"api-1","uid":"u","controller":true}]},
            "spec":{"hostNetwork":true,
                    "containers":[{"name":"app","ports":[{"containerPort":80,"hostPort":8080}],
                                   "securityContext":{"privileged":true},
                                   "resources":{"limits":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"}}}],
                    "volumes":[{"name":"data","awsElasticBlockStore":{"volumeID":"vol-1"}},
                               {"name":"csi","csi":{"driver":"ebs.csi.aws.com"}},
                               {"name":"tmp","emptyDir":{}}]}}"#;
        let facts = PodFacts::from_text(json).unwrap();
        assert_eq!(facts.key(), "serverless/api");
        assert_eq!(facts.labels["app"], "api");
        assert_eq!(facts.owner_kinds, ["ReplicaSet"]);
        assert!(facts.host_network && facts.host_ports && facts.privileged);
        assert_eq!(
            facts.demand.cpu_millis, 2000,
            "limits stand in for missing requests"
        );
        assert_eq!(facts.demand.memory_bytes, 4 << 30);
        assert_eq!(facts.demand.gpus, 1);
        assert_eq!(facts.extended_resources, ["nvidia.com/gpu"]);
        assert_eq!(facts.ebs_volumes, ["data", "csi"]);

        let yaml = "metadata: {name: api, namespace: serverless}\nspec:\n  containers:\n  - name: app\n    resources: {requests: {cpu: 500m}}\n";
        assert_eq!(PodFacts::from_text(yaml).unwrap().demand.cpu_millis, 500);

        // Pod-level resources (PodLevelResources) decide cpu and memory; overhead still comes on top.
        let pod_level = r#"{"metadata":{"name":"p"},"spec":{
            "resources":{"requests":{"cpu":"2"},"limits":{"memory":"3Gi"}},
            "overhead":{"cpu":"250m"},
            "containers":[{"name":"a","resources":{"requests":{"cpu":"100m","memory":"1Gi","ephemeral-storage":"1Gi"}}},
                          {"name":"b","resources":{"requests":{"cpu":"100m"}}}]}}"#;
        let facts = PodFacts::from_text(pod_level).unwrap();
        assert_eq!(facts.demand.cpu_millis, 2250);
        assert_eq!(
            facts.demand.memory_bytes,
            3 << 30,
            "the limit stands in for the request"
        );
        assert_eq!(
            facts.demand.ephemeral_storage_bytes,
            1 << 30,
            "from the containers"
        );
    }

    #[test]
    fn bad_pods_are_errors_that_say_why() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("lots", "1Gi")],
                ..Default::default()
            }),
            ..Default::default()
        };
        let error = PodFacts::from_bytes(&pod.encode_to_vec())
            .unwrap_err()
            .to_string();
        assert!(error.contains("cpu: invalid quantity \"lots\""), "{error}");
        assert!(PodFacts::from_bytes(&[0xff, 0xff, 0xff]).is_err());
        let limit = r#"{"metadata":{"name":"x"},"spec":{"containers":[{"name":"web",
            "resources":{"requests":{"cpu":"1"},"limits":{"cpu":"lots"}}}]}}"#;
        let error = PodFacts::from_text(limit).unwrap_err().to_string();
        assert!(
            error.starts_with(
                "pod default/x: container web: resources.limits.cpu: invalid quantity \"lots\""
            ),
            "a limit is checked even when a request stands in front of it: {error}"
        );
        let init = r#"{"metadata":{"name":"x"},"spec":{"initContainers":[{"name":"setup",
            "resources":{"requests":{"memory":"-1Gi"}}}],"containers":[]}}"#;
        let error = PodFacts::from_text(init).unwrap_err().to_string();
        assert!(
            error.starts_with("pod default/x: init container setup: resources.requests.memory:"),
            "{error}"
        );
        assert!(
            PodFacts::from_text("{not json")
                .unwrap_err()
                .to_string()
                .contains("JSON or YAML")
        );
        assert!(PodFacts::from_text("spec: {containers: 3}").is_err());
    }
}
