//! Refresh: EKS node groups and their Auto Scaling groups -> the node groups we serve.
//!
//! A node group is served whole or not at all: one that is not ACTIVE/UPDATING, whose ASG cannot be
//! found, or whose instance type EC2 does not know is left out, with a log line and a metric. A served
//! group reports its status (UPDATING while a managed node group update replaces its nodes) and its image.

use super::calls::sdk_error;
use super::instance_types::InstanceFacts;
use super::launch_templates::TemplateVersion;
use super::state::{AwsState, Memory};
use super::view::{AsgInstance, ServedGroup};
use crate::cloud::backend::CloudError;
use crate::cloud::dra::{self, InstanceGpus};
use crate::cloud::node_group::InstanceError;
use crate::cloud::node_group::InstanceErrorClass;
use crate::cloud::node_group::NodeGroupSpec;
use crate::cloud::node_group::OptionOverrides;
use crate::cloud::options;
use crate::cloud::template::{self, Taint, TaintEffect, TemplateSpec, eks_allocatable};
use crate::model::{CapacityType, FargateProfile, FargateSelector, NodeGroupStatus};
use aws_sdk_autoscaling::types::{AutoScalingGroup, Filter, ScalingActivityStatusCode};
use aws_sdk_eks::error::ProvideErrorMetadata;
use aws_sdk_eks::types::{Nodegroup, NodegroupStatus};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// What one refresh found.
pub(super) struct Discovery {
    pub groups: Vec<ServedGroup>,
    pub skipped: Vec<(String, i64)>,
    pub fargate: Vec<FargateProfile>,
}

/// Failed scaling activities older than this are not news, if we never scaled the group ourselves.
const FAILURE_HORIZON: Duration = Duration::from_secs(15 * 60);

/// The node group tag naming the DRA drivers its nodes run, separated by spaces (tag values cannot hold
/// commas): `gpu.nvidia.com`. Each publishes, on a new node, the slices its instance type's devices make,
/// which the group's template carries (scale from zero with DRA).
const DRA_DRIVERS_TAG: &str = "ekscale.io/dra-drivers";

/// The error code of placeholders for capacity the ASG could not launch, as upstream's AWS provider uses.
pub const PLACEHOLDER_ERROR_CODE: &str = "placeholder-cannot-be-fulfilled";

impl AwsState {
    /// Reads the cloud: the groups to serve, and how many were left out for which reason.
    pub(super) async fn discover(&self, memory: &mut Memory) -> Result<Discovery, CloudError> {
        let names = self.list_node_groups().await?;
        let selected: Vec<String> = names
            .into_iter()
            .filter(|n| self.config.selects(n))
            .collect();
        memory.described.retain(|name, _| selected.contains(name));
        self.describe_stale(memory, &selected).await?;

        let mut skipped: BTreeMap<String, i64> = BTreeMap::new();
        let mut skip = |name: &str, reason: String, detail: String| {
            tracing::warn!(node_group = name, reason, detail, "node group left out");
            *skipped.entry(reason).or_default() += 1;
        };
        let mut usable = Vec::new();
        for name in &selected {
            let Some((_, ng)) = memory.described.get(name) else {
                continue;
            };
            match ng.status() {
                Some(NodegroupStatus::Active | NodegroupStatus::Updating) => usable.push(ng),
                other => {
                    let status = other.map_or("unknown", |s| s.as_str()).to_string();
                    let issues: Vec<String> = ng
                        .health()
                        .map(|h| {
                            h.issues()
                                .iter()
                                .filter_map(|i| i.code().map(|c| c.as_str().to_string()))
                                .collect()
                        })
                        .unwrap_or_default();
                    skip(name, format!("status {status}"), issues.join(","));
                }
            }
        }

        let asgs = self.auto_scaling_groups(&usable).await?;
        let types: Vec<&str> = usable
            .iter()
            .flat_map(|ng| ng.instance_types().iter().map(String::as_str))
            .collect();
        let facts = self.instance_types.lookup(&self.calls, types).await?;
        let versions: HashSet<TemplateVersion> = (usable.iter())
            .filter_map(|ng| asgs.get(ng.nodegroup_name()?))
            .filter_map(TemplateVersion::of)
            .collect();
        let again = self.config.describe_interval;
        let images = memory.images.lookup(&self.calls, &versions, again).await;

        let mut groups = Vec::new();
        for ng in usable {
            let name = ng.nodegroup_name().unwrap_or_default();
            let Some(asg) = asgs.get(name) else {
                skip(name, "auto scaling group not found".into(), String::new());
                continue;
            };
            let ami = TemplateVersion::of(asg).and_then(|v| images.get(&v));
            match self.group(ng, asg, &facts, ami.map(String::as_str)) {
                Ok(group) => groups.push(group),
                Err(reason) => skip(name, reason.to_string(), String::new()),
            }
        }
        self.find_failures(&mut groups).await;
        groups.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
        let fargate = self.fargate(memory).await?;
        Ok(Discovery {
            groups,
            skipped: skipped.into_iter().collect(),
            fargate,
        })
    }

