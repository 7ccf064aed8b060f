//! The steady cluster the loop benches share: nodes of 16 CPU each running a DaemonSet pod and 30 ReplicaSet
//! pods that take 30% of its CPU, nothing pending; a bench says only how its nodes and groups differ.

use ekscale::autoscaler::ClusterView;
use ekscale::model::{Alike, Controller, Labels, Node, Phase, Pod, PodNames, Resources};
use std::sync::Arc;
use std::time::SystemTime;

const PODS_PER_NODE: usize = 30;
const MI: u64 = 1 << 20;

fn pod(name: String, app: &str, kind: &str, (cpu, memory): (u64, u64)) -> Pod {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: memory,
        pods: 1,
        ..Default::default()
    };
    let mut pod = Pod {
        labels: Labels::from([("app".to_string(), app.to_string())]),
        controller: Some(Arc::new(Controller {
            kind: kind.into(),
            name: app.into(),
            uid: format!("uid-{app}"),
        })),
        ..Pod::pending("default", &name, demand)
    };
    pod.phase = Phase::Running;
    pod.unschedulable = false;
    pod
}

/// The nodes (in groups of `group_nodes`) with their pods: a DaemonSet pod each, and 30 ReplicaSet pods of
/// three shapes averaging 30% of 16 CPU (the last node of each group runs its DaemonSet pod only: it goes,
/// empty).
pub fn view(nodes: Vec<Arc<Node>>, group_nodes: usize, now: SystemTime) -> ClusterView {
    let average = 4800 / PODS_PER_NODE as u64;
    let shapes = [
        (average / 2, 256 * MI),
        (average, 512 * MI),
        (average * 3 / 2, 768 * MI),
    ];
    let mut pods = Vec::with_capacity(nodes.len() * (PODS_PER_NODE + 1));
    for (n, node) in nodes.iter().enumerate() {
        let name = format!("node-exporter-{}", node.name);
        let mut exporter = pod(name, "node-exporter", "DaemonSet", (100, 128 * MI));
        exporter.node_name = Some(node.name.as_str().into());
        pods.push(exporter);
        if n % group_nodes == group_nodes - 1 {
            continue;
        }
        for p in 0..PODS_PER_NODE {
            let k = n * PODS_PER_NODE + p;
            let app = format!("app-{}", k % 50);
            let mut running = pod(format!("{app}-{k}"), &app, "ReplicaSet", shapes[k % 3]);
            running.node_name = Some(node.name.as_str().into());
            running.created = Some(now);
            pods.push(running);
        }
    }
    let mut alike = Alike::default();
    pods.iter_mut().for_each(|pod| alike.share(pod));
    ClusterView {
        keys: PodNames::of(&pods).into(),
        nodes,
        pods: pods.into_iter().map(Arc::new).collect(),
        now: Some(now),
        ..ClusterView::default()
    }
}
