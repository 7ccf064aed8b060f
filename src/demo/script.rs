//! The demo's script: which simulated EKS to play on, the workloads that come and go over simulated time,
//! and the headroom to keep. The built-in one is `demo.yaml` beside this file; `--scenario FILE` reads the
//! same format.

use super::leaving::{Leaving, LeavingFiles};
use crate::autoscaler::headroom::{self, Policy};
use crate::autoscaler::{DisruptionConfig, DisruptionConfigError};
use crate::cloud::{self, Scenario};
use crate::k8s::{
    PodJson, Template, VersionedBuffer, VersionedRequest, claim_template, device_class,
    pod_from_api, quota_from_value,
};
use crate::model::{CapacityQuota, ClaimTemplate, DeviceClass, Invalid, Pod, rfc3339};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The script the demo plays without `--scenario`.
pub const BUILT_IN_SCRIPT: &str = include_str!("demo.yaml");
/// The built-in demo's second day, played with consolidation off and on.
pub const SECOND_DAY: &str = include_str!("day2.yaml");
/// The built-in demo's third day (a night, in fact): disruption budgets, a node group update, expiry.
pub const THIRD_DAY: &str = include_str!("day3.yaml");
/// The built-in demo's fourth day: Spot interruptions, a rebalance recommendation, a GPU node repaired.
pub const FOURTH_DAY: &str = include_str!("day4.yaml");

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("{0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("scenario: {0}")]
    Scenario(#[from] cloud::ScenarioError),
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("timeline entry {index} (at {at}): {reason}")]
    Timeline {
        index: usize,
        at: String,
        reason: String,
    },
    #[error("headroom: {0}")]
    Headroom(#[from] headroom::PolicyError),
    #[error("disruption: {0}")]
    Disruption(#[from] DisruptionConfigError),
    #[error("{0}")]
    Start(Invalid),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    /// `builtin`, a scenario file's path (relative to the script), or the scenario itself inline.
    scenario: serde_norway::Value,
    /// How long the day lasts in simulated time.
    #[serde(with = "humantime_serde")]
    duration: Duration,
    /// How often the loop runs (simulated).
    #[serde(default = "ten_seconds", with = "humantime_serde")]
    scan_interval: Duration,
    timeline: Vec<EventFile>,
    #[serde(default)]
    headroom: Vec<headroom::PolicyFile>,
    /// CapacityBuffers, as `kubectl apply` takes them; a buffer's scalableRef may name a workload the
    /// timeline creates (each `create` owned by a ReplicaSet is a Deployment of that name).
    #[serde(default)]
    capacity_buffers: Vec<serde_json::Value>,
    /// CapacityQuotas (cluster-scoped), as `kubectl apply` takes them: limits on what the nodes a selector
    /// matches add up to.
    #[serde(default)]
    capacity_quotas: Vec<serde_json::Value>,
    /// The PodTemplates buffers and ProvisioningRequests name.
    #[serde(default)]
    pod_templates: Vec<k8s_openapi::api::core::v1::PodTemplate>,
    /// The simulated wall clock when the day starts (RFC 3339, `2026-03-02T14:00:00Z`): what budget
    /// schedules and node ages are read against. Now, when left out.
    #[serde(default)]
    start: Option<String>,
    /// Disruption budgets, expiry and grace periods, as `--disruption-config` takes them.
    #[serde(default)]
    disruption: Option<serde_norway::Value>,
    /// DeviceClasses (DRA), as `kubectl apply` takes them (`resource.k8s.io/v1`).
    #[serde(default)]
    device_classes: Vec<serde_json::Value>,
    /// ResourceClaimTemplates, which workloads' `claims` name, as `kubectl apply` takes them.
    #[serde(default)]
    resource_claim_templates: Vec<serde_json::Value>,
}

fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventFile {
    #[serde(with = "humantime_serde")]
    at: Duration,
    /// What a person would read in the log.
    #[serde(default)]
    say: Option<String>,
    #[serde(default)]
    create: Option<Workload>,
    /// Deletes the pods of the workload with this name (as an HPA scaling in, or a job finishing), and the
    /// ProvisioningRequest of that name if there is one (Kueue's requests are owned by their workload).
    #[serde(default)]
    delete: Option<String>,
    /// Changes how many instances a node group can have, as a spot pool drying up or freeing up.
    #[serde(default)]
    capacity: Option<CapacityChange>,
    /// Creates a ProvisioningRequest (as Kueue does for a job it queues), as `kubectl apply` takes it.
    #[serde(default)]
    request: Option<serde_json::Value>,
    /// Starts a managed node group update (a new AMI), as `aws eks update-nodegroup-version` does.
    #[serde(default)]
    update: Option<Update>,
    /// EC2 takes Spot instances back: `{nodeGroup, count | index}`, the warning now, gone two minutes later.
    #[serde(default)]
    interrupt: Option<super::leaving::Instances>,
    /// EC2 recommends rebalancing Spot instances: `{nodeGroup, count | index}`.
    #[serde(default)]
    rebalance: Option<super::leaving::Instances>,
    /// AWS Health schedules instances' retirement: `{nodeGroup, count | index, at | in}`.
    #[serde(default)]
    maintenance: Option<super::leaving::MaintenanceFile>,
    /// The monitoring agent marks a node: `{node | nodeGroup + index, condition, reason}`.
    #[serde(default)]
    unhealthy: Option<super::leaving::UnhealthyFile>,
}

/// `update: {nodeGroup: batch, image: ami-eks-amd64-2, duration: 40m}`: the group turns UPDATING, EKS
/// surges new nodes on the image and replaces the old ones over `duration`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Update {
    pub node_group: String,
    pub image: String,
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
}

/// `capacity: {nodeGroup: spot, available: 10}`; without `available`, no limit.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityChange {
    pub node_group: String,
    #[serde(default)]
    pub available: Option<u32>,
}

