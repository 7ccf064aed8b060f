use super::*;
use crate::cloud::simulated_eks::leaving_keys::EventKind;

#[test]
fn label_keys() {
    for good in [
        "team",
        "eks.amazonaws.com/nodegroup",
        "nvidia.com/gpu",
        "a-b.c/D_e.f",
    ] {
        assert!(is_label_key(good), "{good}");
    }
    for bad in ["", "/x", "Example.com/x", "a/", "a b", "-a.com/x", "a/b/c"] {
        assert!(!is_label_key(bad), "{bad}");
    }
}

#[test]
fn built_in_scenario_loads() {
    let scenario = Scenario::built_in();
    let ids: Vec<_> = scenario
        .node_groups
        .iter()
        .map(|g| g.spec.id.as_str())
        .collect();
    assert_eq!(ids, ["general", "batch", "spot", "gpu"]);
    assert_eq!(scenario.fargate_profiles[0].name, "serverless");
    let spot = &scenario.node_groups[2].spec;
    assert!((spot.price_per_hour.unwrap() - 0.192 * DEFAULT_SPOT_PRICE_RATIO).abs() < 1e-9);
}

#[test]
fn design_example_loads_with_explicit_allocatable() {
    let scenario = Scenario::parse(
        r#"
cluster: demo
region: us-east-1
nodeGroups:
  - name: general
    instanceType: m5.large
    allocatable: {cpu: "16", memory: 64Gi, pods: 110}
    zones: [us-east-1a, us-east-1b]
    minSize: 0
    maxSize: 10
    desiredSize: 2
    capacityType: ON_DEMAND
    labels: {team: web}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
    provisioningDelay: 30s
fargateProfiles:
  - name: serverless
    selectors: [{namespace: serverless, labels: {compute: fargate}}]
"#,
    )
    .unwrap();
    let group = &scenario.node_groups[0];
    assert_eq!(group.provisioning_delay, Duration::from_secs(30));
    let status = group.spec.template.status.as_ref().unwrap();
    for map in [&status.capacity, &status.allocatable] {
        assert_eq!(map["cpu"].string.as_deref(), Some("16"));
        assert_eq!(map["memory"].string.as_deref(), Some("64Gi"));
        assert_eq!(map["pods"].string.as_deref(), Some("110"));
    }
}

#[test]
fn status_and_image_default_to_an_active_group_on_its_ami_types_image() {
    let sizes = "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n";
    let scenario = Scenario::parse(&format!("{GROUP}{sizes}")).unwrap();
    let spec = &scenario.node_groups[0].spec;
    assert_eq!(spec.status, NodeGroupStatus::Active);
    assert_eq!(spec.image.as_deref(), Some("ami-eks-amd64-1"));
    let labels = &spec.template.metadata.as_ref().unwrap().labels;
    assert_eq!(labels[NODE_GROUP_IMAGE_LABEL], "ami-eks-amd64-1");
    let arm = Scenario::parse(&format!("{GROUP}{sizes}").replace("m5.large", "m6g.large")).unwrap();
    assert_eq!(
        arm.node_groups[0].spec.image.as_deref(),
        Some("ami-eks-arm64-1")
    );
    // Each AMI type its own: by architecture, and GPU.
    let built_in = Scenario::built_in();
    let images: Vec<_> = (built_in.node_groups.iter())
        .map(|g| (g.spec.id.as_str(), g.spec.image.as_deref().unwrap()))
        .collect();
    assert_eq!(
        images,
        [
            ("general", "ami-eks-amd64-1"),
            ("batch", "ami-eks-amd64-1"),
            ("spot", "ami-eks-amd64-1"),
            ("gpu", "ami-eks-amd64-nvidia-1")
        ]
    );

    let given = format!("{GROUP}{sizes}    status: DEGRADED\n    image: ami-0c1f2e3d4b5a69788\n");
    let scenario = Scenario::parse(&given).unwrap();
    let spec = &scenario.node_groups[0].spec;
    assert_eq!(spec.status, NodeGroupStatus::Degraded);
    assert_eq!(spec.image.as_deref(), Some("ami-0c1f2e3d4b5a69788"));
    let labels = &spec.template.metadata.as_ref().unwrap().labels;
    assert_eq!(labels[NODE_GROUP_IMAGE_LABEL], "ami-0c1f2e3d4b5a69788");
}

