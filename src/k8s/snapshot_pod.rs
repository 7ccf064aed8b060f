//! A pod as a snapshot file holds it: metadata and spec read as k8s-openapi's, the status cut to what is used
//! (phase, conditions, the nominated node) and the times that date the snapshot. A running pod's container
//! statuses (image, image id, container id, states) were a seventh of reading a 10,000-node cluster's file,
//! every string of them allocated and dropped for the two timestamps read from it.

use k8s_openapi::api::core::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotPod {
    api_version: Option<String>,
    #[serde(default)]
    metadata: meta::ObjectMeta,
    spec: Option<api::PodSpec>,
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    nominated_node_name: Option<String>,
    conditions: Option<Vec<api::PodCondition>>,
    start_time: Option<meta::Time>,
    container_statuses: Option<Vec<ContainerTimes>>,
    init_container_statuses: Option<Vec<ContainerTimes>>,
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
    pub fn into_api(self) -> Result<api::Pod, String> {
        if let Some(other) = self.api_version.filter(|v| v != "v1") {
            return Err(format!("apiVersion {other:?}: a Pod is v1"));
        }
        Ok(api::Pod {
            metadata: self.metadata,
            spec: self.spec,
            status: self.status.map(|s| api::PodStatus {
                phase: s.phase,
                nominated_node_name: s.nominated_node_name,
                conditions: s.conditions,
                start_time: s.start_time,
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

    #[test]
    fn another_api_version_is_refused() {
        let json = r#"{"apiVersion":"v2","kind":"Pod","metadata":{"name":"p"}}"#;
        let pod: SnapshotPod = serde_json::from_str(json).unwrap();
        assert_eq!(
            pod.into_api().unwrap_err(),
            "apiVersion \"v2\": a Pod is v1"
        );
    }
}
