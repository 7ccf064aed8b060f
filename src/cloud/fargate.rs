//! Fargate as EKS runs it: which profile takes a pod, the size it is billed for, what it costs, and why it
//! could not run there. Profiles are not node groups (docs/eks.md, "Fargate"): nothing here resizes anything.

use crate::k8s::PodFacts;
use crate::model::{FargateProfile, Invalid};
use serde::Deserialize;

pub use crate::model::{PROFILE_LABEL, SCHEDULER_NAME, Selection, select};
/// Memory Fargate adds for the node's own components (kubelet, kube-proxy, containerd).
const COMPONENTS_MIB: u64 = 256;

/// Fargate's prices per hour; built in: us-east-1 Linux/x86.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FargateRates {
    pub vcpu_per_hour: f64,
    pub gb_per_hour: f64,
}

impl Default for FargateRates {
    fn default() -> Self {
        FargateRates {
            vcpu_per_hour: 0.04048,
            gb_per_hour: 0.004445,
        }
    }
}

impl FargateRates {
    pub fn check(&self) -> Result<(), Invalid> {
        if [self.vcpu_per_hour, self.gb_per_hour]
            .iter()
            .all(|r| r.is_finite() && *r >= 0.0)
        {
            Ok(())
        } else {
            Err(Invalid::value("Fargate rates must be non-negative numbers"))
        }
    }
}

/// A size Fargate bills: one of its valid vCPU / memory combinations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FargateSize {
    pub vcpu: f64,
    pub memory_gb: f64,
}

impl FargateSize {
    /// Fargate's own spelling, as in the pod's `CapacityProvisioned` annotation: "0.25vCPU 0.5GB".
    pub fn capacity_provisioned(&self) -> String {
        format!("{}vCPU {}GB", self.vcpu, self.memory_gb)
    }

    pub fn hourly_price(&self, rates: &FargateRates) -> f64 {
        self.vcpu * rates.vcpu_per_hour + self.memory_gb * rates.gb_per_hour
    }

    /// The price of running for `seconds`: per-second billing with a one-minute minimum.
    pub fn price_for(&self, rates: &FargateRates, seconds: f64) -> f64 {
        self.hourly_price(rates) * seconds.max(60.0) / 3600.0
    }
}

/// The valid combinations (docs/eks.md, "Fargate"): each vCPU size with the memory sizes, in GB, it allows.
fn combinations() -> [(f64, Vec<f64>); 7] {
    let range =
        |from: u32, to: u32, step: usize| (from..=to).step_by(step).map(f64::from).collect();
    [
        (0.25, vec![0.5, 1.0, 2.0]),
        (0.5, range(1, 4, 1)),
        (1.0, range(2, 8, 1)),
        (2.0, range(4, 16, 1)),
        (4.0, range(8, 30, 1)),
        (8.0, range(16, 60, 4)),
        (16.0, range(32, 120, 8)),
    ]
}

/// The smallest valid size that holds `cpu_millis` and `memory_bytes` plus Fargate's 256 MiB, or `None`
/// past 16 vCPU / 120 GB.
pub fn size(cpu_millis: u64, memory_bytes: u64) -> Option<FargateSize> {
    let vcpu_needed = cpu_millis as f64 / 1000.0;
    let gb_needed = (memory_bytes + (COMPONENTS_MIB << 20)) as f64 / (1u64 << 30) as f64;
    combinations()
        .into_iter()
        .filter(|(vcpu, _)| *vcpu >= vcpu_needed)
        .find_map(|(vcpu, memory)| {
            let memory_gb = memory.into_iter().find(|gb| *gb >= gb_needed)?;
            Some(FargateSize { vcpu, memory_gb })
        })
}

/// Why a pod could not run on Fargate, each as a short reason; empty when it can. `size` is its rounded size.
pub fn incompatibilities(pod: &PodFacts, size: Option<FargateSize>) -> Vec<String> {
    let mut reasons = Vec::new();
    if pod.owner_kinds.iter().any(|k| k == "DaemonSet") {
        reasons.push("DaemonSet pods do not run on Fargate".to_string());
    }
    if pod.host_network {
        reasons.push("hostNetwork is not supported on Fargate".to_string());
    }
    if pod.host_ports {
        reasons.push("hostPort is not supported on Fargate".to_string());
    }
    if pod.privileged {
        reasons.push("privileged containers are not supported on Fargate".to_string());
    }
    for resource in &pod.extended_resources {
        if resource == crate::model::GPU_RESOURCE {
            reasons.push(format!("GPUs ({resource}) are not available on Fargate"));
        } else {
            reasons.push(format!(
                "extended resource {resource} is not available on Fargate"
            ));
        }
    }
    if size.is_none() {
        reasons.push(format!(
            "needs {}m CPU and {} MiB with Fargate's 256 MiB: over the largest size, 16 vCPU / 120 GB",
            pod.demand.cpu_millis,
            (pod.demand.memory_bytes >> 20) + COMPONENTS_MIB
        ));
    }
    for volume in &pod.ebs_volumes {
        reasons.push(format!(
            "volume {volume} is EBS-backed; Fargate mounts EFS only"
        ));
    }
    reasons
}

