//! A cluster view written as `kubectl get nodes,pods,pdb -A -o json` prints it, for `ekscale-autoscaler
//! simulate --snapshot` to read back: what the benches time the shipped binary on.

use ekscale::autoscaler::ClusterView;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// RFC 3339, as the API server prints times.
pub fn timestamp(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .unwrap()
        .to_string()
}

/// `view` as `kubectl get nodes,pods,pdb -A -o json` prints it, with what a real pod carries besides (uid,
/// resourceVersion, owner, probes' worth of status), written to `path`. A node's problems are
/// the node monitoring agent's conditions, False since their time.
pub fn write(view: &ClusterView, path: &Path) {
    use serde_json::json;
    use std::io::Write;
    let created = timestamp(view.now.unwrap() - Duration::from_secs(3600));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(b"{\"apiVersion\":\"v1\",\"items\":[")
        .unwrap();
    let mut first = true;
    let mut item = |out: &mut std::io::BufWriter<std::fs::File>, value: serde_json::Value| {
        if !first {
            out.write_all(b",\n").unwrap();
        }
        first = false;
        serde_json::to_writer(&mut *out, &value).unwrap();
    };
    for node in &view.nodes {
        let a = &node.allocatable;
        let mut conditions = vec![
            json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "lastHeartbeatTime": created, "lastTransitionTime": created}),
        ];
        for p in &node.problems {
            let since = p.since.map_or(created.clone(), timestamp);
            conditions.push(
                json!({"type": p.condition, "status": "False", "reason": p.reason,
                                   "lastHeartbeatTime": since, "lastTransitionTime": since}),
            );
        }
        item(
            &mut out,
            json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": node.labels, "creationTimestamp": created,
                         "uid": format!("uid-{}", node.name), "resourceVersion": "1000"},
            "spec": {"providerID": node.provider_id},
            "status": {"allocatable": {"cpu": format!("{}m", a.cpu_millis), "memory": a.memory_bytes.to_string(),
                                       "pods": a.pods.to_string()},
                       "capacity": {"cpu": format!("{}m", a.cpu_millis), "memory": a.memory_bytes.to_string(),
                                    "pods": a.pods.to_string()},
                       "conditions": conditions}}),
        );
    }
    for pod in &view.pods {
        let controller = pod.controller.as_ref().unwrap();
        let mut value = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name, "namespace": &*pod.namespace, "labels": pod.labels,
                         "uid": format!("uid-{}", pod.name), "resourceVersion": "2000",
                         "creationTimestamp": created,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": controller.kind,
                                              "name": controller.name, "uid": controller.uid,
                                              "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1.2.3",
                                     "resources": {"requests": {"cpu": format!("{}m", pod.demand.cpu_millis),
                                                                "memory": pod.demand.memory_bytes.to_string()}},
                                     "ports": [{"containerPort": 8080, "protocol": "TCP"}]}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                     "schedulerName": "default-scheduler", "priority": 0},
            "status": {"phase": "Pending"}});
        if let Some(node) = &pod.node_name {
            value["spec"]["nodeName"] = json!(node);
            value["status"] = json!({"phase": "Running", "podIP": "10.0.0.1", "hostIP": "10.0.0.2",
                "startTime": created, "qosClass": "Burstable",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": created},
                               {"type": "PodScheduled", "status": "True", "lastTransitionTime": created}],
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "started": true,
                                       "image": "registry.example.com/app:1.2.3",
                                       "state": {"running": {"startedAt": created}}}]});
        } else {
            value["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
                                                    "reason": "Unschedulable", "lastTransitionTime": created}]);
        }
        item(&mut out, value);
    }
    for pdb in &view.pdbs {
        item(
            &mut out,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": pdb.name, "namespace": pdb.namespace},
            "spec": {"selector": {"matchLabels": pdb.selector.as_ref().unwrap().match_labels}},
            "status": {"disruptionsAllowed": pdb.disruptions_allowed, "currentHealthy": 100,
                       "desiredHealthy": 90, "expectedPods": 100}}),
        );
    }
    out.write_all(b"],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}\n")
        .unwrap();
    out.flush().unwrap();
}
