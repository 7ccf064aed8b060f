use super::*;

/// Grouping reads, of every pending pod, the fields of its equivalence key (DRA's pointer among them,
/// which most pods leave empty): those must stay in the pod's first two cache lines (`repr(C)`), as a
/// field declared past them costs a cache miss a pod (measured: DRA's three fields at the pod's end made
/// the loop over 51,000 pending pods 14-25% slower, and its pointer in the third line still 10-20%).
#[test]
fn what_the_equivalence_key_reads_is_in_the_first_two_cache_lines() {
    use std::mem::{offset_of, size_of};
    let ends = [
        (
            "priority",
            offset_of!(Pod, priority) + size_of::<Option<i32>>(),
        ),
        (
            "scheduling",
            offset_of!(Pod, scheduling) + size_of::<Arc<Scheduling>>(),
        ),
        (
            "namespace",
            offset_of!(Pod, namespace) + size_of::<Arc<str>>(),
        ),
        ("demand", offset_of!(Pod, demand) + size_of::<Resources>()),
        (
            "extended",
            offset_of!(Pod, extended) + size_of::<BTreeMap<String, u64>>(),
        ),
        (
            "dra",
            offset_of!(Pod, dra) + size_of::<Option<Box<PodDra>>>(),
        ),
    ];
    for (field, end) in ends {
        assert!(end <= 2 * 64, "Pod::{field} ends at byte {end}");
    }
}

#[test]
fn pods_read_in_parts_share_namespaces_equal_constraints_and_owners() {
    let tolerant = Scheduling {
        node_selector: [("team".to_string(), "web".to_string())].into(),
        ..Default::default()
    };
    let owner = Controller {
        kind: "ReplicaSet".into(),
        name: "web-7d4b".into(),
        uid: "0b3c6a1e".into(),
    };
    let pod = |namespace: &str, name: &str| Pod {
        scheduling: Arc::new(tolerant.clone()),
        controller: Some(Arc::new(owner.clone())),
        ..Pod::pending(namespace, name, crate::model::Resources::default())
    };
    // Two parts, as two converters read them: each shares within itself.
    let mut parts = [
        vec![pod("web", "p0"), pod("web", "p1")],
        vec![pod("batch", "p2"), pod("web", "p3")],
    ];
    for part in &mut parts {
        let mut alike = Alike::default();
        part.iter_mut().for_each(|pod| alike.share(pod));
    }
    let owners = |pods: &[Pod]| {
        pods.iter()
            .map(|p| p.controller.clone().unwrap())
            .collect::<Vec<_>>()
    };
    assert!(Arc::ptr_eq(&parts[0][0].namespace, &parts[0][1].namespace));
    assert!(Arc::ptr_eq(&owners(&parts[0])[0], &owners(&parts[0])[1]));
    assert!(!Arc::ptr_eq(
        &parts[0][0].scheduling,
        &parts[1][0].scheduling
    ));
    assert!(!Arc::ptr_eq(&owners(&parts[0])[0], &owners(&parts[1])[0]));
    let mut pods: Vec<Arc<Pod>> = parts.into_iter().flatten().map(Arc::new).collect();
    // A pod also held elsewhere is left as it is.
    let held = Arc::new(pod("web", "p4"));
    pods.push(held.clone());
    Alike::default().join(&mut pods);
    assert!(Arc::ptr_eq(&pods[0].namespace, &pods[3].namespace));
    assert_eq!(&*pods[2].namespace, "batch");
    for pod in &pods[1..4] {
        assert!(Arc::ptr_eq(&pods[0].scheduling, &pod.scheduling));
    }
    assert_eq!(*pods[2].scheduling, tolerant);
    assert!(!Arc::ptr_eq(&pods[0].scheduling, &pods[4].scheduling));
    let owner_of = |i: usize| pods[i].controller.clone().unwrap();
    for i in 1..4 {
        assert!(Arc::ptr_eq(&owner_of(0), &owner_of(i)));
    }
    assert_eq!(*owner_of(2), owner);
    assert!(!Arc::ptr_eq(&owner_of(0), &owner_of(4)));
}

#[test]
fn what_pods_share_is_forgotten_once_no_pod_holds_it() {
    let mut alike = Alike::default();
    let pod = |namespace: &str, team: usize| Pod {
        scheduling: Arc::new(Scheduling {
            node_selector: [("team".to_string(), team.to_string())].into(),
            ..Default::default()
        }),
        ..Pod::pending(namespace, "p", crate::model::Resources::default())
    };
    let mut kept = pod("web", 0);
    alike.share(&mut kept);
    let mut again = pod("web", 0);
    alike.share(&mut again);
    assert!(Arc::ptr_eq(&kept.scheduling, &again.scheduling));
    // Workloads that come and go: each leaves its constraints behind until the next forgetting.
    let mut most = 0;
    for team in 1..5_000 {
        let mut gone = pod(&format!("ns-{team}"), team);
        alike.share(&mut gone);
        most = most.max(alike.len());
    }
    assert!(most <= 2 * 1024 + 2, "{most} values kept");
    let mut later = pod("web", 0);
    alike.share(&mut later);
    assert!(Arc::ptr_eq(&kept.scheduling, &later.scheduling));
}

#[test]
fn host_ports_conflict_on_protocol_port_and_overlapping_ips() {
    let port = |protocol: &str, port: i32, ip: &str| HostPort {
        protocol: protocol.into(),
        port,
        ip: ip.into(),
    };
    assert!(port("TCP", 80, "").conflicts(&port("TCP", 80, "10.0.0.1")));
    assert!(!port("TCP", 80, "10.0.0.2").conflicts(&port("TCP", 80, "10.0.0.1")));
    assert!(!port("UDP", 80, "").conflicts(&port("TCP", 80, "")));
    assert!(!port("TCP", 81, "").conflicts(&port("TCP", 80, "")));
}
