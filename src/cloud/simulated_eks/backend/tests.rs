use super::*;

const SCENARIO: &str = r#"
cluster: test
region: us-east-1
nodeGroups:
  - name: web
    instanceType: m5.large
    zones: [us-east-1a, us-east-1b]
    minSize: 1
    maxSize: 10
    desiredSize: 2
    provisioningDelay: 30s
    deletionDelay: 5s
  - name: tight
    instanceType: c5.large
    zones: [us-east-1a]
    minSize: 0
    maxSize: 5
    desiredSize: 1
    availableCapacity: 2
"#;

fn backend() -> SimulatedEks {
    SimulatedEks::new(Scenario::parse(SCENARIO).unwrap(), Clock::manual())
}

fn states(backend: &SimulatedEks, id: &str) -> Vec<InstanceState> {
    backend
        .instances(id)
        .unwrap()
        .iter()
        .map(|i| i.state)
        .collect()
}

#[tokio::test]
async fn desired_instances_run_from_the_start_spread_over_zones() {
    let sim = backend();
    let instances = sim.instances("web").unwrap();
    assert_eq!(states(&sim, "web"), [InstanceState::Running; 2]);
    assert!(instances[0].id.starts_with("aws:///us-east-1a/i-"));
    assert!(instances[1].id.starts_with("aws:///us-east-1b/i-"));
    let suffix = instances[0].id.rsplit('/').next().unwrap();
    assert_eq!(suffix.len(), 19, "i- and 17 hex digits: {suffix}");
    assert!(suffix[2..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(sim.node_group_of(&instances[0].id).as_deref(), Some("web"));
}

#[tokio::test]
async fn new_instances_are_creating_until_the_provisioning_delay() {
    let sim = backend();
    sim.set_target_size("web", 3).await.unwrap();
    assert_eq!(sim.target_size("web").unwrap(), 3);
    assert_eq!(states(&sim, "web")[2], InstanceState::Creating);
    sim.clock().advance(Duration::from_secs(29));
    assert_eq!(states(&sim, "web")[2], InstanceState::Creating);
    sim.clock().advance(Duration::from_secs(1));
    assert_eq!(states(&sim, "web")[2], InstanceState::Running);
}

#[tokio::test]
async fn deleted_instances_report_deleting_then_vanish() {
    let sim = backend();
    let victim = sim.instances("web").unwrap()[0].id.clone();
    sim.delete_instances("web", std::slice::from_ref(&victim))
        .await
        .unwrap();
    assert_eq!(sim.target_size("web").unwrap(), 1);
    assert_eq!(
        sim.instances("web").unwrap()[0].state,
        InstanceState::Deleting
    );
    assert_eq!(
        sim.node_group_of(&victim).as_deref(),
        Some("web"),
        "still a node while deleting"
    );
    sim.clock().advance(Duration::from_secs(5));
    assert_eq!(sim.instances("web").unwrap().len(), 1);
    assert_eq!(sim.node_group_of(&victim), None);
}

#[tokio::test]
async fn capacity_beyond_what_is_available_becomes_placeholders() {
    let sim = backend();
    sim.set_target_size("tight", 4).await.unwrap();
    let instances = sim.instances("tight").unwrap();
    assert_eq!(instances.len(), 4);
    let placeholders: Vec<_> = instances.iter().filter(|i| i.placeholder).collect();
    assert_eq!(placeholders.len(), 2);
    assert_eq!(placeholders[0].state, InstanceState::Creating);
    assert_eq!(
        placeholders[0].error.as_ref().unwrap().class,
        InstanceErrorClass::OutOfResources
    );
    assert_eq!(
        placeholders[0].id,
        "aws:///us-east-1a/i-placeholder-tight-0"
    );
    assert_eq!(
        sim.node_group_of(&placeholders[1].id).as_deref(),
        Some("tight")
    );

    // Cancelling not-yet-created capacity removes placeholders, never instances.
    sim.set_target_size("tight", 3).await.unwrap();
    assert_eq!(
        sim.instances("tight")
            .unwrap()
            .iter()
            .filter(|i| i.placeholder)
            .count(),
        1
    );
    assert!(
        sim.set_target_size("tight", 1).await.is_err(),
        "two instances exist"
    );

    // Deleting a real instance frees capacity; the outstanding request is launched.
    let real = sim.instances("tight").unwrap()[0].id.clone();
    sim.delete_instances("tight", &[real]).await.unwrap();
    sim.clock().advance(Duration::from_secs(10));
    let instances = sim.instances("tight").unwrap();
    assert_eq!(sim.target_size("tight").unwrap(), 2);
    assert_eq!(instances.len(), 2);
    assert!(instances.iter().all(|i| !i.placeholder));
}

#[tokio::test]
async fn an_atomic_increase_the_capacity_cannot_hold_whole_changes_nothing() {
    let sim = backend();
    // `tight` runs 1 of its availableCapacity 2: one more fits, two do not.
    let before = sim.instances("tight").unwrap();
    let refused = sim.atomic_increase("tight", 3).await.unwrap_err();
    assert!(
        matches!(&refused, CloudError::Exhausted(m) if m.contains("can launch 1 more instance(s) now")),
        "{refused}"
    );
    assert_eq!(sim.target_size("tight").unwrap(), 1);
    assert_eq!(sim.instances("tight").unwrap(), before);

    // Capacity already promised to placeholders is not free: with 3 asked of 2, none is.
    sim.set_target_size("tight", 3).await.unwrap();
    assert!(sim.atomic_increase("tight", 4).await.is_err());
    assert_eq!(sim.target_size("tight").unwrap(), 3);
    sim.set_target_size("tight", 2).await.unwrap();

    // Room frees: the whole increase is taken and launched.
    sim.set_available_capacity("tight", Some(4)).unwrap();
    sim.atomic_increase("tight", 4).await.unwrap();
    let instances = sim.instances("tight").unwrap();
    assert_eq!(instances.len(), 4);
    assert!(instances.iter().all(|i| !i.placeholder));
    // Without a capacity limit it is a plain increase.
    sim.atomic_increase("web", 5).await.unwrap();
    assert_eq!(sim.instances("web").unwrap().len(), 5);
}

/// Each instance of `id` with its state, in launch order.
fn listed(backend: &SimulatedEks, id: &str) -> Vec<(String, InstanceState)> {
    (backend.instances(id).unwrap().into_iter())
        .map(|i| (i.id, i.state))
        .collect()
}

fn image_label(spec: &NodeGroupSpec) -> &str {
    let labels = &spec.template.metadata.as_ref().unwrap().labels;
    &labels[crate::model::NODE_GROUP_IMAGE_LABEL]
}

#[tokio::test]
async fn an_update_surges_replaces_each_old_instance_in_turn_and_scales_back() {
    use InstanceState::{Creating, Deleting, Running};
    let sim = backend();
    let old: Vec<String> = listed(&sim, "web").into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        image_label(&sim.node_group("web").unwrap()),
        "ami-eks-amd64-1"
    );

    sim.start_update("web", "ami-0new", Duration::from_secs(90))
        .unwrap();
    let spec = sim.node_group("web").unwrap();
    assert_eq!(spec.status, NodeGroupStatus::Updating);
    assert_eq!(spec.image.as_deref(), Some("ami-0new"));
    assert_eq!(
        image_label(&spec),
        "ami-0new",
        "new nodes get the new image"
    );
    // A surge of one per zone (two), launched now.
    assert_eq!(sim.target_size("web").unwrap(), 4);
    let states: Vec<_> = listed(&sim, "web").into_iter().map(|(_, s)| s).collect();
    assert_eq!(states, [Running, Running, Creating, Creating]);

    // Two old instances over 90 s: one replaced at 30 s, the other at 60 s, the end at 90 s. Read late,
    // each step still happens at its own time: the replacement launched at 30 s runs at 60 s, the one
    // launched at 60 s is still starting at 62 s.
    sim.clock().advance(Duration::from_secs(29));
    assert!(listed(&sim, "web").iter().all(|(_, s)| *s != Deleting));
    sim.clock().advance(Duration::from_secs(33));
    let now = listed(&sim, "web");
    assert_eq!(
        sim.target_size("web").unwrap(),
        4,
        "a replacement keeps the target"
    );
    assert!(
        !now.iter().any(|(id, _)| *id == old[0]),
        "the first old instance is gone (deleting 5 s from 30 s)"
    );
    assert_eq!(
        now.iter().find(|(id, _)| *id == old[1]).unwrap().1,
        Deleting
    );
    let new: Vec<_> = now.iter().filter(|(id, _)| !old.contains(id)).collect();
    let states: Vec<_> = new.iter().map(|(_, s)| *s).collect();
    assert_eq!(states, [Running, Running, Running, Creating]);
    assert_eq!(
        sim.node_group("web").unwrap().status,
        NodeGroupStatus::Updating
    );

    // At 90 s the surge comes off: the newest two go, the group is ACTIVE on the new image.
    sim.clock().advance(Duration::from_secs(28));
    assert_eq!(sim.target_size("web").unwrap(), 2);
    let spec = sim.node_group("web").unwrap();
    assert_eq!(spec.status, NodeGroupStatus::Active);
    assert_eq!(image_label(&spec), "ami-0new");
    sim.clock().advance(Duration::from_secs(5));
    let end = listed(&sim, "web");
    assert_eq!(end.len(), 2);
    assert!(end.iter().all(|(id, s)| !old.contains(id) && *s == Running));
    let kept: Vec<_> = end.iter().map(|(id, _)| id.clone()).collect();
    let surge: Vec<_> = new.iter().take(2).map(|(id, _)| id.clone()).collect();
    assert_eq!(kept, surge, "the surge, launched first, stays");
}

#[tokio::test]
async fn an_update_starts_only_on_an_active_group_and_surges_no_further_than_max() {
    let sim = backend();
    sim.set_target_size("web", 9).await.unwrap();
    sim.start_update("web", "ami-2", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        sim.target_size("web").unwrap(),
        10,
        "max size 10: a surge of one"
    );
    let again = sim
        .start_update("web", "ami-3", Duration::from_secs(60))
        .unwrap_err();
    assert!(
        matches!(&again, CloudError::FailedPrecondition(m) if m.contains("web is UPDATING")),
        "{again}"
    );
    let bad = sim
        .start_update("tight", "ami 3", Duration::from_secs(60))
        .unwrap_err();
    assert!(bad.to_string().contains("image \"ami 3\" must be"), "{bad}");
    assert_eq!(
        sim.node_group("tight").unwrap().status,
        NodeGroupStatus::Active
    );
    assert!(matches!(
        sim.start_update("nope", "ami-3", Duration::ZERO),
        Err(CloudError::NodeGroupNotFound(_))
    ));
}

#[tokio::test]
async fn an_old_instance_scaled_down_during_an_update_is_not_replaced() {
    let sim = backend();
    sim.start_update("web", "ami-2", Duration::from_secs(90))
        .unwrap();
    // A scale-down takes the first old instance and one of the surge: 2 live, target 2.
    let listed_now = listed(&sim, "web");
    let gone = [listed_now[0].0.clone(), listed_now[2].0.clone()];
    sim.delete_instances("web", &gone).await.unwrap();
    assert_eq!(sim.target_size("web").unwrap(), 2);
    // Its turn comes at 30 s: nothing to terminate, nothing launched.
    sim.clock().advance(Duration::from_secs(31));
    assert_eq!(sim.target_size("web").unwrap(), 2);
    assert_eq!(sim.instances("web").unwrap().len(), 2);
    // At the end the surge of two comes off the target of two, but not below the min size of one.
    sim.clock().advance(Duration::from_secs(60));
    assert_eq!(sim.target_size("web").unwrap(), 1);
    assert_eq!(
        sim.node_group("web").unwrap().status,
        NodeGroupStatus::Active
    );
}

#[tokio::test]
async fn ids_are_reproducible_from_the_seed() {
    let a: Vec<_> = backend()
        .instances("web")
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    let b: Vec<_> = backend()
        .instances("web")
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(a, b);
}