#[test]
fn dra_drivers_give_the_template_its_slices() {
    let yaml = GROUP.replace("m5.large", "g5.12xlarge")
        + "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    draDrivers: [gpu.nvidia.com]\n";
    let scenario = Scenario::parse(&yaml).unwrap();
    let spec = &scenario.node_groups[0].spec;
    let name = template::name_of(&spec.template);
    assert_eq!(name, "template-node-for-g");
    let [slice] = spec.resource_slices.as_slice() else {
        panic!("one slice: {:?}", spec.resource_slices)
    };
    assert_eq!(&*slice.pool.name, name);
    assert_eq!(slice.scope, crate::model::NodeScope::Node(name.into()));
    assert_eq!(slice.devices.len(), 4);
    let product = crate::model::QualifiedName {
        domain: "gpu.nvidia.com".into(),
        id: "productName".into(),
    };
    let memory = crate::model::QualifiedName {
        domain: "gpu.nvidia.com".into(),
        id: "memory".into(),
    };
    for device in &slice.devices {
        let a10g = crate::model::AttrValue::Str("NVIDIA A10G".into());
        assert_eq!(device.attributes[&product], a10g);
        assert_eq!(device.capacity[&memory], "23028Mi".parse().unwrap());
    }
    let without = GROUP.replace("m5.large", "g5.12xlarge")
        + "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n";
    let scenario = Scenario::parse(&without).unwrap();
    assert!(scenario.node_groups[0].spec.resource_slices.is_empty());
}

#[test]
fn dra_drivers_that_cannot_be_derived_name_the_group_and_the_key() {
    let sizes = "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n";
    let unknown =
        format!("{GROUP}{sizes}    draDrivers: [gpu.amd.com]\n").replace("m5.large", "g5.xlarge");
    assert_eq!(
        error_of(&unknown),
        "scenario: node group \"g\": draDrivers: unknown DRA driver \"gpu.amd.com\": the known \
         drivers are gpu.nvidia.com"
    );
    let no_gpu = format!("{GROUP}{sizes}    draDrivers: [gpu.nvidia.com]\n");
    assert_eq!(
        error_of(&no_gpu),
        "scenario: node group \"g\": draDrivers: DRA driver \"gpu.nvidia.com\" needs GPUs, and \
         instance type \"m5.large\" has none"
    );
}

fn error_of(yaml: &str) -> String {
    Scenario::parse(yaml).unwrap_err().to_string()
}

const GROUP: &str = "cluster: c\nregion: us-east-1\nnodeGroups:\n  - name: g\n    instanceType: m5.large\n    zones: [us-east-1a]\n";

#[test]
fn bad_scenarios_name_the_problem() {
    let sizes = format!("{GROUP}    minSize: 3\n    maxSize: 2\n    desiredSize: 2\n");
    assert!(
        error_of(&sizes).contains("minSize (3)"),
        "{}",
        error_of(&sizes)
    );
    let unknown =
        format!("{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    colour: red\n");
    assert!(
        error_of(&unknown).contains("unknown field `colour`"),
        "{}",
        error_of(&unknown)
    );
    let effect = format!(
        "{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    taints: [{{key: a, effect: Sometimes}}]\n"
    );
    assert!(
        error_of(&effect).contains("effect \"Sometimes\""),
        "{}",
        error_of(&effect)
    );
    let zone = GROUP.replace("us-east-1a", "eu-west-1a")
        + "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n";
    assert!(
        error_of(&zone).contains("not in region"),
        "{}",
        error_of(&zone)
    );
    let typ = GROUP.replace("m5.large", "x9.huge")
        + "    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n";
    assert!(
        error_of(&typ).contains("give `allocatable`"),
        "{}",
        error_of(&typ)
    );
    let qty = format!(
        "{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    allocatable: {{memory: 1GB}}\n"
    );
    assert!(
        error_of(&qty).contains("invalid quantity \"1GB\""),
        "{}",
        error_of(&qty)
    );
    let status =
        format!("{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    status: PAUSED\n");
    assert_eq!(
        error_of(&status),
        "scenario: node group \"g\": status \"PAUSED\" must be one of ACTIVE, UPDATING, CREATING, \
         DELETING, CREATE_FAILED, DELETE_FAILED, DEGRADED"
    );
    let image = format!(
        "{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    image: \"ami 1\"\n"
    );
    assert!(
        error_of(&image).starts_with("scenario: node group \"g\": image \"ami 1\" must be"),
        "{}",
        error_of(&image)
    );
    let twice = format!(
        "{GROUP}    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n  - name: g\n    instanceType: m5.large\n    zones: [us-east-1a]\n    minSize: 0\n    maxSize: 1\n    desiredSize: 0\n"
    );
    assert!(
        error_of(&twice).contains("defined twice"),
        "{}",
        error_of(&twice)
    );
}

