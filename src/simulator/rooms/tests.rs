//! The free-room first fit against the plain predicate path: on generated small clusters (nodes of several
//! sizes, some tainted, unready or cordoned, running pods some of which keep others away by hostname) and
//! pending groups of every kind (pods that only take room, replicas kept apart by hostname, kept apart by
//! zone, keeping away another app, tolerating the taint), both place every group on the same places, in
//! the same order, and leave the same room.

use super::first_fit::Rooms;
use crate::model::{
    HOSTNAME_LABEL, LabelProjection, LabelSelector, Node, Pod, PodAffinityTerm, Resources,
    Scheduling, Taint, TaintEffect, Toleration, ZONE_LABEL,
};
use crate::simulator::world::{build_places, place_all, pods_by_node};
use std::sync::Arc;

struct Draw(u64);

impl Draw {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn away_from(app: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            expressions: vec![],
        },
        namespaces: Some(vec!["default".into()]),
        topology_key: key.into(),
    }
}

fn pod(name: String, app: &str, cpu: u64, scheduling: Scheduling) -> Pod {
    let demand = Resources {
        cpu_millis: cpu,
        memory_bytes: 1 << 30,
        pods: 1,
        ..Default::default()
    };
    Pod {
        labels: [("app".to_string(), app.to_string())].into(),
        scheduling: Arc::new(scheduling),
        ..Pod::pending("default", &name, demand)
    }
}

fn nodes(draw: &mut Draw) -> Vec<Arc<Node>> {
    let count = 3 + draw.next(12);
    (0..count)
        .map(|i| {
            let name = format!("n{i}");
            let mut node = Node {
                labels: [
                    (HOSTNAME_LABEL.to_string(), name.clone()),
                    (
                        ZONE_LABEL.to_string(),
                        ["a", "b", "c"][i as usize % 3].into(),
                    ),
                ]
                .into(),
                allocatable: Resources {
                    cpu_millis: 1000 + 500 * draw.next(7),
                    memory_bytes: 16 << 30,
                    pods: 2 + draw.next(9),
                    ..Default::default()
                },
                ready: draw.next(8) != 0,
                unschedulable: draw.next(10) == 0,
                name,
                ..Default::default()
            };
            if draw.next(6) == 0 {
                node.taints.push(Taint {
                    key: "dedicated".into(),
                    value: "batch".into(),
                    effect: TaintEffect::NoSchedule,
                });
            }
            Arc::new(node)
        })
        .collect()
}

/// A pending group's constraints, by kind.
fn scheduling(kind: u64, app: &str) -> Scheduling {
    match kind {
        1 => Scheduling {
            anti_affinity: vec![away_from(app, HOSTNAME_LABEL)],
            ..Default::default()
        },
        2 => Scheduling {
            anti_affinity: vec![away_from(app, ZONE_LABEL)],
            ..Default::default()
        },
        3 => Scheduling {
            anti_affinity: vec![away_from("web-0", HOSTNAME_LABEL)],
            ..Default::default()
        },
        4 => Scheduling {
            anti_affinity: vec![away_from(app, HOSTNAME_LABEL)],
            tolerations: vec![Toleration {
                key: Some("dedicated".into()),
                exists: true,
                value: String::new(),
                effect: None,
            }],
            ..Default::default()
        },
        _ => Scheduling::default(),
    }
}

/// One generated case: the cluster's pods (running ones first), which are bound, and the pending groups.
fn case(draw: &mut Draw, nodes: &[Arc<Node>]) -> (Vec<Pod>, Vec<usize>, Vec<Vec<usize>>) {
    let mut pods = Vec::new();
    for node in nodes {
        for r in 0..draw.next(3) {
            // Guards keep web-1 off their node; web-2 replicas already run here and there.
            let (app, s) = match draw.next(3) {
                0 => ("guard", scheduling(3, "guard")),
                1 => (
                    "guard-1",
                    Scheduling {
                        anti_affinity: vec![away_from("web-1", HOSTNAME_LABEL)],
                        ..Default::default()
                    },
                ),
                _ => ("web-2", Scheduling::default()),
            };
            let mut running = pod(format!("{}-{app}-{r}", node.name), app, 100, s);
            running.node_name = Some(node.name.as_str().into());
            pods.push(running);
        }
    }
    let bound: Vec<usize> = (0..pods.len()).collect();
    let mut groups = Vec::new();
    for g in 0..2 + draw.next(5) {
        let app = format!("web-{}", draw.next(4));
        let (kind, cpu) = (draw.next(5), 100 + 200 * draw.next(6));
        let s = scheduling(kind, &app);
        let members = (0..1 + draw.next(8))
            .map(|i| {
                pods.push(pod(format!("{app}-{g}-{i}"), &app, cpu, s.clone()));
                pods.len() - 1
            })
            .collect();
        groups.push(members);
    }
    (pods, bound, groups)
}

#[test]
fn first_fit_over_free_room_places_as_the_plain_path_does() {
    let mut kept_apart = 0;
    for seed in 1..400u64 {
        let mut draw = Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let nodes = nodes(&mut draw);
        let (pods, bound, groups) = case(&mut draw, &nodes);
        let on_node = pods_by_node(&nodes, &pods, &bound);
        let exemplars: Vec<&Pod> = groups.iter().map(|g| &pods[g[0]]).collect();
        let build = || {
            let none = vec![None; nodes.len()];
            build_places(
                &nodes,
                &none,
                &pods,
                &on_node,
                &exemplars,
                &LabelProjection::All,
            )
        };
        let (mut plain_topology, mut plain) = build();
        let (mut topology, mut places) = build();
        let mut rooms = Rooms::new(&places);
        for members in &groups {
            let terms = topology.resolve(&pods[members[0]]);
            let want = place_all(&mut plain_topology, &mut plain, &pods, members, &terms);
            let got = rooms.place(&mut topology, &mut places, &pods, members, &terms);
            assert_eq!(got, want, "seed {seed}: group of {}", pods[members[0]].name);
            let distinct: std::collections::HashSet<_> = got.iter().collect();
            kept_apart += usize::from(got.len() > 1 && distinct.len() == got.len());
        }
        for (p, (a, b)) in plain.iter().zip(&places).enumerate() {
            assert_eq!(a.free, b.free, "seed {seed}: room left on place {p}");
        }
    }
    assert!(
        kept_apart > 100,
        "the cases place groups apart: {kept_apart}"
    );
}