    /// The cluster's Fargate profiles: listed every refresh, described when new or older than
    /// `describeInterval` (profiles are immutable, but their status changes).
    async fn fargate(&self, memory: &mut Memory) -> Result<Vec<FargateProfile>, CloudError> {
        let cluster = &self.config.cluster;
        let mut names = Vec::new();
        let mut pages = self
            .calls
            .eks
            .list_fargate_profiles()
            .cluster_name(cluster)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = self
                .calls
                .record("eks", "ListFargateProfiles", page)
                .map_err(|e| sdk_error("eks:ListFargateProfiles", e))?;
            names.extend(page.fargate_profile_names().iter().cloned());
        }
        memory.profiles.retain(|name, _| names.contains(name));
        let now = Instant::now();
        for name in &names {
            if memory
                .profiles
                .get(name)
                .is_some_and(|(at, _)| now.duration_since(*at) < self.config.describe_interval)
            {
                continue;
            }
            let request = self
                .calls
                .eks
                .describe_fargate_profile()
                .cluster_name(cluster)
                .fargate_profile_name(name);
            match self
                .calls
                .eks("DescribeFargateProfile", request.send())
                .await
            {
                Ok(output) => {
                    if let Some(p) = output.fargate_profile() {
                        let profile = FargateProfile {
                            name: name.clone(),
                            status: p.status().map_or("UNKNOWN", |s| s.as_str()).to_string(),
                            selectors: p
                                .selectors()
                                .iter()
                                .map(|s| FargateSelector {
                                    namespace: s.namespace().unwrap_or_default().to_string(),
                                    labels: s
                                        .labels()
                                        .map(|l| l.clone().into_iter().collect())
                                        .unwrap_or_default(),
                                })
                                .collect(),
                            subnets: p.subnets().to_vec(),
                        };
                        memory.profiles.insert(name.clone(), (now, profile));
                    }
                }
                Err(e) if e.code() == Some("ResourceNotFoundException") => {
                    memory.profiles.remove(name);
                }
                Err(e) => return Err(sdk_error(&format!("eks:DescribeFargateProfile {name}"), e)),
            }
        }
        let mut profiles: Vec<FargateProfile> =
            memory.profiles.values().map(|(_, p)| p.clone()).collect();
        profiles.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(profiles)
    }

    async fn list_node_groups(&self) -> Result<Vec<String>, CloudError> {
        let mut names = Vec::new();
        let mut pages = self
            .calls
            .eks
            .list_nodegroups()
            .cluster_name(&self.config.cluster)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = self
                .calls
                .record("eks", "ListNodegroups", page)
                .map_err(|e| {
                    sdk_error(
                        &format!("eks:ListNodegroups for cluster {}", self.config.cluster),
                        e,
                    )
                })?;
            names.extend(page.nodegroups().iter().cloned());
        }
        Ok(names)
    }

    /// Describes, concurrently, the node groups never described or described longer ago than `describeInterval`.
    async fn describe_stale(
        &self,
        memory: &mut Memory,
        names: &[String],
    ) -> Result<(), CloudError> {
        let now = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for name in names {
            if memory
                .described
                .get(name)
                .is_some_and(|(at, _)| now.duration_since(*at) < self.config.describe_interval)
            {
                continue;
            }
            let calls = self.calls.clone();
            let request = calls
                .eks
                .describe_nodegroup()
                .cluster_name(&self.config.cluster)
                .nodegroup_name(name);
            let name = name.clone();
            tasks
                .spawn(async move { (name, calls.eks("DescribeNodegroup", request.send()).await) });
        }
        while let Some(joined) = tasks.join_next().await {
            let (name, result) = joined.map_err(|e| CloudError::Internal(e.to_string()))?;
            match result {
                Ok(output) => {
                    if let Some(ng) = output.nodegroup() {
                        memory.described.insert(name, (now, ng.clone()));
                    }
                }
                // Deleted between the list and the describe: gone, not an error.
                Err(e) if e.code() == Some("ResourceNotFoundException") => {
                    memory.described.remove(&name);
                }
                Err(e) => return Err(sdk_error(&format!("eks:DescribeNodegroup {name}"), e)),
            }
        }
        Ok(())
    }

    /// Each node group's ASG: by the name EKS reports (100 names a call), else by the tags EKS puts on it.
    async fn auto_scaling_groups(
        &self,
        node_groups: &[&Nodegroup],
    ) -> Result<HashMap<String, AutoScalingGroup>, CloudError> {
        let reported: HashMap<&str, &str> = node_groups
            .iter()
            .filter_map(|ng| {
                let asg = ng.resources()?.auto_scaling_groups().first()?.name()?;
                Some((asg, ng.nodegroup_name()?))
            })
            .collect();
        let mut names: Vec<&str> = reported.keys().copied().collect();
        names.sort_unstable();
        let mut found: HashMap<String, AutoScalingGroup> = HashMap::new();
        for chunk in names.chunks(100) {
            let names = chunk.iter().map(|s| s.to_string()).collect();
            for asg in self.describe_asgs(Some(names), None).await? {
                if let Some(ng) = asg.auto_scaling_group_name().and_then(|n| reported.get(n)) {
                    found.insert(ng.to_string(), asg.clone());
                }
            }
        }
        let missing = node_groups
            .iter()
            .filter_map(|ng| ng.nodegroup_name())
            .any(|n| !found.contains_key(n));
        if missing {
            let cluster = Filter::builder()
                .name("tag:eks:cluster-name")
                .values(&self.config.cluster)
                .build();
            for asg in self.describe_asgs(None, Some(cluster)).await? {
                let tag = |key: &str| {
                    asg.tags()
                        .iter()
                        .find(|t| t.key() == Some(key))
                        .and_then(|t| t.value())
                };
                if tag("eks:cluster-name") != Some(self.config.cluster.as_str()) {
                    continue;
                }
                if let Some(ng) = tag("eks:nodegroup-name") {
                    found.entry(ng.to_string()).or_insert_with(|| asg.clone());
                }
            }
        }
        Ok(found)
    }

    /// Every page of DescribeAutoScalingGroups for these names or this filter, 100 groups a page.
    async fn describe_asgs(
        &self,
        names: Option<Vec<String>>,
        filter: Option<Filter>,
    ) -> Result<Vec<AutoScalingGroup>, CloudError> {
        let mut groups = Vec::new();
        let mut pages = self
            .calls
            .autoscaling
            .describe_auto_scaling_groups()
            .set_auto_scaling_group_names(names)
            .set_filters(filter.map(|f| vec![f]))
            .max_records(100)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = self
                .calls
                .record("autoscaling", "DescribeAutoScalingGroups", page)
                .map_err(|e| sdk_error("autoscaling:DescribeAutoScalingGroups", e))?;
            groups.extend(page.auto_scaling_groups().iter().cloned());
        }
        Ok(groups)
    }

    /// One served group, or why it cannot be served. `ami` is the AMI id of the launch template version its
    /// ASG launches, when EC2 said it.
    fn group(
        &self,
        ng: &Nodegroup,
        asg: &AutoScalingGroup,
        facts: &HashMap<String, Option<InstanceFacts>>,
        ami: Option<&str>,
    ) -> Result<ServedGroup, Unservable> {
        let name = ng.nodegroup_name().unwrap_or_default();
        let scaling = ng.scaling_config().ok_or(Unservable::NoScalingConfig)?;
        let (min_size, max_size) = (
            scaling.min_size().unwrap_or(0),
            scaling.max_size().unwrap_or(0),
        );
        let types = instance_types(ng, facts)?;
        // Mixed types: the smallest, so that a simulated node is never bigger than a real one.
        let smallest = types
            .iter()
            .min_by_key(|f| (f.vcpus, f.memory_mib, f.max_pods()))
            .ok_or(Unservable::NoInstanceTypes)?;
        let mut zones: Vec<String> = asg.availability_zones().to_vec();
        zones.sort();
        let zone = zones.first().cloned().unwrap_or_default();
        let region = if self.region.is_empty() {
            zone.trim_end_matches(char::is_alphabetic).to_string()
        } else {
            self.region.clone()
        };
        let capacity_type = ng
            .capacity_type()
            .map_or("ON_DEMAND", |c| c.as_str())
            .to_string();
        let labels: BTreeMap<String, String> = ng
            .labels()
            .map(|l| l.clone().into_iter().collect())
            .unwrap_or_default();
        let taints = taints(ng)?;
        let disk_gib = u64::try_from(ng.disk_size().unwrap_or(20)).unwrap_or(20);
        let capacity = template::node_capacity(
            smallest.vcpus,
            smallest.memory_mib,
            smallest.max_pods(),
            disk_gib,
            smallest.gpus,
        );
        let allocatable = eks_allocatable(&capacity);
        let template = template::build(&TemplateSpec {
            node_group: name,
            instance_type: &smallest.name,
            arch: smallest.arch.label(),
            zone: &zone,
            region: &region,
            capacity_type: &capacity_type,
            gpu_type: smallest.gpu_type.as_deref(),
            // Only an AMI id: the release version names a release, not the image label EKS puts on nodes.
            image: ami,
            labels: &labels,
            taints: &taints,
            capacity,
            allocatable,
        });
        let resource_slices = resource_slices(ng, smallest, template::name_of(&template));
        let on_demand = self.price_of(&smallest.name);
        let price_per_hour = if capacity_type == "SPOT" {
            on_demand.map(|p| p * self.config.spot_price_ratio)
        } else {
            on_demand
        };
        let options = self.options(ng, name);
        let type_names: Vec<&str> = types.iter().map(|f| f.name.as_str()).collect();
        let asg_name = asg
            .auto_scaling_group_name()
            .unwrap_or_default()
            .to_string();
        let mut group = ServedGroup {
            spec: Arc::new(NodeGroupSpec {
                id: name.to_string(),
                min_size,
                max_size,
                debug: format!(
                    "eks node group {name}: {} {capacity_type}, asg {asg_name} in {}",
                    type_names.join(","),
                    zones.join(",")
                ),
                template: Arc::new(template),
                resource_slices,
                allocatable,
                price_per_hour,
                options,
                zones: zones.clone(),
                status: NodeGroupStatus::parse(ng.status().map_or("", |s| s.as_str())),
                // The AMI of the launch template version the ASG launches is what new nodes get, and what EKS
                // labels them with. When it is not known (an ASG on a launch configuration, EC2 not answering,
                // an image resolved only at launch), EKS's releaseVersion stands in: the EKS AMI release the
                // group is on, or, for a custom AMI, its id.
                image: ami
                    .or(ng.release_version())
                    .filter(|image| !image.is_empty())
                    .map(str::to_string),
                capacity_rebalance: asg.capacity_rebalance().unwrap_or(false),
                node_repair: ng.node_repair_config().map(node_repair_of),
                capacity_type: CapacityType::parse(&capacity_type)
                    .unwrap_or(CapacityType::OnDemand),
                reservations: Vec::new(),
            }),
            asg: asg_name,
            zones,
            desired: 0,
            instances: Vec::<AsgInstance>::new(),
            failure: None,
            changed: 0,
            uncertain: false,
        };
        group.apply(asg);
        Ok(group)
    }

    /// The group's autoscaling options: its tags', with the config file's over them.
    fn options(&self, ng: &Nodegroup, name: &str) -> Option<OptionOverrides> {
        let tags = ng.tags().cloned().unwrap_or_default();
        let tag_options = options::from_tags(&tags).unwrap_or_else(|error| {
            tracing::warn!(
                node_group = name,
                %error,
                "ignoring the node group's autoscaling-options tags"
            );
            None
        });
        match (tag_options, self.config.options(name)) {
            (Some(tags), Some(config)) => Some(tags.overridden_by(&config)),
            (tags, config) => tags.or(config),
        }
    }

    /// For groups short of their desired capacity, the ASG's last scaling activity says whether AWS failed to
    /// launch it (stockout, quota) since we last asked: then the placeholders carry that error, so that
    /// cluster-autoscaler backs the group off and tries another.
    async fn find_failures(&self, groups: &mut [ServedGroup]) {
        let last_scaled = self
            .last_scaled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for group in groups.iter_mut().filter(|g| g.placeholders() > 0) {
            let request = self
                .calls
                .autoscaling
                .describe_scaling_activities()
                .auto_scaling_group_name(&group.asg)
                .max_records(5);
            let output = match self
                .calls
                .autoscaling("DescribeScalingActivities", request.send())
                .await
            {
                Ok(output) => output,
                Err(error) => {
                    tracing::warn!(node_group = group.spec.id, error = %sdk_error("DescribeScalingActivities", error), "cannot read scaling activities");
                    continue;
                }
            };
            let since = last_scaled
                .get(&group.asg)
                .copied()
                .unwrap_or_else(|| SystemTime::now() - FAILURE_HORIZON);
            let Some(latest) = output.activities().first() else {
                continue;
            };
            let failed = matches!(
                latest.status_code(),
                Some(ScalingActivityStatusCode::Failed | ScalingActivityStatusCode::Cancelled)
            );
            let recent = latest
                .start_time()
                .and_then(|t| SystemTime::try_from(*t).ok())
                .is_some_and(|t| t >= since);
            if failed && recent {
                let message = latest
                    .status_message()
                    .unwrap_or("the Auto Scaling group could not launch instances")
                    .to_string();
                group.failure = Some(failure(&message));
            }
        }
    }
}