/// A scenario of a SPOT group `spot` (3 instances) and an ON_DEMAND group `od` (2), with `group_extra`
/// under `od` and `rest` at the top level.
fn leaving_scenario(group_extra: &str, rest: &str) -> String {
    format!(
        "cluster: c\nregion: us-east-1\nstart: 2026-03-02T09:00:00Z\nnodeGroups:\n  - name: spot\n    \
         instanceType: m5.large\n    capacityType: SPOT\n    zones: [us-east-1a]\n    minSize: 0\n    \
         maxSize: 5\n    desiredSize: 3\n  - name: od\n    instanceType: m5.large\n    zones: [us-east-1a]\n    \
         minSize: 0\n    maxSize: 5\n    desiredSize: 2\n{group_extra}{rest}"
    )
}

#[test]
fn capacity_rebalance_defaults_to_spot_and_node_repair_config_reads_eks_fields() {
    let scenario = Scenario::parse(&leaving_scenario(
        "    nodeRepairConfig:\n      enabled: true\n      maxUnhealthyNodeThresholdPercentage: 20\n      \
         maxParallelNodesRepairedCount: 2\n      nodeRepairConfigOverrides:\n        - \
         {nodeMonitoringCondition: AcceleratedHardwareReady, nodeUnhealthyReason: NvidiaXID79Error, \
         minRepairWaitTimeMins: 5, repairAction: Reboot}\n",
        "instanceEvents:\n  - {nodeGroup: spot, index: 2, kind: spotInterruption, at: \"2026-03-02T09:05:00Z\"}\n  \
         - {nodeGroup: od, index: 0, kind: scheduledEvent, at: \"2026-03-03T02:00:00Z\"}\n",
    ))
    .unwrap();
    let [spot, od] = [&scenario.node_groups[0].spec, &scenario.node_groups[1].spec];
    assert!(spot.capacity_rebalance && !od.capacity_rebalance);
    assert_eq!(spot.node_repair, None);
    let repair = od.node_repair.as_ref().unwrap();
    assert!(repair.enabled);
    assert_eq!(repair.max_unhealthy_node_threshold_percentage, Some(20));
    assert_eq!(repair.max_parallel_nodes_repaired_count, Some(2));
    assert_eq!(repair.overrides[0].repair_action, "Reboot");
    assert_eq!(repair.overrides[0].min_repair_wait_time_mins, 5);
    let start = humantime::parse_rfc3339("2026-03-02T09:00:00Z").unwrap();
    assert_eq!(scenario.start, Some(start));
    assert_eq!(scenario.instance_events.len(), 2);
    let first = &scenario.instance_events[0];
    assert_eq!((first.node_group.as_str(), first.index), ("spot", 2));
    assert_eq!(first.kind, EventKind::SpotInterruption);
    assert_eq!(first.at, start + Duration::from_secs(300));
    let off = leaving_scenario("", "").replace(
        "capacityType: SPOT\n",
        "capacityType: SPOT\n    capacityRebalance: false\n",
    );
    assert!(
        !Scenario::parse(&off).unwrap().node_groups[0]
            .spec
            .capacity_rebalance
    );
}

