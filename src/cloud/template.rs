//! Instance facts -> the template Node cluster-autoscaler simulates when it scales a group from zero.
//!
//! The node must look like the one EKS would register: the same capacity, the allocatable the EKS AMI
//! leaves after its reservations, the same well-known labels, the group's taints, and Ready.

use crate::k8s::{bytes_quantity, count_quantity, cpu_quantity};
use crate::model::{
    CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL,
    NODE_GROUP_IMAGE_LABEL, NODE_GROUP_LABEL, Resources, label_value, subdomain_part,
};
pub use crate::model::{GPU_RESOURCE, Taint, TaintEffect};
use k8s_pb::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, Taint as PbTaint};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

pub use crate::model::GPU_LABEL;

const MI: u64 = 1 << 20;
const GI: u64 = 1 << 30;

/// The capacity of an EKS node: its instance type's CPUs, memory and GPUs, max pods by the ENI formula,
/// and its root volume as ephemeral storage.
pub fn node_capacity(
    vcpus: u32,
    memory_mib: u64,
    max_pods: u32,
    disk_gib: u64,
    gpus: u32,
) -> Resources {
    Resources {
        cpu_millis: u64::from(vcpus) * 1000,
        memory_bytes: memory_mib * MI,
        pods: u64::from(max_pods),
        ephemeral_storage_bytes: disk_gib * GI,
        gpus: u64::from(gpus),
    }
}

/// What the EKS AMI leaves allocatable on a node of this capacity.
///
/// Memory: 255Mi + 11Mi per max pod kube-reserved, plus the 100Mi eviction threshold. CPU: 6% of the
/// first core, 1% of the second, 0.5% of the third and fourth, 0.25% of each further core (rounded
/// up to a whole millicore, so a template is never bigger than the real node). Ephemeral storage:
/// 1Gi kube-reserved and the 10% `nodefs.available` eviction threshold.
pub fn eks_allocatable(capacity: &Resources) -> Resources {
    let cores = capacity.cpu_millis.div_ceil(1000);
    let quarter_millis_reserved: u64 = (1..=cores)
        .map(|core| match core {
            1 => 240, // 60m, in quarter millicores
            2 => 40,
            3 | 4 => 20,
            _ => 10,
        })
        .sum();
    let cpu_reserved = quarter_millis_reserved.div_ceil(4);
    let memory_reserved = 255 * MI + 11 * MI * capacity.pods + 100 * MI;
    let storage_reserved = GI + capacity.ephemeral_storage_bytes.div_ceil(10);
    Resources {
        cpu_millis: capacity.cpu_millis.saturating_sub(cpu_reserved),
        memory_bytes: capacity.memory_bytes.saturating_sub(memory_reserved),
        pods: capacity.pods,
        ephemeral_storage_bytes: capacity
            .ephemeral_storage_bytes
            .saturating_sub(storage_reserved),
        gpus: capacity.gpus,
    }
}

/// Canonical quantity strings of each resource a node has.
fn to_quantities(resources: Resources) -> BTreeMap<String, Quantity> {
    let q = |s: String| Quantity { string: Some(s) };
    let mut map = BTreeMap::from([
        ("cpu".to_string(), q(cpu_quantity(resources.cpu_millis))),
        (
            "memory".to_string(),
            q(bytes_quantity(resources.memory_bytes)),
        ),
        ("pods".to_string(), q(count_quantity(resources.pods))),
    ]);
    if resources.ephemeral_storage_bytes > 0 {
        let storage = bytes_quantity(resources.ephemeral_storage_bytes);
        map.insert("ephemeral-storage".into(), q(storage));
    }
    if resources.gpus > 0 {
        map.insert(GPU_RESOURCE.into(), q(count_quantity(resources.gpus)));
    }
    map
}

/// Whether a group's launch template targets capacity reservations (a Capacity Block, ODCRs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchTarget {
    /// None: its nodes are On-Demand or Spot capacity, as its capacity type says.
    Open,
    /// One or more: its nodes are capacity reserved ahead.
    Reserved,
}

/// Karpenter's capacity type of a group's nodes (`karpenter.sh/capacity-type`): `reserved` when its launch
/// template targets reservations, else `spot` or `on-demand` by EKS's capacity type.
pub fn karpenter_capacity_type(capacity_type: &str, target: LaunchTarget) -> &'static str {
    match (target, capacity_type) {
        (LaunchTarget::Reserved, _) => "reserved",
        (LaunchTarget::Open, "SPOT") => "spot",
        (LaunchTarget::Open, _) => "on-demand",
    }
}