/// Pods alike, as a Deployment (or Job) would create them.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    pub count: usize,
    pub cpu: String,
    pub memory: String,
    #[serde(default)]
    pub gpu: u32,
    #[serde(default)]
    pub priority: Option<i32>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<serde_json::Value>,
    /// `fargate-scheduler` for pods EKS's admission put on Fargate.
    #[serde(default)]
    pub scheduler_name: Option<String>,
    /// The owner's kind: `ReplicaSet` (default), `Job`, `StatefulSet`, or `none` for bare pods.
    #[serde(default = "replica_set")]
    pub owner: String,
    /// The ProvisioningRequest (in the workload's namespace) whose room its pods take.
    #[serde(default)]
    pub consumes: Option<String>,
    /// DRA claims each pod makes from a ResourceClaimTemplate (`resourceClaims` of the pod, each used by its
    /// container): `[{name: gpu, template: t4}]`.
    #[serde(default)]
    pub claims: Vec<WorkloadClaim>,
}

/// `{name: gpu, template: t4}`: the pod's `spec.resourceClaims` entry `gpu`, its claim made from the
/// ResourceClaimTemplate `t4` of the workload's namespace.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadClaim {
    pub name: String,
    pub template: String,
}

fn default_namespace() -> String {
    "default".into()
}

fn replica_set() -> String {
    "ReplicaSet".into()
}

/// What happens at one moment of the day.
#[derive(Clone, Debug)]
pub enum Action {
    Create(Box<Workload>, Vec<Pod>),
    Delete(String),
    Capacity(CapacityChange),
    Request(Box<VersionedRequest>),
    Update(Update),
    /// A node going away for a reason no autoscaler decided.
    Leaving(Leaving),
}

#[derive(Clone, Debug)]
pub struct Event {
    pub at: Duration,
    pub say: Option<String>,
    pub action: Action,
}

/// A loaded, checked script.
#[derive(Clone, Debug)]
pub struct Script {
    pub scenario: Scenario,
    pub duration: Duration,
    pub scan_interval: Duration,
    /// In time order.
    pub timeline: Vec<Event>,
    pub headroom: Vec<Policy>,
    pub buffers: Vec<VersionedBuffer>,
    pub templates: Vec<Template>,
    /// CapacityQuotas, each valid (a script's invalid quota is refused with its problem).
    pub quotas: Vec<CapacityQuota>,
    /// The simulated wall clock at the start, when the script sets it.
    pub start: Option<SystemTime>,
    pub disruption: Option<Arc<DisruptionConfig>>,
    pub device_classes: Vec<Arc<DeviceClass>>,
    pub claim_templates: Vec<Arc<ClaimTemplate>>,
}

