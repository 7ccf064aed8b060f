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
    /// Its GPU, as the GPU's driver describes it.
    pub gpu_model: Option<&'static GpuModel>,
    /// Network interfaces and IPv4 addresses per interface: they bound the pods a node can run.
    pub enis: u32,
    pub ipv4_per_eni: u32,
    /// us-east-1 Linux on-demand price per hour, in USD.
    pub price_per_hour: f64,
}

/// A GPU as NVIDIA's driver (NVML) describes it on a node: what NVIDIA's DRA driver publishes of each of an
/// instance's GPUs. The figures are NVML's on EC2 (`nvidia-smi -q`), written down by us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuModel {
    /// EC2's name of it (`DescribeInstanceTypes`' `GpuInfo.Gpus[].Name`): how the AWS backend finds it.
    pub ec2_name: &'static str,
    /// The `k8s.amazonaws.com/accelerator` label value EKS's GPU AMIs give its nodes.
    pub accelerator: &'static str,
    /// NVML's device name (`productName`).
    pub product_name: &'static str,
    /// NVML's brand, as the driver spells it (`brand`).
    pub brand: &'static str,
    /// NVML's architecture, as the driver spells it (`architecture`).
    pub architecture: &'static str,
    /// CUDA compute capability, major.minor (`cudaComputeCapability`, published as a version).
    pub compute_capability: &'static str,
    /// NVML's total memory in MiB (`memory` capacity): less than the marketed size, which counts memory
    /// the driver reserves.
    pub memory_mib: u64,
}

/// The GPUs of the instance types below. Current NVIDIA drivers give data-center GPUs NVML's `NVIDIA` brand
/// (the driver's "Nvidia"); the V100's is still `Tesla`.
const T4: GpuModel = GpuModel {
    ec2_name: "T4",
    accelerator: "nvidia-tesla-t4",
    product_name: "Tesla T4",
    brand: "Nvidia",
    architecture: "Turing",
    compute_capability: "7.5",
    memory_mib: 15360,
};
const A10G: GpuModel = GpuModel {
    ec2_name: "A10G",
    accelerator: "nvidia-a10g",
    product_name: "NVIDIA A10G",
    brand: "Nvidia",
    architecture: "Ampere",
    compute_capability: "8.6",
    memory_mib: 23028,
};
const L4: GpuModel = GpuModel {
    ec2_name: "L4",
    accelerator: "nvidia-l4",
    product_name: "NVIDIA L4",
    brand: "Nvidia",
    architecture: "Ada Lovelace",
    compute_capability: "8.9",
    memory_mib: 23034,
};
const V100: GpuModel = GpuModel {
    ec2_name: "V100",
    accelerator: "nvidia-tesla-v100",
    product_name: "Tesla V100-SXM2-16GB",
    brand: "Tesla",
    architecture: "Volta",
    compute_capability: "7.0",
    memory_mib: 16384,
};
const A100: GpuModel = GpuModel {
    ec2_name: "A100",
    accelerator: "nvidia-tesla-a100",
    product_name: "NVIDIA A100-SXM4-40GB",
    brand: "Nvidia",
    architecture: "Ampere",
    compute_capability: "8.0",
    memory_mib: 40960,
};
const H100: GpuModel = GpuModel {
    ec2_name: "H100",
    accelerator: "nvidia-h100",
    product_name: "NVIDIA H100 80GB HBM3",
    brand: "Nvidia",
    architecture: "Hopper",
    compute_capability: "9.0",
    memory_mib: 81559,
};
/// Every GPU model known, for the AWS backend, which learns an instance type's GPU by its EC2 name.
#[cfg(feature = "aws")]
const GPU_MODELS: &[GpuModel] = &[T4, A10G, L4, V100, A100, H100];

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

/// A row of the table: the type's name, its shape (vCPUs, memory in GiB, architecture), its network (ENIs,
/// IPv4 addresses per ENI, which bound its pods) and its price.
const fn t(
    name: &'static str,
    (vcpus, memory_gib, arch): (u32, u64, Arch),
    (enis, ipv4_per_eni): (u32, u32),
    price_per_hour: f64,
) -> InstanceTypeInfo {
    InstanceTypeInfo {
        name,
        vcpus,
        memory_mib: memory_gib * 1024,
        arch,
        gpus: 0,
        gpu_type: None,
        gpu_model: None,
        enis,
        ipv4_per_eni,
        price_per_hour,
    }
}

const fn gpu(base: InstanceTypeInfo, gpus: u32, model: &'static GpuModel) -> InstanceTypeInfo {
    InstanceTypeInfo {
        gpus,
        gpu_type: Some(model.accelerator),
        gpu_model: Some(model),
        ..base
    }
}

use Arch::{Amd64, Arm64};

