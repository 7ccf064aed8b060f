//! A pod as a snapshot file holds it, read only for what is used: the metadata, spec and containers fields
//! the model reads (as k8s-openapi's types), the status cut to phase, conditions, the nominated node and the
//! names of the claims made for it, and
//! the times that date the snapshot. The rest is skipped, not built: a running pod's container statuses
//! (image, image id, container id, states) were a seventh of reading a 10,000-node cluster's file, and
//! k8s-openapi's whole `Container` and `PodSpec` (every field an `Option`, moved whole) a tenth; kubectl's
//! `managedFields` are often half of a pod's text.
//!
//! What is kept is what `objects::pod_from_api` and the JSON a pending pod keeps for the provider's
//! MatchPod (`pod::from_text`) read: a field either of them starts reading must be added here.

use crate::model::Invalid;
use k8s_openapi::api::core::v1 as api;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotPod {
    api_version: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    spec: Option<SnapshotPodSpec>,
    status: Option<SnapshotPodStatus>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<meta::OwnerReference>>,
    uid: Option<String>,
    creation_timestamp: Option<meta::Time>,
    deletion_timestamp: Option<meta::Time>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotPodSpec {
    #[serde(default)]
    containers: Vec<SnapshotContainer>,
    init_containers: Option<Vec<SnapshotContainer>>,
    affinity: Option<api::Affinity>,
    node_selector: Option<BTreeMap<String, String>>,
    tolerations: Option<Vec<api::Toleration>>,
    topology_spread_constraints: Option<Vec<api::TopologySpreadConstraint>>,
    volumes: Option<Vec<api::Volume>>,
    priority: Option<i32>,
    scheduler_name: Option<String>,
    node_name: Option<String>,
    host_network: Option<bool>,
    overhead: Option<BTreeMap<String, Quantity>>,
    resources: Option<api::ResourceRequirements>,
    termination_grace_period_seconds: Option<i64>,
    resource_claims: Option<Vec<api::PodResourceClaim>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotContainer {
    #[serde(default)]
    name: String,
    resources: Option<api::ResourceRequirements>,
    ports: Option<Vec<api::ContainerPort>>,
    restart_policy: Option<String>,
    security_context: Option<api::SecurityContext>,
}

impl SnapshotContainer {
    fn into_api(self) -> api::Container {
        api::Container {
            name: self.name,
            resources: self.resources,
            ports: self.ports,
            restart_policy: self.restart_policy,
            security_context: self.security_context,
            ..api::Container::default()
        }
    }
}

impl SnapshotPodSpec {
    fn into_api(self) -> api::PodSpec {
        let containers = |list: Vec<SnapshotContainer>| {
            list.into_iter().map(SnapshotContainer::into_api).collect()
        };
        api::PodSpec {
            containers: containers(self.containers),
            init_containers: self.init_containers.map(containers),
            affinity: self.affinity,
            node_selector: self.node_selector,
            tolerations: self.tolerations,
            topology_spread_constraints: self.topology_spread_constraints,
            volumes: self.volumes,
            priority: self.priority,
            scheduler_name: self.scheduler_name,
            node_name: self.node_name,
            host_network: self.host_network,
            overhead: self.overhead,
            resources: self.resources,
            termination_grace_period_seconds: self.termination_grace_period_seconds,
            resource_claims: self.resource_claims,
            ..api::PodSpec::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotPodStatus {
    phase: Option<String>,
    nominated_node_name: Option<String>,
    conditions: Option<Vec<api::PodCondition>>,
    start_time: Option<meta::Time>,
    container_statuses: Option<Vec<ContainerTimes>>,
    init_container_statuses: Option<Vec<ContainerTimes>>,
    resource_claim_statuses: Option<Vec<api::PodResourceClaimStatus>>,
}

/// A container status's states, for their times.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerTimes {
    state: Option<StateTimes>,
    last_state: Option<StateTimes>,
}

#[derive(Deserialize)]
struct StateTimes {
    running: Option<Times>,
    terminated: Option<Times>,
}

/// `running` has `startedAt`, `terminated` both.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Times {
    started_at: Option<meta::Time>,
    finished_at: Option<meta::Time>,
}

impl SnapshotPod {
    /// Its times, as the whole status has them: created, started, its conditions', its containers' starts
    /// and ends.
    pub fn times(&self) -> impl Iterator<Item = &meta::Time> {
        let status = self.status.as_ref();
        let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
        let containers = status
            .into_iter()
            .flat_map(|s| [&s.container_statuses, &s.init_container_statuses])
            .flatten()
            .flatten();
        let states = containers.flat_map(|c| [&c.state, &c.last_state]).flatten();
        let state_times = states
            .flat_map(|s| [&s.running, &s.terminated])
            .flatten()
            .flat_map(|t| [&t.started_at, &t.finished_at]);
        let condition_times = conditions
            .iter()
            .flat_map(|c| [&c.last_probe_time, &c.last_transition_time]);
        [&self.metadata.creation_timestamp]
            .into_iter()
            .chain(status.map(|s| &s.start_time))
            .chain(condition_times)
            .chain(state_times)
            .flatten()
    }

    /// The pod as k8s-openapi's, with the status fields read; a pod of another `apiVersion` than `v1` is
    /// refused, as k8s-openapi refuses it.
    pub fn into_api(self) -> Result<api::Pod, Invalid> {
        if let Some(other) = self.api_version.filter(|v| v != "v1") {
            return Err(Invalid::new(format!("apiVersion {other:?}"), "a Pod is v1"));
        }
        let metadata = self.metadata;
        Ok(api::Pod {
            metadata: meta::ObjectMeta {
                name: metadata.name,
                namespace: metadata.namespace,
                labels: metadata.labels,
                annotations: metadata.annotations,
                owner_references: metadata.owner_references,
                uid: metadata.uid,
                creation_timestamp: metadata.creation_timestamp,
                deletion_timestamp: metadata.deletion_timestamp,
                ..meta::ObjectMeta::default()
            },
            spec: self.spec.map(SnapshotPodSpec::into_api),
            status: self.status.map(|s| api::PodStatus {
                phase: s.phase,
                nominated_node_name: s.nominated_node_name,
                conditions: s.conditions,
                start_time: s.start_time,
                resource_claim_statuses: s.resource_claim_statuses,
                ..api::PodStatus::default()
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_time_of_the_status_is_read_and_the_rest_skipped() {
        let json = r#"{"apiVersion":"v1","kind":"Pod",
          "metadata":{"name":"p","namespace":"web","creationTimestamp":"2026-01-01T00:00:01Z"},
          "spec":{"containers":[{"name":"c","image":"i"}],"nodeName":"n1"},
          "status":{"phase":"Running","nominatedNodeName":"n2","startTime":"2026-01-01T00:00:02Z",
            "podIP":"10.0.0.1","qosClass":"Burstable",
            "conditions":[{"type":"Ready","status":"True","lastProbeTime":"2026-01-01T00:00:03Z",
                           "lastTransitionTime":"2026-01-01T00:00:04Z"}],
            "containerStatuses":[{"name":"c","image":"i","imageID":"x","ready":true,"restartCount":1,
              "state":{"running":{"startedAt":"2026-01-01T00:00:05Z"}},
              "lastState":{"terminated":{"exitCode":1,"startedAt":"2026-01-01T00:00:06Z",
                                         "finishedAt":"2026-01-01T00:00:07Z"}}}],
            "initContainerStatuses":[{"name":"i","image":"i","imageID":"x","ready":true,"restartCount":0,
              "state":{"terminated":{"exitCode":0,"finishedAt":"2026-01-01T00:00:08Z"}}}]}}"#;
        let pod: SnapshotPod = serde_json::from_str(json).unwrap();
        let seconds: Vec<i64> = pod
            .times()
            .map(|t| t.0.as_second() - 1_767_225_600)
            .collect();
        assert_eq!(seconds, [1, 2, 3, 4, 5, 6, 7, 8]);
        let pod = pod.into_api().unwrap();
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.nominated_node_name.as_deref(), Some("n2"));
        assert_eq!(status.conditions.unwrap()[0].type_, "Ready");
        assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("n1"));
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
    }

    /// Every field the model or a pending pod's MatchPod reads survives the cut: the pod read whole by
    /// k8s-openapi and the pod read here become the same model pod with the same facts.
    #[test]
    fn what_the_model_reads_is_kept() {
        let json = r#"{"apiVersion":"v1","kind":"Pod",
          "metadata":{"name":"p","namespace":"web","labels":{"app":"a"},"uid":"u1","resourceVersion":"7",
            "annotations":{"cluster-autoscaler.kubernetes.io/safe-to-evict":"false",
              "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes":"scratch",
              "cluster-autoscaler.kubernetes.io/pod-scale-up-delay":"30s",
              "karpenter.sh/do-not-disrupt":"true","kubernetes.io/config.mirror":"x"},
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a-1","uid":"r1",
              "controller":true}],
            "creationTimestamp":"2026-01-01T00:00:01Z","deletionTimestamp":"2026-01-01T00:00:09Z",
            "managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1",
              "fieldsV1":{"f:spec":{}}}]},
          "spec":{"schedulerName":"custom","priority":1000,"hostNetwork":true,
            "terminationGracePeriodSeconds":45,"overhead":{"cpu":"250m"},
            "resources":{"requests":{"memory":"1Gi"}},
            "nodeSelector":{"team":"t"},
            "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"},
              {"name":"nic","resourceClaimName":"shared-nic"}],
            "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
            "affinity":{
              "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
                {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}},
              "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                {"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"zone"}]},
              "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                {"labelSelector":{"matchLabels":{"app":"a"}},"topologyKey":"kubernetes.io/hostname"}]}},
            "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
              "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"a"}}}],
            "volumes":[{"name":"scratch","emptyDir":{}},{"name":"logs","hostPath":{"path":"/var/log"}},
              {"name":"data","awsElasticBlockStore":{"volumeID":"vol-1"}}],
            "initContainers":[{"name":"proxy","image":"i","restartPolicy":"Always",
              "resources":{"requests":{"cpu":"100m"}}}],
            "containers":[{"name":"c","image":"i","env":[{"name":"A","value":"1"}],
              "resources":{"requests":{"cpu":"1","nvidia.com/gpu":"1"},"limits":{"memory":"2Gi",
                "nvidia.com/gpu":"1"},"claims":[{"name":"gpu"}]},
              "ports":[{"containerPort":80,"hostPort":8080,"protocol":"TCP"}],
              "securityContext":{"privileged":true}}]},
          "status":{"phase":"Pending","nominatedNodeName":"n2",
            "resourceClaimStatuses":[{"name":"gpu","resourceClaimName":"p-gpu-x7k2p"}],
            "conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}"#;
        let whole: api::Pod = serde_json::from_str(json).unwrap();
        let cut: SnapshotPod = serde_json::from_str(json).unwrap();
        let cut = cut.into_api().unwrap();
        let mut from_whole =
            crate::k8s::objects::pod_from_api(&whole, crate::k8s::objects::PodJson::KeepIfPending)
                .unwrap();
        let mut from_cut =
            crate::k8s::objects::pod_from_api(&cut, crate::k8s::objects::PodJson::KeepIfPending)
                .unwrap();
        // A pending pod keeps its JSON for MatchPod: what MatchPod reads of it is the same.
        let facts = |pod: &mut crate::model::Pod| {
            crate::k8s::PodFacts::from_text(&pod.json.take().expect("a pending pod keeps its JSON"))
                .unwrap()
        };
        assert_eq!(facts(&mut from_cut), facts(&mut from_whole));
        assert_eq!(from_cut, from_whole);
        // And the pod is not a default one: the fields above were read.
        assert_eq!(from_cut.scheduling.anti_affinity.len(), 1);
        assert_eq!(from_cut.disruption.local_volumes, ["logs"]);
        assert_eq!(from_cut.claims().len(), 2);
        assert_eq!(from_cut.uid().map(|u| &**u), Some("u1"));
    }

    #[test]
    fn another_api_version_is_refused() {
        let json = r#"{"apiVersion":"v2","kind":"Pod","metadata":{"name":"p"}}"#;
        let pod: SnapshotPod = serde_json::from_str(json).unwrap();
        assert_eq!(
            pod.into_api().unwrap_err().to_string(),
            "apiVersion \"v2\": a Pod is v1"
        );
    }
}
