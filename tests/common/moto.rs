//! moto's server as AWS: started on a loopback port it picks, stopped when dropped; and a fixture that
//! builds an EKS cluster with managed node groups and their Auto Scaling groups in it.

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_eks::config::Credentials;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const REGION: &str = "us-east-1";
pub const ZONES: [&str; 2] = ["us-east-1a", "us-east-1b"];

pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// moto_server from `$MOTO_SERVER`, the project's `.venv`, or PATH (`tests/run` installs it from PyPI).
fn moto_server() -> PathBuf {
    super::tools::tool(
        "MOTO_SERVER",
        "moto_server",
        "run tests/run, which installs it into .venv",
    )
}

impl Moto {
    pub fn start() -> Moto {
        let mut child = Command::new(moto_server())
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting moto_server");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some(at) = line.find("Running on http://127.0.0.1:") {
                let endpoint = line[at + "Running on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_string();
                std::thread::spawn(move || lines.for_each(drop));
                return Moto { child, endpoint };
            }
            seen.push(line);
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("moto_server did not start:\n{}", seen.join("\n"));
    }

    /// SDK configuration pointing at this moto, with dummy credentials.
    pub async fn sdk(&self) -> SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new(REGION))
            .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
            .load()
            .await
    }
}

/// One managed node group to create.
pub struct NodeGroup<'a> {
    pub name: &'a str,
    pub instance_types: &'a [&'a str],
    pub min: i32,
    pub max: i32,
    pub desired: i32,
    pub capacity_type: &'a str,
    pub labels: &'a [(&'a str, &'a str)],
    pub taints: &'a [(&'a str, &'a str, aws_sdk_eks::types::TaintEffect)],
    pub tags: &'a [(&'a str, &'a str)],
    /// Whether to create its Auto Scaling group (moto does not).
    pub with_asg: bool,
}

impl Default for NodeGroup<'_> {
    fn default() -> Self {
        NodeGroup {
            name: "",
            instance_types: &["m5.large"],
            min: 0,
            max: 5,
            desired: 1,
            capacity_type: "ON_DEMAND",
            labels: &[],
            taints: &[],
            tags: &[],
            with_asg: true,
        }
    }
}