impl Script {
    pub fn built_in() -> Script {
        Script::parse(BUILT_IN_SCRIPT, Path::new(".")).expect("the built-in demo script is valid")
    }

    /// The built-in second day: a burst on on-demand nodes, spot capacity freeing up later.
    pub fn second_day() -> Script {
        Script::parse(SECOND_DAY, Path::new(".")).expect("the built-in second day is valid")
    }

    /// The built-in third day: office hours hold scale-down, a node group update, nodes expiring overnight.
    pub fn third_day() -> Script {
        Script::parse(THIRD_DAY, Path::new(".")).expect("the built-in third day is valid")
    }

    /// The built-in fourth day: a wave of Spot interruptions, a rebalance recommendation, a GPU node its
    /// group repairs; played with leaving nodes handled and ignored.
    pub fn fourth_day() -> Script {
        Script::parse(FOURTH_DAY, Path::new(".")).expect("the built-in fourth day is valid")
    }

    /// Reads a script file; a scenario path in it is taken relative to the file.
    pub fn read(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Script::parse(&text, path.parent().unwrap_or(Path::new(".")))
    }

    /// Parses a script's text; `dir` is where relative scenario paths start.
    pub fn parse(text: &str, dir: &Path) -> Result<Script, ScriptError> {
        let file: File = serde_norway::from_str(text)?;
        let scenario = read_scenario(&file.scenario, dir)?;
        if file.scan_interval.is_zero() {
            return Err(ScriptError::Invalid("scanInterval must be above 0".into()));
        }
        let device_classes: Vec<Arc<DeviceClass>> = (file.device_classes.into_iter().enumerate())
            .map(|(index, object)| {
                device_class(object)
                    .map(Arc::new)
                    .map_err(|e| ScriptError::Invalid(format!("deviceClasses[{index}]: {e}")))
            })
            .collect::<Result<_, _>>()?;
        let claim_templates: Vec<Arc<ClaimTemplate>> =
            (file.resource_claim_templates.into_iter().enumerate())
                .map(|(index, object)| {
                    claim_template(object).map(Arc::new).map_err(|e| {
                        ScriptError::Invalid(format!("resourceClaimTemplates[{index}]: {e}"))
                    })
                })
                .collect::<Result<_, _>>()?;
        let start = (file.start.as_deref())
            .map(|text| rfc3339("start", text))
            .transpose()
            .map_err(ScriptError::Start)?;
        check_events_start(&scenario, start)?;
        let day = Day {
            start: start.or(scenario.start),
            duration: file.duration,
        };
        let timeline = read_timeline(file.timeline, &scenario, &claim_templates, day)?;
        let headroom = file
            .headroom
            .into_iter()
            .map(Policy::from_file)
            .collect::<Result<_, _>>()?;
        let buffers = (file.capacity_buffers.into_iter().enumerate())
            .map(|(index, object)| {
                VersionedBuffer::from_value(object)
                    .map_err(|e| ScriptError::Invalid(format!("capacityBuffers[{index}]: {e}")))
            })
            .collect::<Result<_, _>>()?;
        let templates = file.pod_templates.iter().map(Template::from_api).collect();
        let quotas = read_quotas(file.capacity_quotas)?;
        let disruption = match &file.disruption {
            Some(value) => Some(Arc::new(DisruptionConfig::parse(
                &serde_norway::to_string(value)?,
            )?)),
            None => None,
        };
        Ok(Script {
            scenario,
            duration: file.duration,
            scan_interval: file.scan_interval,
            timeline,
            headroom,
            buffers,
            templates,
            quotas,
            start,
            disruption,
            device_classes,
            claim_templates,
        })
    }
}

/// The script's `scenario`: `builtin`, a scenario file's path (relative to `dir`), or the scenario itself.
fn read_scenario(value: &serde_norway::Value, dir: &Path) -> Result<Scenario, ScriptError> {
    let scenario = match value {
        serde_norway::Value::String(s) if s == "builtin" => Scenario::built_in(),
        serde_norway::Value::String(path) => {
            let path = dir.join(path);
            let text = std::fs::read_to_string(&path).map_err(|source| ScriptError::Read {
                path: path.display().to_string(),
                source,
            })?;
            Scenario::parse(&text)?
        }
        inline @ serde_norway::Value::Mapping(_) => {
            Scenario::parse(&serde_norway::to_string(inline)?)?
        }
        _ => {
            return Err(ScriptError::Invalid(
                "scenario: `builtin`, a file name, or the scenario itself".into(),
            ));
        }
    };
    Ok(scenario)
}