/// A failed launch in cluster-autoscaler's terms: out of resources (stockout, quota) or something else.
pub fn failure(message: &str) -> InstanceError {
    const OUT_OF_RESOURCES: [&str; 6] = [
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "MaxSpotInstanceCountExceeded",
        "SpotMaxPriceTooLow",
        "VcpuLimitExceeded",
        "InstanceLimitExceeded",
    ];
    if OUT_OF_RESOURCES.iter().any(|code| message.contains(code)) {
        InstanceError {
            class: InstanceErrorClass::OutOfResources,
            code: PLACEHOLDER_ERROR_CODE.into(),
            message: message.into(),
        }
    } else {
        InstanceError {
            class: InstanceErrorClass::Other,
            code: "scaling-activity-failed".into(),
            message: message.into(),
        }
    }
}

/// What EC2 says of each of the node group's instance types; an unknown one makes the group unservable.
fn instance_types(
    ng: &Nodegroup,
    facts: &HashMap<String, Option<InstanceFacts>>,
) -> Result<Vec<InstanceFacts>, Unservable> {
    (ng.instance_types().iter())
        .map(|t| {
            (facts.get(t).cloned().flatten())
                .ok_or_else(|| Unservable::UnknownInstanceType(t.clone()))
        })
        .collect()
}