/// Creates the cluster and its node groups; returns each group's ASG name.
pub async fn create_cluster(
    sdk: &SdkConfig,
    cluster: &str,
    groups: &[NodeGroup<'_>],
) -> HashMap<String, String> {
    use aws_sdk_eks::types::{CapacityTypes, NodegroupScalingConfig, Taint, VpcConfigRequest};
    let eks = aws_sdk_eks::Client::new(sdk);
    let autoscaling = aws_sdk_autoscaling::Client::new(sdk);
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    eks.create_cluster()
        .name(cluster)
        .role_arn("arn:aws:iam::123456789012:role/eks-cluster")
        .resources_vpc_config(
            VpcConfigRequest::builder()
                .subnet_ids("subnet-12345678")
                .build(),
        )
        .send()
        .await
        .expect("create_cluster");
    let mut asgs = HashMap::new();
    for group in groups {
        let mut request = eks
            .create_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(group.name)
            .node_role("arn:aws:iam::123456789012:role/eks-node")
            .subnets("subnet-12345678")
            .scaling_config(
                NodegroupScalingConfig::builder()
                    .min_size(group.min)
                    .max_size(group.max)
                    .desired_size(group.desired)
                    .build(),
            )
            .set_instance_types(Some(
                group.instance_types.iter().map(|t| t.to_string()).collect(),
            ))
            .capacity_type(CapacityTypes::from(group.capacity_type));
        for (key, value) in group.labels {
            request = request.labels(*key, *value);
        }
        for (key, value, effect) in group.taints {
            request = request.taints(
                Taint::builder()
                    .key(*key)
                    .value(*value)
                    .effect(effect.clone())
                    .build(),
            );
        }
        for (key, value) in group.tags {
            request = request.tags(*key, *value);
        }
        let created = request.send().await.expect("create_nodegroup");
        let asg = created
            .nodegroup()
            .unwrap()
            .resources()
            .unwrap()
            .auto_scaling_groups()[0]
            .name()
            .unwrap()
            .to_string();
        if group.with_asg {
            let template = format!("lt-{}", group.name);
            ec2.create_launch_template()
                .launch_template_name(&template)
                .launch_template_data(
                    aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                        .image_id("ami-12c6146b")
                        .instance_type(aws_sdk_ec2::types::InstanceType::from(
                            group.instance_types[0],
                        ))
                        .build(),
                )
                .send()
                .await
                .expect("create_launch_template");
            let tag = |key: &str, value: &str| {
                aws_sdk_autoscaling::types::Tag::builder()
                    .key(key)
                    .value(value)
                    .propagate_at_launch(true)
                    .resource_id(&asg)
                    .resource_type("auto-scaling-group")
                    .build()
            };
            autoscaling
                .create_auto_scaling_group()
                .auto_scaling_group_name(&asg)
                .launch_template(
                    aws_sdk_autoscaling::types::LaunchTemplateSpecification::builder()
                        .launch_template_name(&template)
                        .version("$Latest")
                        .build(),
                )
                .min_size(group.min)
                .max_size(group.max)
                .desired_capacity(group.desired)
                .set_availability_zones(Some(ZONES.iter().map(|z| z.to_string()).collect()))
                .tags(tag("eks:cluster-name", cluster))
                .tags(tag("eks:nodegroup-name", group.name))
                .send()
                .await
                .expect("create_auto_scaling_group");
        }
        asgs.insert(group.name.to_string(), asg);
    }
    asgs
}

/// The ASG as moto has it: desired capacity and instance ids as providerIDs.
pub async fn asg_state(sdk: &SdkConfig, asg: &str) -> (i32, Vec<String>) {
    let autoscaling = aws_sdk_autoscaling::Client::new(sdk);
    let output = autoscaling
        .describe_auto_scaling_groups()
        .auto_scaling_group_names(asg)
        .send()
        .await
        .unwrap();
    let group = &output.auto_scaling_groups()[0];
    let mut ids: Vec<String> = group
        .instances()
        .iter()
        .map(|i| {
            format!(
                "aws:///{}/{}",
                i.availability_zone().unwrap(),
                i.instance_id().unwrap()
            )
        })
        .collect();
    ids.sort();
    (group.desired_capacity().unwrap(), ids)
}

/// Creates a Fargate profile with one selector.
pub async fn create_fargate_profile(
    sdk: &SdkConfig,
    cluster: &str,
    name: &str,
    namespace: &str,
    labels: &[(&str, &str)],
) {
    let mut selector = aws_sdk_eks::types::FargateProfileSelector::builder().namespace(namespace);
    for (key, value) in labels {
        selector = selector.labels(*key, *value);
    }
    aws_sdk_eks::Client::new(sdk)
        .create_fargate_profile()
        .cluster_name(cluster)
        .fargate_profile_name(name)
        .pod_execution_role_arn("arn:aws:iam::123456789012:role/eks-fargate")
        .subnets("subnet-12345678")
        .selectors(selector.build())
        .send()
        .await
        .expect("create_fargate_profile");
}

/// AWS calls counted in the provider's metrics text, by `service:operation`, all outcomes together.
pub fn aws_calls(metrics_text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut calls = std::collections::BTreeMap::new();
    for line in metrics_text.lines() {
        let Some(labels) = line.strip_prefix("ekscale_provider_aws_requests_total{service=\"")
        else {
            continue;
        };
        let (service, rest) = labels.split_once('"').unwrap();
        let operation = rest
            .split("operation=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let count: u64 = rest.rsplit(' ').next().unwrap().parse().unwrap();
        *calls.entry(format!("{service}:{operation}")).or_default() += count;
    }
    calls
}