/// Everything a template is made of.
#[derive(Clone, Debug)]
pub struct TemplateSpec<'a> {
    pub node_group: &'a str,
    pub instance_type: &'a str,
    pub arch: &'a str,
    pub zone: &'a str,
    pub region: &'a str,
    /// `ON_DEMAND`, `SPOT` or `CAPACITY_BLOCK`, as EKS labels it.
    pub capacity_type: &'a str,
    /// Whether its launch template targets capacity reservations.
    pub target: LaunchTarget,
    pub gpu_type: Option<&'a str>,
    /// The AMI id new nodes launch with, which EKS labels them with; `None` when it is not known.
    pub image: Option<&'a str>,
    pub labels: &'a BTreeMap<String, String>,
    pub taints: &'a [Taint],
    pub capacity: Resources,
    pub allocatable: Resources,
}

/// Builds the template Node of a node group.
pub fn build(spec: &TemplateSpec) -> Node {
    // A valid node name whatever the group's (EKS allows `GPU_Pool-1`): the template's slices take it as
    // their pool and nodeName, which the API checks.
    let name = format!("template-node-for-{}", subdomain_part(spec.node_group));
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", spec.arch),
        ("kubernetes.io/hostname", &label_value(&name)),
        (INSTANCE_TYPE_LABEL, spec.instance_type),
        ("topology.kubernetes.io/zone", spec.zone),
        ("topology.kubernetes.io/region", spec.region),
        (NODE_GROUP_LABEL, spec.node_group),
        (CAPACITY_TYPE_LABEL, spec.capacity_type),
        (
            KARPENTER_CAPACITY_TYPE_LABEL,
            karpenter_capacity_type(spec.capacity_type, spec.target),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if let Some(gpu_type) = spec.gpu_type {
        labels.insert(GPU_LABEL.into(), gpu_type.into());
    }
    if let Some(image) = spec.image {
        labels.insert(NODE_GROUP_IMAGE_LABEL.into(), image.into());
    }
    labels.extend(spec.labels.iter().map(|(k, v)| (k.clone(), v.clone())));

    let taints = spec
        .taints
        .iter()
        .map(|t| PbTaint {
            key: Some(t.key.clone()),
            value: Some(t.value.clone()),
            effect: Some(t.effect.as_str().into()),
            time_added: None,
        })
        .collect();
    let condition = |kind: &str, status: &str, reason: &str| NodeCondition {
        r#type: Some(kind.into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        ..Default::default()
    };
    Node {
        metadata: Some(ObjectMeta {
            name: Some(name),
            labels,
            ..Default::default()
        }),
        spec: Some(NodeSpec {
            taints,
            ..Default::default()
        }),
        status: Some(NodeStatus {
            capacity: to_quantities(spec.capacity),
            allocatable: to_quantities(spec.allocatable),
            phase: Some("Running".into()),
            conditions: vec![
                condition("Ready", "True", "KubeletReady"),
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("NetworkUnavailable", "False", "RouteCreated"),
            ],
            ..Default::default()
        }),
    }
}

/// A template's node name: the pool and node of the slices its node publishes.
pub fn name_of(template: &Node) -> &str {
    (template.metadata.as_ref())
        .and_then(|meta| meta.name.as_deref())
        .unwrap_or_default()
}

/// The same template for nodes launched with another image: what an update changes of a group's new nodes.
pub fn with_image(template: &Node, image: &str) -> Node {
    let mut node = template.clone();
    let meta = node.metadata.get_or_insert_with(Default::default);
    meta.labels
        .insert(NODE_GROUP_IMAGE_LABEL.into(), image.into());
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m5_large() -> Resources {
        Resources {
            cpu_millis: 2000,
            memory_bytes: 8 * GI,
            pods: 29,
            ephemeral_storage_bytes: 20 * GI,
            gpus: 0,
        }
    }

    #[test]
    fn eks_allocatable_of_m5_large() {
        let a = eks_allocatable(&m5_large());
        assert_eq!(a.cpu_millis, 1930);
        assert_eq!(a.memory_bytes, 7518 * MI);
        assert_eq!(a.pods, 29);
        assert_eq!(bytes_quantity(a.ephemeral_storage_bytes), "17Gi");
    }

    #[test]
    fn cpu_reservation_by_core_count() {
        let reserved = |cores: u64| {
            let capacity = Resources {
                cpu_millis: cores * 1000,
                ..m5_large()
            };
            capacity.cpu_millis - eks_allocatable(&capacity).cpu_millis
        };
        assert_eq!(reserved(1), 60);
        assert_eq!(reserved(2), 70);
        assert_eq!(reserved(4), 80);
        assert_eq!(reserved(5), 83, "82.5m rounds up");
        assert_eq!(reserved(8), 90);
        assert_eq!(reserved(96), 310);
    }

    #[test]
    fn template_carries_labels_taints_and_ready() {
        let labels = BTreeMap::from([("team".to_string(), "web".to_string())]);
        let taints = [Taint {
            key: "dedicated".into(),
            value: "batch".into(),
            effect: TaintEffect::NoSchedule,
        }];
        let node = build(&TemplateSpec {
            node_group: "general",
            instance_type: "g4dn.xlarge",
            arch: "amd64",
            zone: "us-east-1a",
            region: "us-east-1",
            capacity_type: "SPOT",
            target: LaunchTarget::Open,
            gpu_type: Some("nvidia-tesla-t4"),
            image: Some("ami-0c1f2e3d4b5a69788"),
            labels: &labels,
            taints: &taints,
            capacity: Resources {
                gpus: 1,
                ..m5_large()
            },
            allocatable: eks_allocatable(&Resources {
                gpus: 1,
                ..m5_large()
            }),
        });
        let meta = node.metadata.unwrap();
        assert_eq!(meta.labels["team"], "web");
        assert_eq!(meta.labels["eks.amazonaws.com/capacityType"], "SPOT");
        assert_eq!(meta.labels["karpenter.sh/capacity-type"], "spot");
        assert_eq!(meta.labels[GPU_LABEL], "nvidia-tesla-t4");
        assert_eq!(meta.labels[NODE_GROUP_IMAGE_LABEL], "ami-0c1f2e3d4b5a69788");
        let spec = node.spec.unwrap();
        assert_eq!(spec.taints[0].effect.as_deref(), Some("NoSchedule"));
        let status = node.status.unwrap();
        assert_eq!(
            status.allocatable["memory"].string.as_deref(),
            Some("7518Mi")
        );
        assert_eq!(
            status.allocatable[GPU_RESOURCE].string.as_deref(),
            Some("1")
        );
        let ready = status
            .conditions
            .iter()
            .find(|c| c.r#type.as_deref() == Some("Ready"))
            .unwrap();
        assert_eq!(ready.status.as_deref(), Some("True"));
    }

    #[test]
    fn another_image_changes_that_label_only() {
        let labels = BTreeMap::new();
        let node = build(&TemplateSpec {
            node_group: "general",
            instance_type: "m5.large",
            arch: "amd64",
            zone: "us-east-1a",
            region: "us-east-1",
            capacity_type: "ON_DEMAND",
            target: LaunchTarget::Open,
            gpu_type: None,
            image: Some("ami-old"),
            labels: &labels,
            taints: &[],
            capacity: m5_large(),
            allocatable: eks_allocatable(&m5_large()),
        });
        let updated = with_image(&node, "ami-new");
        let (before, after) = (node.metadata.as_ref(), updated.metadata.as_ref());
        let mut expected = before.unwrap().labels.clone();
        expected.insert(NODE_GROUP_IMAGE_LABEL.into(), "ami-new".into());
        assert_eq!(after.unwrap().labels, expected);
        assert_eq!((updated.spec, updated.status), (node.spec, node.status));
    }

    #[test]
    fn karpenter_says_reserved_for_a_group_launching_into_reservations() {
        let of = karpenter_capacity_type;
        assert_eq!(of("CAPACITY_BLOCK", LaunchTarget::Reserved), "reserved");
        assert_eq!(of("ON_DEMAND", LaunchTarget::Reserved), "reserved");
        assert_eq!(of("ON_DEMAND", LaunchTarget::Open), "on-demand");
        assert_eq!(of("SPOT", LaunchTarget::Open), "spot");
    }

    #[test]
    fn taint_effects_in_both_spellings() {
        assert_eq!(
            TaintEffect::parse("NO_EXECUTE"),
            Some(TaintEffect::NoExecute)
        );
        assert_eq!(
            TaintEffect::parse("PreferNoSchedule"),
            Some(TaintEffect::PreferNoSchedule)
        );
        assert_eq!(TaintEffect::parse("noschedule"), None);
    }
}