/// Why a node group cannot be served (the reason its skip is logged and counted under).
#[derive(Debug, thiserror::Error)]
enum Unservable {
    #[error("no scaling config")]
    NoScalingConfig,
    #[error("no instance types")]
    NoInstanceTypes,
    #[error("unknown instance type {0}")]
    UnknownInstanceType(String),
    #[error("taint effect {0:?}")]
    TaintEffect(String),
}

/// The slices a new node of the group publishes, for the drivers its `ekscale.io/dra-drivers` tag names,
/// from the instance type its template is made of. A tag that cannot be followed (an unknown driver, a type
/// without GPUs) is logged and the group served without slices, as its autoscaling-options tags are: the
/// group still scales for pods that claim no devices.
fn resource_slices(
    ng: &Nodegroup,
    facts: &InstanceFacts,
    node_name: &str,
) -> Vec<crate::model::ResourceSlice> {
    let Some(value) = ng.tags().and_then(|tags| tags.get(DRA_DRIVERS_TAG)) else {
        return Vec::new();
    };
    let drivers: Vec<String> = value.split_whitespace().map(str::to_string).collect();
    let gpus = InstanceGpus {
        instance_type: &facts.name,
        count: facts.gpus,
        model: (facts.gpu_name.as_deref()).and_then(crate::cloud::instance_types::gpu_model),
    };
    dra::template_slices(node_name, &drivers, gpus).unwrap_or_else(|error| {
        tracing::warn!(
            node_group = ng.nodegroup_name().unwrap_or_default(),
            tag = DRA_DRIVERS_TAG,
            %error,
            "ignoring the node group's DRA drivers tag: its template publishes no ResourceSlices"
        );
        Vec::new()
    })
}