/// The day's `start` (the script's, else its scenario's: what the simulated EKS's clock starts at) and
/// `duration`.
#[derive(Clone, Copy)]
struct Day {
    start: Option<SystemTime>,
    duration: Duration,
}

/// The scenario's `instanceEvents` are played on the script's clock, whose zero is the script's `start`
/// when it gives one: none may come before it.
fn check_events_start(scenario: &Scenario, start: Option<SystemTime>) -> Result<(), ScriptError> {
    let Some(start) = start else {
        return Ok(());
    };
    match (scenario.instance_events.iter().enumerate()).find(|(_, e)| e.at < start) {
        Some((index, event)) => Err(ScriptError::Start(Invalid::new(
            "start",
            format!(
                "the scenario's instanceEvents[{index}] at {} is before the script's start {}",
                humantime::format_rfc3339_seconds(event.at),
                humantime::format_rfc3339_seconds(start)
            ),
        ))),
        None => Ok(()),
    }
}

/// The timeline, sorted by time: each entry one action, checked against the scenario's node groups, the
/// script's ResourceClaimTemplates and the day's `start` and `duration`.
fn read_timeline(
    events: Vec<EventFile>,
    scenario: &Scenario,
    claim_templates: &[Arc<ClaimTemplate>],
    day: Day,
) -> Result<Vec<Event>, ScriptError> {
    let mut timeline = Vec::with_capacity(events.len());
    for (index, event) in events.into_iter().enumerate() {
        let fail = |reason: String| ScriptError::Timeline {
            index,
            at: humantime::format_duration(event.at).to_string(),
            reason,
        };
        let leaving = LeavingFiles {
            interrupt: event.interrupt,
            rebalance: event.rebalance,
            maintenance: event.maintenance,
            unhealthy: event.unhealthy,
        };
        let given = [
            event.create.is_some(),
            event.delete.is_some(),
            event.capacity.is_some(),
            event.request.is_some(),
            event.update.is_some(),
        ];
        if given.iter().filter(|g| **g).count() + leaving.given() != 1 {
            let why = "give exactly one of `create`, `delete`, `capacity`, `request`, `update`, \
                       `interrupt`, `rebalance`, `maintenance` and `unhealthy`";
            return Err(fail(why.into()));
        }
        if event.at > day.duration {
            return Err(fail("after the end of the day (`duration`)".into()));
        }
        let played_at = day.start.map(|start| start + event.at);
        if let Some(leaving) =
            (leaving.read(scenario, played_at)).map_err(|e| fail(e.to_string()))?
        {
            timeline.push(Event {
                at: event.at,
                say: event.say,
                action: Action::Leaving(leaving),
            });
            continue;
        }
        let known = |group: &str| scenario.node_groups.iter().any(|g| g.spec.id == group);
        let action = if let Some(workload) = event.create {
            for claim in &workload.claims {
                let declared = (claim_templates.iter())
                    .any(|t| *t.namespace == workload.namespace && *t.name == claim.template);
                if !declared {
                    return Err(fail(format!(
                        "create: claims: {}: no ResourceClaimTemplate \"{}/{}\" in \
                         resourceClaimTemplates",
                        claim.name, workload.namespace, claim.template
                    )));
                }
            }
            let pods = pods_of(&workload).map_err(|e| fail(e.to_string()))?;
            Action::Create(Box::new(workload), pods)
        } else if let Some(name) = event.delete {
            Action::Delete(name)
        } else if let Some(request) = event.request {
            let read =
                VersionedRequest::from_value(request).map_err(|e| fail(format!("request: {e}")))?;
            Action::Request(Box::new(read))
        } else if let Some(change) = event.capacity {
            if !known(&change.node_group) {
                let group = &change.node_group;
                return Err(fail(format!(
                    "capacity: no node group {group:?} in the scenario"
                )));
            }
            Action::Capacity(change)
        } else {
            let update = event.update.expect("one was given");
            if !known(&update.node_group) {
                let group = &update.node_group;
                return Err(fail(format!(
                    "update: no node group {group:?} in the scenario"
                )));
            }
            Action::Update(update)
        };
        timeline.push(Event {
            at: event.at,
            say: event.say,
            action,
        });
    }
    timeline.sort_by_key(|e| e.at);
    timeline.sort_by_key(|e| e.at);
    Ok(timeline)
}

