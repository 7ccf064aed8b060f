//! Facts about common EC2 instance types, for the simulated EKS and as list prices.
//!
//! On AWS the provider reads instance facts from `ec2:DescribeInstanceTypes`; the simulator has no API
//! to ask, so it knows these. Figures are AWS's public specifications and us-east-1 Linux on-demand
//! list prices, written down by us.

/// What an instance type brings to a node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceTypeInfo {
    pub name: &'static str,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub arch: Arch,
    pub gpus: u32,
    /// The `k8s.amazonaws.com/accelerator` label value of its GPU.
    pub gpu_type: Option<&'static str>,
    /// Network interfaces and IPv4 addresses per interface: they bound the pods a node can run.
    pub enis: u32,
    pub ipv4_per_eni: u32,
    /// us-east-1 Linux on-demand price per hour, in USD.
    pub price_per_hour: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Amd64,
    Arm64,
}

impl Arch {
    /// The `kubernetes.io/arch` label value.
    pub fn label(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }
}

impl InstanceTypeInfo {
    /// Max pods as the EKS AMI computes it: `ENIs * (IPv4 per ENI - 1) + 2`.
    pub fn max_pods(&self) -> u32 {
        self.enis * (self.ipv4_per_eni - 1) + 2
    }
}

const fn t(
    name: &'static str,
    vcpus: u32,
    memory_gib: u64,
    arch: Arch,
    enis: u32,
    ipv4_per_eni: u32,
    price_per_hour: f64,
) -> InstanceTypeInfo {
    InstanceTypeInfo {
        name,
        vcpus,
        memory_mib: memory_gib * 1024,
        arch,
        gpus: 0,
        gpu_type: None,
        enis,
        ipv4_per_eni,
        price_per_hour,
    }
}

const fn gpu(base: InstanceTypeInfo, gpus: u32, gpu_type: &'static str) -> InstanceTypeInfo {
    InstanceTypeInfo {
        gpus,
        gpu_type: Some(gpu_type),
        ..base
    }
}

use Arch::{Amd64, Arm64};

const KNOWN: &[InstanceTypeInfo] = &[
    t("t3.medium", 2, 4, Amd64, 3, 6, 0.0416),
    t("t3.large", 2, 8, Amd64, 3, 12, 0.0832),
    t("t3.xlarge", 4, 16, Amd64, 4, 15, 0.1664),
    t("t3.2xlarge", 8, 32, Amd64, 4, 15, 0.3328),
    t("m5.large", 2, 8, Amd64, 3, 10, 0.096),
    t("m5.xlarge", 4, 16, Amd64, 4, 15, 0.192),
    t("m5.2xlarge", 8, 32, Amd64, 4, 15, 0.384),
    t("m5.4xlarge", 16, 64, Amd64, 8, 30, 0.768),
    t("m5.8xlarge", 32, 128, Amd64, 8, 30, 1.536),
    t("m6i.large", 2, 8, Amd64, 3, 10, 0.096),
    t("m6i.xlarge", 4, 16, Amd64, 4, 15, 0.192),
    t("m6i.2xlarge", 8, 32, Amd64, 4, 15, 0.384),
    t("m7i.large", 2, 8, Amd64, 3, 10, 0.1008),
    t("m7i.xlarge", 4, 16, Amd64, 4, 15, 0.2016),
    t("m6g.large", 2, 8, Arm64, 3, 10, 0.077),
    t("m6g.xlarge", 4, 16, Arm64, 4, 15, 0.154),
    t("m7g.large", 2, 8, Arm64, 3, 10, 0.0816),
    t("c5.large", 2, 4, Amd64, 3, 10, 0.085),
    t("c5.xlarge", 4, 8, Amd64, 4, 15, 0.17),
    t("c5.2xlarge", 8, 16, Amd64, 4, 15, 0.34),
    t("c6i.large", 2, 4, Amd64, 3, 10, 0.085),
    t("c6g.large", 2, 4, Arm64, 3, 10, 0.068),
    t("c6g.xlarge", 4, 8, Arm64, 4, 15, 0.136),
    t("r5.large", 2, 16, Amd64, 3, 10, 0.126),
    t("r5.xlarge", 4, 32, Amd64, 4, 15, 0.252),
    t("r5.2xlarge", 8, 64, Amd64, 4, 15, 0.504),
    gpu(
        t("g4dn.xlarge", 4, 16, Amd64, 3, 10, 0.526),
        1,
        "nvidia-tesla-t4",
    ),
    gpu(
        t("g4dn.2xlarge", 8, 32, Amd64, 3, 10, 0.752),
        1,
        "nvidia-tesla-t4",
    ),
    gpu(t("g5.xlarge", 4, 16, Amd64, 4, 15, 1.006), 1, "nvidia-a10g"),
    gpu(
        t("g5.2xlarge", 8, 32, Amd64, 4, 15, 1.212),
        1,
        "nvidia-a10g",
    ),
    gpu(
        t("p3.2xlarge", 8, 61, Amd64, 4, 15, 3.06),
        1,
        "nvidia-tesla-v100",
    ),
];

/// Facts of a known instance type.
pub fn lookup(name: &str) -> Option<&'static InstanceTypeInfo> {
    KNOWN.iter().find(|info| info.name == name)
}

/// The GPU types that known instance types carry (the keys of GetAvailableGPUTypes).
pub fn gpu_types() -> Vec<&'static str> {
    let mut types: Vec<_> = KNOWN.iter().filter_map(|info| info.gpu_type).collect();
    types.sort_unstable();
    types.dedup();
    types
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_pods_follow_the_eni_formula() {
        assert_eq!(lookup("m5.large").unwrap().max_pods(), 29);
        assert_eq!(lookup("m5.xlarge").unwrap().max_pods(), 58);
        assert_eq!(lookup("m5.4xlarge").unwrap().max_pods(), 234);
        assert_eq!(lookup("t3.medium").unwrap().max_pods(), 17);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = KNOWN.iter().map(|info| info.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KNOWN.len());
    }

    #[test]
    fn gpu_types_are_listed_once() {
        assert_eq!(
            gpu_types(),
            ["nvidia-a10g", "nvidia-tesla-t4", "nvidia-tesla-v100"]
        );
    }
}