const KNOWN: &[InstanceTypeInfo] = &[
    t("t3.medium", (2, 4, Amd64), (3, 6), 0.0416),
    t("t3.large", (2, 8, Amd64), (3, 12), 0.0832),
    t("t3.xlarge", (4, 16, Amd64), (4, 15), 0.1664),
    t("t3.2xlarge", (8, 32, Amd64), (4, 15), 0.3328),
    t("m5.large", (2, 8, Amd64), (3, 10), 0.096),
    t("m5.xlarge", (4, 16, Amd64), (4, 15), 0.192),
    t("m5.2xlarge", (8, 32, Amd64), (4, 15), 0.384),
    t("m5.4xlarge", (16, 64, Amd64), (8, 30), 0.768),
    t("m5.8xlarge", (32, 128, Amd64), (8, 30), 1.536),
    t("m6i.large", (2, 8, Amd64), (3, 10), 0.096),
    t("m6i.xlarge", (4, 16, Amd64), (4, 15), 0.192),
    t("m6i.2xlarge", (8, 32, Amd64), (4, 15), 0.384),
    t("m7i.large", (2, 8, Amd64), (3, 10), 0.1008),
    t("m7i.xlarge", (4, 16, Amd64), (4, 15), 0.2016),
    t("m6g.large", (2, 8, Arm64), (3, 10), 0.077),
    t("m6g.xlarge", (4, 16, Arm64), (4, 15), 0.154),
    t("m7g.large", (2, 8, Arm64), (3, 10), 0.0816),
    t("c5.large", (2, 4, Amd64), (3, 10), 0.085),
    t("c5.xlarge", (4, 8, Amd64), (4, 15), 0.17),
    t("c5.2xlarge", (8, 16, Amd64), (4, 15), 0.34),
    t("c6i.large", (2, 4, Amd64), (3, 10), 0.085),
    t("c6g.large", (2, 4, Arm64), (3, 10), 0.068),
    t("c6g.xlarge", (4, 8, Arm64), (4, 15), 0.136),
    t("r5.large", (2, 16, Amd64), (3, 10), 0.126),
    t("r5.xlarge", (4, 32, Amd64), (4, 15), 0.252),
    t("r5.2xlarge", (8, 64, Amd64), (4, 15), 0.504),
    gpu(t("g4dn.xlarge", (4, 16, Amd64), (3, 10), 0.526), 1, &T4),
    gpu(t("g4dn.2xlarge", (8, 32, Amd64), (3, 10), 0.752), 1, &T4),
    gpu(t("g5.xlarge", (4, 16, Amd64), (4, 15), 1.006), 1, &A10G),
    gpu(t("g5.2xlarge", (8, 32, Amd64), (4, 15), 1.212), 1, &A10G),
    gpu(
        t("g5.12xlarge", (48, 192, Amd64), (15, 50), 5.672),
        4,
        &A10G,
    ),
    gpu(
        t("g5.48xlarge", (192, 768, Amd64), (7, 50), 16.288),
        8,
        &A10G,
    ),
    gpu(t("g6.xlarge", (4, 16, Amd64), (4, 15), 0.8048), 1, &L4),
    gpu(t("g6.12xlarge", (48, 192, Amd64), (8, 30), 4.6016), 4, &L4),
    gpu(t("p3.2xlarge", (8, 61, Amd64), (4, 15), 3.06), 1, &V100),
    // P4d and P5: the network interfaces of all their network cards, as DescribeInstanceTypes gives them to
    // the AWS backend; list prices before AWS's June 2025 reduction.
    gpu(
        t("p4d.24xlarge", (96, 1152, Amd64), (60, 50), 32.7726),
        8,
        &A100,
    ),
    gpu(
        t("p5.48xlarge", (192, 2048, Amd64), (64, 50), 98.32),
        8,
        &H100,
    ),
];

/// Facts of a known instance type.
pub fn lookup(name: &str) -> Option<&'static InstanceTypeInfo> {
    KNOWN.iter().find(|info| info.name == name)
}

/// A GPU by EC2's name of it ("A10G"), for instance types the table does not list.
#[cfg(feature = "aws")]
pub fn gpu_model(ec2_name: &str) -> Option<&'static GpuModel> {
    GPU_MODELS
        .iter()
        .find(|model| model.ec2_name.eq_ignore_ascii_case(ec2_name))
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
            [
                "nvidia-a10g",
                "nvidia-h100",
                "nvidia-l4",
                "nvidia-tesla-a100",
                "nvidia-tesla-t4",
                "nvidia-tesla-v100"
            ]
        );
    }

    #[test]
    fn gpu_instance_types_name_their_gpu() {
        for info in KNOWN {
            assert_eq!(info.gpus > 0, info.gpu_model.is_some(), "{}", info.name);
            if let Some(model) = info.gpu_model {
                assert_eq!(info.gpu_type, Some(model.accelerator));
            }
        }
    }

    #[cfg(feature = "aws")]
    #[test]
    fn gpu_models_are_found_by_their_ec2_names() {
        for model in KNOWN.iter().filter_map(|info| info.gpu_model) {
            assert_eq!(gpu_model(model.ec2_name), Some(model));
        }
        assert_eq!(gpu_model("a10g").unwrap().memory_mib, 23028);
        assert_eq!(gpu_model("Gaudi HL-205"), None);
    }
}