/// The script's CapacityQuotas, each read as the API server's object; an invalid one is refused with its
/// problem (the demo plays what it enforces).
fn read_quotas(objects: Vec<serde_json::Value>) -> Result<Vec<CapacityQuota>, ScriptError> {
    (objects.into_iter().enumerate())
        .map(|(index, object)| {
            let fail = |e: String| ScriptError::Invalid(format!("capacityQuotas[{index}]: {e}"));
            let quota = quota_from_value(object).map_err(|e| fail(e.to_string()))?;
            match quota.problem() {
                Some(problem) => Err(fail(format!("{}: {problem}", quota.name))),
                None => Ok(quota),
            }
        })
        .collect()
}

/// The workload's pods, built as the API server would hold them and read through the same conversion
/// as a cluster's, so every field is checked the same way.
fn pods_of(w: &Workload) -> Result<Vec<Pod>, Invalid> {
    if w.count == 0 {
        return Err(Invalid::new(&w.name, "count must be at least 1"));
    }
    let mut requests = json!({"cpu": w.cpu, "memory": w.memory});
    if w.gpu > 0 {
        requests[crate::model::GPU_RESOURCE] = json!(w.gpu.to_string());
    }
    let annotations = match &w.consumes {
        Some(request) => json!({crate::k8s::CONSUME_ANNOTATION: request}),
        None => json!({}),
    };
    let owner = match w.owner.as_str() {
        "none" => json!([]),
        kind => json!([{"apiVersion": "apps/v1", "kind": kind, "name": w.name,
                        "uid": format!("uid-{}", w.name), "controller": true}]),
    };
    // Each claim used by the container, as a pod that asks for devices through DRA does.
    let resource_claims: Vec<serde_json::Value> = (w.claims.iter())
        .map(|c| json!({"name": c.name, "resourceClaimTemplateName": c.template}))
        .collect();
    let used: Vec<serde_json::Value> = (w.claims.iter()).map(|c| json!({"name": c.name})).collect();
    (0..w.count)
        .map(|i| {
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{}-{i}", w.name), "namespace": w.namespace,
                             "labels": {"app": w.name}, "ownerReferences": owner,
                             "annotations": annotations},
                "spec": {
                    "containers": [{"name": "main", "image": w.name,
                                    "resources": {"requests": requests, "claims": used}}],
                    "resourceClaims": resource_claims,
                    "nodeSelector": w.node_selector,
                    "tolerations": w.tolerations,
                    "priority": w.priority,
                    "schedulerName": w.scheduler_name,
                },
            });
            let pod: k8s_openapi::api::core::v1::Pod =
                serde_json::from_value(pod).map_err(|e| Invalid::new(&w.name, e.to_string()))?;
            pod_from_api(&pod, PodJson::KeepIfPending).map_err(|e| Invalid::value(e.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_script_loads_with_its_scenario() {
        let script = Script::built_in();
        assert_eq!(script.scenario.cluster, "demo");
        assert!(script.timeline.len() >= 5);
        assert!(script.timeline.windows(2).all(|w| w[0].at <= w[1].at));
        // The DRA scene's class and template, and its job's pods claiming from the template.
        assert_eq!(script.device_classes.len(), 1);
        assert_eq!(&*script.claim_templates[0].name, "turing-gpu");
        let render = (script.timeline.iter())
            .find_map(|e| match &e.action {
                Action::Create(w, pods) if w.name == "render" => Some(pods),
                _ => None,
            })
            .expect("the render job");
        assert!(render.iter().all(|p| p.claims().len() == 1));
        // The GPU pool's quota.
        assert_eq!(script.quotas.len(), 1);
        let pool = script.quotas[0].valid().expect("a valid quota");
        assert_eq!(pool.limits[crate::model::GPU_RESOURCE], 3);
        let third = Script::third_day();
        assert!(third.disruption.is_some() && third.start.is_some());
        assert!(
            (third.timeline.iter())
                .any(|e| matches!(&e.action, Action::Update(u) if u.node_group == "batch"))
        );
        // Its Capacity Block group, with the block it launches into.
        let block = (third.scenario.node_groups.iter())
            .find(|g| g.spec.id == "gpu-block")
            .expect("a Capacity Block group");
        assert_eq!(block.spec.reservations.len(), 1);
        let second = Script::second_day();
        assert_eq!(second.scenario.cluster, "demo-day-2");
        assert!(matches!(
            &second.timeline[2].action,
            Action::Capacity(CapacityChange { node_group, available: Some(10) }) if node_group == "spot"
        ));
        let fourth = Script::fourth_day();
        assert_eq!(fourth.scenario.cluster, "demo-day-4");
        let leaving = (fourth.timeline.iter())
            .filter(|e| matches!(e.action, Action::Leaving(_)))
            .count();
        assert_eq!(leaving, 3);
    }

    #[test]
    fn bad_scripts_say_what_is_wrong() {
        let base = "scenario: builtin\nduration: 1h\n";
        let cases = [
            (
                "timeline: [{at: 2h, delete: web}]",
                "timeline entry 0 (at 2h): after the end of the day",
            ),
            (
                "timeline: [{at: 1m}]",
                "give exactly one of `create`, `delete`, `capacity`, `request`, `update`, `interrupt`, \
                 `rebalance`, `maintenance` and `unhealthy`",
            ),
            (
                "timeline: [{at: 1m, capacity: {nodeGroup: nowhere, available: 1}}]",
                "timeline entry 0 (at 1m): capacity: no node group \"nowhere\" in the scenario",
            ),
            (
                "timeline: [{at: 1m, create: {name: w, count: 1, cpu: lots, memory: 1Gi}}]",
                "timeline entry 0 (at 1m): pod default/w-0: container main: resources.requests.cpu: invalid quantity \"lots\"",
            ),
            ("timeline: []\nextra: 1", "unknown field `extra`"),
            (
                "timeline: [{at: 1m, update: {nodeGroup: nowhere, image: ami-2, duration: 10m}}]",
                "timeline entry 0 (at 1m): update: no node group \"nowhere\" in the scenario",
            ),
            ("start: yesterday\ntimeline: []", "start: "),
            (
                "timeline: [{at: 1m, create: {name: w, count: 1, cpu: 1, memory: 1Gi, claims: [{name: gpu, template: t4}]}}]",
                "timeline entry 0 (at 1m): create: claims: gpu: no ResourceClaimTemplate \"default/t4\" in resourceClaimTemplates",
            ),
            (
                "deviceClasses: [{apiVersion: resource.k8s.io/v1alpha3, kind: DeviceClass, metadata: {name: gpu}}]\ntimeline: []",
                "deviceClasses[0]: ",
            ),
            (
                "resourceClaimTemplates: [{kind: ResourceClaimTemplate, metadata: {name: Bad_Name}, spec: {spec: {}}}]\ntimeline: []",
                "resourceClaimTemplates[0]: ",
            ),
            (
                "timeline: []\ndisruption: {nodeGroups: [{match: general, expireAfter: soon}]}",
                "disruption: ",
            ),
            (
                "capacityQuotas: [{apiVersion: autoscaling.x-k8s.io/v1beta1, kind: CapacityQuota, \
                 metadata: {name: gpu-pool}, spec: {limits: {resources: {cpu: 500m}}}}]\ntimeline: []",
                "capacityQuotas[0]: gpu-pool: spec.limits.resources[cpu]: Invalid value: \"500m\": All \
                 resource quantities must be non-negative integers.",
            ),
            (
                "capacityQuotas: [{apiVersion: autoscaling.x-k8s.io/v1beta1, kind: CapacityQuota, \
                 metadata: {}, spec: {limits: {resources: {cpu: 1}}}}]\ntimeline: []",
                "capacityQuotas[0]: no metadata.name",
            ),
        ];
        for (rest, expected) in cases {
            let error = Script::parse(&format!("{base}{rest}"), Path::new("."))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
        }
        let error = Script::parse(
            "scenario: nowhere.yaml\nduration: 1h\ntimeline: []",
            Path::new("/nonexistent"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("reading /nonexistent/nowhere.yaml"),
            "{error}"
        );
    }
}