/// Everything MatchPod answers about one pod.
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    pub selection: Selection,
    pub size: Option<FargateSize>,
    pub hourly_price: Option<f64>,
    pub incompatibilities: Vec<String>,
}

impl Assessment {
    /// Whether a profile would take the pod (one or several candidates).
    pub fn taken(&self) -> bool {
        !matches!(self.selection, Selection::NoMatch(_))
    }
}

pub fn assess(profiles: &[FargateProfile], pod: &PodFacts, rates: &FargateRates) -> Assessment {
    let size = size(pod.demand.cpu_millis, pod.demand.memory_bytes);
    Assessment {
        selection: select(profiles, &pod.namespace, &pod.labels),
        hourly_price: size.map(|s| s.hourly_price(rates)),
        incompatibilities: incompatibilities(pod, size),
        size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    fn provisioned(cpu_millis: u64, memory_bytes: u64) -> String {
        size(cpu_millis, memory_bytes).map_or("none".into(), |s| s.capacity_provisioned())
    }

    #[test]
    fn rounding_at_every_boundary() {
        assert_eq!(provisioned(0, 0), "0.25vCPU 0.5GB", "no requests");
        assert_eq!(provisioned(250, GIB / 4), "0.25vCPU 0.5GB");
        assert_eq!(provisioned(250, GIB / 4 + 1), "0.25vCPU 1GB");
        assert_eq!(provisioned(250, 2 * GIB - 256 * MIB), "0.25vCPU 2GB");
        assert_eq!(
            provisioned(250, 2 * GIB),
            "0.5vCPU 3GB",
            "2.25 GB is past 0.25 vCPU's largest"
        );
        assert_eq!(provisioned(251, 0), "0.5vCPU 1GB");
        assert_eq!(
            provisioned(1000, 8 * GIB),
            "2vCPU 9GB",
            "the documented example"
        );
        assert_eq!(provisioned(1000, 8 * GIB - 256 * MIB), "1vCPU 8GB");
        assert_eq!(provisioned(2000, 16 * GIB - 256 * MIB), "2vCPU 16GB");
        assert_eq!(provisioned(4000, 30 * GIB), "8vCPU 32GB");
        assert_eq!(provisioned(8000, 57 * GIB), "8vCPU 60GB");
        assert_eq!(provisioned(8000, 60 * GIB), "16vCPU 64GB");
        assert_eq!(provisioned(16000, 120 * GIB - 256 * MIB), "16vCPU 120GB");
        assert_eq!(provisioned(16000, 121 * GIB), "none");
        assert_eq!(provisioned(16001, 0), "none");
    }

    #[test]
    fn prices_bill_per_second_with_a_minute_minimum() {
        let rates = FargateRates::default();
        let small = size(0, 0).unwrap();
        assert!((small.hourly_price(&rates) - (0.25 * 0.04048 + 0.5 * 0.004445)).abs() < 1e-12);
        assert!((small.price_for(&rates, 1.0) - small.price_for(&rates, 60.0)).abs() < 1e-15);
        assert!((small.price_for(&rates, 3600.0) - small.hourly_price(&rates)).abs() < 1e-12);
        let big = size(1000, 8 * GIB).unwrap();
        assert!(
            (big.hourly_price(&rates) - 0.120_965).abs() < 1e-9,
            "2 vCPU / 9 GB ~ $0.121/h"
        );
    }

    fn pod(namespace: &str, labels: &[(&str, &str)]) -> PodFacts {
        PodFacts {
            namespace: namespace.into(),
            name: "p".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn each_incompatibility_is_a_short_reason() {
        let mut facts = pod("serverless", &[]);
        assert!(incompatibilities(&facts, size(0, 0)).is_empty());
        facts.owner_kinds = vec!["DaemonSet".into()];
        facts.host_network = true;
        facts.host_ports = true;
        facts.privileged = true;
        facts.extended_resources = vec!["nvidia.com/gpu".into(), "example.com/dongle".into()];
        facts.ebs_volumes = vec!["data".into()];
        let reasons = incompatibilities(&facts, None);
        assert_eq!(reasons.len(), 8, "{reasons:?}");
        assert!(reasons.iter().any(|r| r.contains("hostNetwork")));
        assert!(reasons.iter().any(|r| r.contains("GPUs")));
        assert!(reasons.iter().any(|r| r.contains("16 vCPU / 120 GB")));
        assert!(reasons.iter().any(|r| r.contains("EBS")));
    }
}