/// The node group's taints, as its nodes get them.
fn taints(ng: &Nodegroup) -> Result<Vec<Taint>, Unservable> {
    (ng.taints().iter())
        .map(|t| {
            let effect = t.effect().map(|e| e.as_str()).unwrap_or_default();
            Ok(Taint {
                key: t.key().unwrap_or_default().to_string(),
                value: t.value().unwrap_or_default().to_string(),
                effect: TaintEffect::parse(effect)
                    .ok_or_else(|| Unservable::TaintEffect(effect.to_string()))?,
            })
        })
        .collect()
}

/// EKS's node repair config in the model.
fn node_repair_of(config: &aws_sdk_eks::types::NodeRepairConfig) -> crate::model::NodeRepairConfig {
    crate::model::NodeRepairConfig {
        enabled: config.enabled().unwrap_or(false),
        max_unhealthy_node_threshold_count: config.max_unhealthy_node_threshold_count(),
        max_unhealthy_node_threshold_percentage: config.max_unhealthy_node_threshold_percentage(),
        max_parallel_nodes_repaired_count: config.max_parallel_nodes_repaired_count(),
        max_parallel_nodes_repaired_percentage: config.max_parallel_nodes_repaired_percentage(),
        overrides: (config.node_repair_config_overrides().iter())
            .map(|o| crate::model::NodeRepairOverride {
                node_monitoring_condition: o.node_monitoring_condition().unwrap_or("").to_string(),
                node_unhealthy_reason: o.node_unhealthy_reason().unwrap_or("").to_string(),
                min_repair_wait_time_mins: o.min_repair_wait_time_mins().unwrap_or(0),
                repair_action: o.repair_action().map_or("", |a| a.as_str()).to_string(),
            })
            .collect(),
    }
}