#[test]
fn bad_leaving_keys_name_the_key_and_the_event() {
    let group = |config: &str| leaving_scenario(&format!("    nodeRepairConfig: {config}\n"), "");
    let event = |line: &str| leaving_scenario("", &format!("instanceEvents:\n  - {line}\n"));
    let cases = [
        (
            leaving_scenario("    capacityRebalance: true\n", ""),
            "scenario: node group \"od\": capacityRebalance: applies to SPOT node groups only",
        ),
        (
            group(
                "{enabled: true, maxUnhealthyNodeThresholdCount: 2, maxUnhealthyNodeThresholdPercentage: 10}",
            ),
            "scenario: node group \"od\": nodeRepairConfig.maxUnhealthyNodeThresholdCount: cannot be set with \
             maxUnhealthyNodeThresholdPercentage",
        ),
        (
            group("{maxParallelNodesRepairedPercentage: 101}"),
            "nodeRepairConfig.maxParallelNodesRepairedPercentage: 101 must be between 1 and 100",
        ),
        (
            group("{maxParallelNodesRepairedCount: 0}"),
            "nodeRepairConfig.maxParallelNodesRepairedCount: 0 must be at least 1",
        ),
        (
            group("{maxUnhealthyNodeThresholdPercentage: 0}"),
            "nodeRepairConfig.maxUnhealthyNodeThresholdPercentage: 0 must be between 1 and 100",
        ),
        (
            group(
                "{nodeRepairConfigOverrides: [{nodeMonitoringCondition: DiskPressure, nodeUnhealthyReason: x, \
                 minRepairWaitTimeMins: 1, repairAction: Replace}]}",
            ),
            "nodeRepairConfig.nodeRepairConfigOverrides[0].nodeMonitoringCondition: \"DiskPressure\" must be \
             one of AcceleratedHardwareReady, ContainerRuntimeReady, KernelReady, NetworkingReady, \
             StorageReady, Ready",
        ),
        (
            group(
                "{nodeRepairConfigOverrides: [{nodeMonitoringCondition: Ready, nodeUnhealthyReason: x, \
                 minRepairWaitTimeMins: 1, repairAction: Reimage}]}",
            ),
            "nodeRepairConfigOverrides[0].repairAction: \"Reimage\" must be one of Replace, Reboot, NoAction",
        ),
        (
            group(
                "{nodeRepairConfigOverrides: [{nodeMonitoringCondition: Ready, nodeUnhealthyReason: x, \
                 minRepairWaitTimeMins: -1, repairAction: Replace}]}",
            ),
            "nodeRepairConfigOverrides[0].minRepairWaitTimeMins: -1 must not be negative",
        ),
        (group("{enabled: yes-please}"), "nodeRepairConfig"),
        (
            group("{enabled: true, colour: red}"),
            "unknown field `colour`",
        ),
        (
            event("{nodeGroup: nowhere, index: 0, kind: rebalance, at: \"2026-03-02T09:00:00Z\"}"),
            "scenario: instanceEvents[0]: nodeGroup: no node group \"nowhere\" in the scenario",
        ),
        (
            event("{nodeGroup: spot, index: 3, kind: rebalance, at: \"2026-03-02T09:00:00Z\"}"),
            "scenario: instanceEvents[0]: index: 3 is not one of the 3 instance(s) node group \"spot\" runs \
             from the start (its desiredSize 3, availableCapacity unlimited): 0 to 2",
        ),
        (
            leaving_scenario(
                "    availableCapacity: 1\n",
                "instanceEvents:\n  - {nodeGroup: od, index: 1, kind: stopped, at: \"2026-03-02T09:00:00Z\"}\n",
            ),
            "scenario: instanceEvents[0]: index: 1 is not one of the 1 instance(s) node group \"od\" runs from \
             the start (its desiredSize 2, availableCapacity 1): 0 to 0",
        ),
        (
            event("{nodeGroup: od, index: 0, kind: stopped, at: \"2026-03-02T08:59:59Z\"}"),
            "scenario: instanceEvents[0]: at: \"2026-03-02T08:59:59Z\" is before the scenario's start \
             2026-03-02T09:00:00Z",
        ),
        (
            event("{nodeGroup: od, index: 0, kind: stopped, at: \"2026-03-02T09:05:00\"}"),
            "scenario: instanceEvents[0]: at: \"2026-03-02T09:05:00\" is no RFC 3339 time with a zone",
        ),
        (
            event("{nodeGroup: od, index: 0, kind: stopped, at: \"2026-03-02T09:05:00Z\"}")
                .replace("start: 2026-03-02T09:00:00Z\n", ""),
            "scenario: start: must be given with instanceEvents: their times are read against it",
        ),
        (
            event("{nodeGroup: spot, index: 0, kind: meteor, at: \"2026-03-02T09:00:00Z\"}"),
            "scenario: instanceEvents[0]: kind: \"meteor\" must be one of spotInterruption, rebalance, \
             scheduledEvent, stopped",
        ),
        (
            event(
                "{nodeGroup: od, index: 0, kind: spotInterruption, at: \"2026-03-02T09:00:00Z\"}",
            ),
            "scenario: instanceEvents[0]: kind: spotInterruption comes for Spot instances only, and node group \
             \"od\" is not SPOT",
        ),
        (
            event("{nodeGroup: od, index: 0, kind: stopped, at: tomorrow}"),
            "scenario: instanceEvents[0]: at: \"tomorrow\" is no RFC 3339 time",
        ),
        (
            event("{nodeGroup: od, index: 0, kind: stopped}"),
            "missing field `at`",
        ),
        (
            leaving_scenario("", "").replace("start: 2026-03-02T09:00:00Z", "start: soon"),
            "scenario: start: \"soon\" is no RFC 3339 time",
        ),
    ];
    for (yaml, expected) in cases {
        let error = error_of(&yaml);
        assert!(error.contains(expected), "{error}\nexpected: {expected}");
    }
}
