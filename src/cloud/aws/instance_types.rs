//! Instance type facts from `ec2:DescribeInstanceTypes`, asked once per type for the life of the process.

use super::calls::{Calls, sdk_error};
use crate::cloud::backend::CloudError;
use crate::cloud::instance_types::Arch;
use aws_sdk_ec2::types::{ArchitectureType, InstanceType, InstanceTypeInfo};
use aws_sdk_eks::error::ProvideErrorMetadata;
use std::collections::HashMap;
use tokio::sync::Mutex;

/// What a template needs to know of an instance type.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceFacts {
    pub name: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub arch: Arch,
    pub gpus: u32,
    /// The `k8s.amazonaws.com/accelerator` value of its GPU, as EKS's GPU AMIs label nodes.
    pub gpu_type: Option<String>,
    /// EC2's name of its GPU ("A10G"), which names its model in `cloud::instance_types`.
    pub gpu_name: Option<String>,
    pub enis: u32,
    pub ipv4_per_eni: u32,
}

impl InstanceFacts {
    /// Max pods as the EKS AMI computes it: `ENIs * (IPv4 per ENI - 1) + 2`.
    pub fn max_pods(&self) -> u32 {
        self.enis * self.ipv4_per_eni.saturating_sub(1) + 2
    }

    fn from_info(info: &InstanceTypeInfo) -> Option<InstanceFacts> {
        let name = info.instance_type()?.as_str().to_string();
        let arch = match info.processor_info()?.supported_architectures().first()? {
            ArchitectureType::Arm64 | ArchitectureType::Arm64Mac => Arch::Arm64,
            _ => Arch::Amd64,
        };
        let gpus = info.gpu_info().map(|g| g.gpus()).unwrap_or_default();
        let network = info.network_info()?;
        Some(InstanceFacts {
            name,
            vcpus: u32::try_from(info.v_cpu_info()?.default_v_cpus()?).ok()?,
            memory_mib: u64::try_from(info.memory_info()?.size_in_mib()?).ok()?,
            arch,
            gpus: gpus
                .iter()
                .filter_map(|g| g.count())
                .map(|c| c.max(0) as u32)
                .sum(),
            gpu_type: gpus.first().and_then(|g| g.name()).map(accelerator_label),
            gpu_name: gpus.first().and_then(|g| g.name()).map(str::to_string),
            enis: u32::try_from(network.maximum_network_interfaces()?).ok()?,
            ipv4_per_eni: u32::try_from(network.ipv4_addresses_per_interface()?).ok()?,
        })
    }
}

/// EC2's GPU names ("T4", "A10G", "V100") as the accelerator label values CA recognises.
fn accelerator_label(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "k80" | "p100" | "v100" | "t4" | "a100" | "p4" => format!("nvidia-tesla-{lower}"),
        _ => format!("nvidia-{lower}"),
    }
}

/// The process-wide cache.
#[derive(Default)]
pub struct InstanceTypes {
    known: Mutex<HashMap<String, Option<InstanceFacts>>>,
}

impl InstanceTypes {
    /// Facts for each of `names`, asking EC2 only about types never asked before (up to 100 per call).
    /// A type EC2 does not know maps to `None`.
    pub async fn lookup(
        &self,
        calls: &Calls,
        names: impl IntoIterator<Item = &str>,
    ) -> Result<HashMap<String, Option<InstanceFacts>>, CloudError> {
        let mut known = self.known.lock().await;
        let wanted: Vec<String> = names.into_iter().map(str::to_string).collect();
        let mut missing: Vec<&String> = wanted.iter().filter(|n| !known.contains_key(*n)).collect();
        missing.sort();
        missing.dedup();
        for chunk in missing.chunks(100) {
            let types: Vec<InstanceType> = chunk
                .iter()
                .map(|n| InstanceType::from(n.as_str()))
                .collect();
            let output = calls
                .ec2(
                    "DescribeInstanceTypes",
                    calls
                        .ec2
                        .describe_instance_types()
                        .set_instance_types(Some(types))
                        .send(),
                )
                .await;
            let output = match output {
                Ok(output) => output,
                // An unknown type fails the whole call: ask one by one so known ones still resolve.
                Err(error) if chunk.len() > 1 && error.code() == Some("InvalidInstanceType") => {
                    for name in chunk {
                        let one = calls
                            .ec2
                            .describe_instance_types()
                            .instance_types(InstanceType::from(name.as_str()));
                        match calls.ec2("DescribeInstanceTypes", one.send()).await {
                            Ok(out) => {
                                let facts = out
                                    .instance_types()
                                    .first()
                                    .and_then(InstanceFacts::from_info);
                                known.insert(name.to_string(), facts);
                            }
                            Err(e) if e.code() == Some("InvalidInstanceType") => {
                                known.insert(name.to_string(), None);
                            }
                            Err(e) => return Err(sdk_error("ec2:DescribeInstanceTypes", e)),
                        }
                    }
                    continue;
                }
                Err(error) if error.code() == Some("InvalidInstanceType") => {
                    known.insert(chunk[0].to_string(), None);
                    continue;
                }
                Err(error) => return Err(sdk_error("ec2:DescribeInstanceTypes", error)),
            };
            for info in output.instance_types() {
                if let Some(facts) = InstanceFacts::from_info(info) {
                    known.insert(facts.name.clone(), Some(facts));
                }
            }
            for name in chunk {
                known.entry(name.to_string()).or_insert(None);
            }
        }
        Ok(wanted
            .into_iter()
            .map(|n| (n.clone(), known.get(&n).cloned().flatten()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accelerator_labels_follow_eks() {
        assert_eq!(accelerator_label("T4"), "nvidia-tesla-t4");
        assert_eq!(accelerator_label("V100"), "nvidia-tesla-v100");
        assert_eq!(accelerator_label("A10G"), "nvidia-a10g");
        assert_eq!(accelerator_label("L40S"), "nvidia-l40s");
    }
}
