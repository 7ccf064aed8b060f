//! The AWS backend against moto's server: discovery, every RPC, size changes reflected in the ASG and its
//! instances, templates of real instance types, options from tags and config, prices, and AWS call counts.

mod common;

use aws_sdk_eks::types::TaintEffect as EksTaint;
use common::moto::{self, Moto, NodeGroup};
use common::{Binary, Server, grpcurl};
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::aws::AwsBackend;
use ekscale::cloud::aws::AwsConfig;
use ekscale::proto::externalgrpc::*;
use ekscale::provider::ProviderMetrics;
use k8s_pb::api::core::v1::Node;
use prost::Message;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const OPTIONS_TAG: &str =
    "k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownutilizationthreshold";

struct Cluster {
    moto: Moto,
    sdk: aws_config::SdkConfig,
    asgs: HashMap<String, String>,
    backend: Arc<AwsBackend>,
    metrics: Arc<ProviderMetrics>,
    server: Server,
}

/// A cluster `prod` with web (m5.large), batch (arm64 spot, tainted, options by tag), gpu (at zero), a node
/// group whose ASG does not exist, and one the config excludes.
async fn cluster(config: &str) -> Cluster {
    let moto = Moto::start();
    let sdk = moto.sdk().await;
    let asgs = moto::create_cluster(
        &sdk,
        "prod",
        &[
            NodeGroup {
                name: "web",
                min: 1,
                max: 6,
                desired: 2,
                labels: &[("team", "web")],
                ..Default::default()
            },
            NodeGroup {
                name: "batch",
                instance_types: &["c6g.xlarge"],
                capacity_type: "SPOT",
                taints: &[("dedicated", "batch", EksTaint::NoSchedule)],
                tags: &[(OPTIONS_TAG, "0.3")],
                ..Default::default()
            },
            NodeGroup {
                name: "gpu",
                instance_types: &["g4dn.xlarge"],
                max: 2,
                desired: 0,
                ..Default::default()
            },
            NodeGroup {
                name: "orphan",
                with_asg: false,
                ..Default::default()
            },
            NodeGroup {
                name: "canary-web",
                ..Default::default()
            },
        ],
    )
    .await;
    moto::create_fargate_profile(
        &sdk,
        "prod",
        "serverless",
        "serverless",
        &[("compute", "fargate")],
    )
    .await;
    let config = AwsConfig::load(config, None, None).unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let backend = Arc::new(AwsBackend::new(config, &sdk, metrics.clone()));
    backend.refresh().await.unwrap();
    backend.watch_flux();
    let server = Server::serve(backend.clone(), None, None).await;
    Cluster {
        moto,
        sdk,
        asgs,
        backend,
        metrics,
        server,
    }
}

const CONFIG: &str = r#"
cluster: prod
refreshInterval: 0s
nodeGroups: {exclude: ["canary-*"]}
options:
  - {nodeGroup: web, options: {scaleDownUnneededTime: 5m}}
"#;

async fn nodes(
    client: &mut cloud_provider_client::CloudProviderClient<tonic::transport::Channel>,
    id: &str,
) -> Vec<Instance> {
    client
        .node_group_nodes(NodeGroupNodesRequest { id: id.into() })
        .await
        .unwrap()
        .into_inner()
        .instances
}

/// IncreaseSize of `id` by `delta`, which must be accepted.
async fn increase(
    client: &mut cloud_provider_client::CloudProviderClient<tonic::transport::Channel>,
    id: &str,
    delta: i32,
) {
    let request = NodeGroupIncreaseSizeRequest {
        id: id.into(),
        delta,
    };
    client.node_group_increase_size(request).await.unwrap();
}

fn real_ids(instances: &[Instance]) -> Vec<String> {
    let mut ids: Vec<String> = instances
        .iter()
        .filter(|i| !i.id.contains("i-placeholder-"))
        .map(|i| i.id.clone())
        .collect();
    ids.sort();
    ids
}

fn metric(text: &str, service: &str, operation: &str) -> u64 {
    moto::aws_calls(text)
        .get(&format!("{service}:{operation}"))
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn discovery_serves_active_groups_with_their_asgs() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    let groups = client
        .node_groups(NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let ids: Vec<_> = groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(
        ids,
        ["batch", "gpu", "web"],
        "orphan has no ASG, canary-web is excluded"
    );
    let web = groups.iter().find(|g| g.id == "web").unwrap();
    assert_eq!((web.min_size, web.max_size), (1, 6));
    assert!(web.debug.contains(&c.asgs["web"]), "{}", web.debug);

    let text = c.metrics.encode(&*c.backend);
    assert!(
        text.contains(
            r#"ekscale_provider_node_groups_skipped{reason="auto scaling group not found"} 1"#
        ),
        "{text}"
    );

    // Sizes and instances are the ASG's.
    let (desired, moto_ids) = moto::asg_state(&c.sdk, &c.asgs["web"]).await;
    let size = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
        .await
        .unwrap();
    assert_eq!(size.into_inner().target_size, desired);
    let instances = nodes(&mut client, "web").await;
    assert_eq!(real_ids(&instances), moto_ids);
    assert!(
        moto_ids
            .iter()
            .all(|id| id.starts_with("aws:///us-east-1") && id.contains("/i-")),
        "{moto_ids:?}"
    );
    assert!(
        instances
            .iter()
            .all(|i| i.status.as_ref().unwrap().instance_state()
                == instance_status::InstanceState::InstanceRunning)
    );

    // NodeGroupForNode: managed, unmanaged, Fargate.
    let managed = ExternalGrpcNode {
        provider_id: moto_ids[0].clone(),
        ..Default::default()
    };
    let group = client
        .node_group_for_node(NodeGroupForNodeRequest {
            node: Some(managed),
        })
        .await
        .unwrap();
    assert_eq!(group.into_inner().node_group.unwrap(), *web);
    for unmanaged in [
        "aws:///us-east-1a/i-0123456789abcdef0",
        "",
        "aws:///us-east-1a/0a1b2c3d-e4f5/fargate-ip-10-0-1-2.ec2.internal",
    ] {
        let node = ExternalGrpcNode {
            provider_id: unmanaged.into(),
            ..Default::default()
        };
        let group = client
            .node_group_for_node(NodeGroupForNodeRequest { node: Some(node) })
            .await
            .unwrap();
        assert_eq!(
            group.into_inner().node_group.unwrap_or_default().id,
            "",
            "{unmanaged}"
        );
    }

    // Each group's zones are its ASG's, for the companion to plan new nodes where the ASG launches them.
    use ekscale::proto::ekscale::ListZonesRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    let zones = NodeGroupsClient::new(c.server.channel().await)
        .list_zones(ListZonesRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let web_zones = zones.iter().find(|g| g.id == "web").unwrap();
    assert_eq!(web_zones.zones, moto::ZONES);
    assert_eq!(zones.len(), 3, "one entry per group served");
    drop(c.moto);
}

async fn template(
    client: &mut cloud_provider_client::CloudProviderClient<tonic::transport::Channel>,
    id: &str,
) -> Node {
    let response = client
        .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest { id: id.into() })
        .await
        .unwrap();
    let response = response.into_inner();
    assert_eq!(response.node_info, response.node_bytes);
    Node::decode(response.node_bytes.as_slice()).unwrap()
}

#[tokio::test]
async fn templates_come_from_describe_instance_types() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;

    let web = template(&mut client, "web").await;
    let status = web.status.as_ref().unwrap();
    assert_eq!(status.capacity["cpu"].string.as_deref(), Some("2"));
    assert_eq!(status.capacity["memory"].string.as_deref(), Some("8Gi"));
    assert_eq!(status.capacity["pods"].string.as_deref(), Some("29"));
    assert_eq!(
        status.allocatable["memory"].string.as_deref(),
        Some("7518Mi")
    );
    assert_eq!(status.allocatable["cpu"].string.as_deref(), Some("1930m"));
    let labels = &web.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["team"], "web");
    assert_eq!(labels["kubernetes.io/arch"], "amd64");
    assert_eq!(labels["topology.kubernetes.io/zone"], "us-east-1a");
    assert_eq!(labels["topology.kubernetes.io/region"], "us-east-1");
    assert_eq!(labels["eks.amazonaws.com/nodegroup"], "web");

    let batch = template(&mut client, "batch").await;
    let labels = &batch.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["kubernetes.io/arch"], "arm64");
    assert_eq!(labels["eks.amazonaws.com/capacityType"], "SPOT");
    assert_eq!(labels["node.kubernetes.io/instance-type"], "c6g.xlarge");
    let taint = &batch.spec.as_ref().unwrap().taints[0];
    assert_eq!(
        (taint.key.as_deref(), taint.effect.as_deref()),
        (Some("dedicated"), Some("NoSchedule"))
    );

    let gpu = template(&mut client, "gpu").await;
    assert_eq!(
        gpu.status.as_ref().unwrap().allocatable["nvidia.com/gpu"]
            .string
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        gpu.metadata.as_ref().unwrap().labels["k8s.amazonaws.com/accelerator"],
        "nvidia-tesla-t4"
    );
}

/// Each group's status and image, as DescribeNodeGroups serves them: id -> (status, image).
async fn described(c: &Cluster) -> HashMap<String, (String, String)> {
    use ekscale::proto::ekscale::DescribeNodeGroupsRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    let answer = NodeGroupsClient::new(c.server.channel().await)
        .describe_node_groups(DescribeNodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner();
    (answer.node_groups.into_iter())
        .map(|g| (g.id, (g.status, g.image)))
        .collect()
}

fn image_label(node: &Node) -> Option<&str> {
    let labels = &node.metadata.as_ref().unwrap().labels;
    labels
        .get("eks.amazonaws.com/nodegroup-image")
        .map(String::as_str)
}

/// A group's image is the AMI of the launch template version its Auto Scaling group launches (what EKS labels
/// its new nodes with), asked of EC2 once for a numbered version; when EC2 cannot say, the node group's
/// releaseVersion. moto never reports a node group UPDATING: tests/aws_errors.rs shows that one.
#[tokio::test]
async fn a_groups_image_is_the_ami_of_its_launch_template_version() {
    // Descriptions and `$Latest` versions read again on every refresh.
    const REREAD: &str = "cluster: prod\nrefreshInterval: 0s\ndescribeInterval: 0s\n\
                          nodeGroups: {exclude: [\"canary-*\"]}\n";
    let c = cluster(REREAD).await;
    let mut client = c.server.client().await;
    let first = described(&c).await;
    assert_eq!(first.len(), 3, "{first:?}");
    for (status, image) in first.values() {
        // The fixture's launch templates, launched at `$Latest`: version 1.
        assert_eq!(
            (status.as_str(), image.as_str()),
            ("ACTIVE", "ami-12c6146b")
        );
    }
    assert_eq!(
        image_label(&template(&mut client, "web").await),
        Some("ami-12c6146b")
    );

    // What an update of `web` starts with: a new launch template version on a new AMI, the Auto Scaling
    // group switched to it by number.
    let ec2 = aws_sdk_ec2::Client::new(&c.sdk);
    ec2.create_launch_template_version()
        .launch_template_name("lt-web")
        .launch_template_data(
            aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                .image_id("ami-0c1f2e3d4b5a69788")
                .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
                .build(),
        )
        .send()
        .await
        .unwrap();
    aws_sdk_autoscaling::Client::new(&c.sdk)
        .update_auto_scaling_group()
        .auto_scaling_group_name(&c.asgs["web"])
        .launch_template(
            aws_sdk_autoscaling::types::LaunchTemplateSpecification::builder()
                .launch_template_name("lt-web")
                .version("2")
                .build(),
        )
        .send()
        .await
        .unwrap();
    let calls = || {
        metric(
            &c.metrics.encode(&*c.backend),
            "ec2",
            "DescribeLaunchTemplateVersions",
        )
    };
    let before = calls();
    c.backend.refresh().await.unwrap();
    assert_eq!(described(&c).await["web"].1, "ami-0c1f2e3d4b5a69788");
    assert_eq!(
        image_label(&template(&mut client, "web").await),
        Some("ami-0c1f2e3d4b5a69788")
    );
    assert_eq!(
        calls() - before,
        3,
        "web's version 2, batch's and gpu's $Latest"
    );
    let before = calls();
    c.backend.refresh().await.unwrap();
    assert_eq!(
        calls() - before,
        2,
        "a numbered version never changes: only the two $Latest are asked again"
    );

    // batch's launch template is gone: EC2 cannot say its AMI, the release version stands in, and the
    // template carries no image label (a release version is not the AMI id EKS labels nodes with).
    ec2.delete_launch_template()
        .launch_template_name("lt-batch")
        .send()
        .await
        .unwrap();
    c.backend.refresh().await.unwrap();
    let release = aws_sdk_eks::Client::new(&c.sdk)
        .describe_nodegroup()
        .cluster_name("prod")
        .nodegroup_name("batch")
        .send()
        .await
        .unwrap()
        .nodegroup()
        .unwrap()
        .release_version()
        .unwrap()
        .to_string();
    let now = described(&c).await;
    assert_eq!(now["batch"], ("ACTIVE".to_string(), release));
    assert_eq!(image_label(&template(&mut client, "batch").await), None);
    assert_eq!(
        now["web"].1, "ami-0c1f2e3d4b5a69788",
        "the others unchanged"
    );
    let text = c.metrics.encode(&*c.backend);
    assert!(
        text.contains(r#"operation="DescribeLaunchTemplateVersions",outcome="error"} 1"#),
        "{text}"
    );
}

#[tokio::test]
async fn size_changes_reach_the_auto_scaling_group() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    let asg = c.asgs["web"].clone();

    increase(&mut client, "web", 2).await;
    let size = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
        .await
        .unwrap();
    assert_eq!(size.into_inner().target_size, 4, "visible at once");
    let (desired, moto_ids) = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!((desired, moto_ids.len()), (4, 4));
    // Until the next refresh, what AWS has not reported yet shows as placeholders.
    assert_eq!(nodes(&mut client, "web").await.len(), 4);
    client.refresh(RefreshRequest {}).await.unwrap();
    assert_eq!(real_ids(&nodes(&mut client, "web").await), moto_ids);

    // Over max: refused, nothing changes in AWS.
    let status = client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: "web".into(),
            delta: 3,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(moto::asg_state(&c.sdk, &asg).await.0, 4);

    // Delete one: terminated in AWS with the desired capacity decremented.
    let victim = moto_ids[0].clone();
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![ExternalGrpcNode {
            provider_id: victim.clone(),
            ..Default::default()
        }],
    };
    client.node_group_delete_nodes(request).await.unwrap();
    let size = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
        .await
        .unwrap();
    assert_eq!(size.into_inner().target_size, 3);
    let (desired, after) = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!(desired, 3);
    assert!(!after.contains(&victim), "{victim} still in {after:?}");

    // Decrease below the instances that exist: refused, nothing changes.
    client.refresh(RefreshRequest {}).await.unwrap();
    let decrease = NodeGroupDecreaseTargetSizeRequest {
        id: "web".into(),
        delta: -1,
    };
    let status = client
        .node_group_decrease_target_size(decrease)
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(moto::asg_state(&c.sdk, &asg).await.0, 3);

    // A node of another group, or unknown: nothing is terminated.
    let batch = real_ids(&nodes(&mut client, "batch").await)[0].clone();
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![
            ExternalGrpcNode {
                provider_id: after[1].clone(),
                ..Default::default()
            },
            ExternalGrpcNode {
                provider_id: batch,
                ..Default::default()
            },
        ],
    };
    let status = client.node_group_delete_nodes(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(moto::asg_state(&c.sdk, &asg).await, (3, after));
}

/// `web` with a provisioning time of two seconds, so that an all-or-nothing increase is set back within the test.
const ATOMIC_CONFIG: &str = r#"
cluster: prod
refreshInterval: 0s
nodeGroups: {exclude: ["canary-*"]}
options:
  - {nodeGroup: web, options: {maxNodeProvisionTime: 2s}}
"#;

fn atomic_ended(text: &str, outcome: &str) -> bool {
    text.contains(&format!(
        "ekscale_provider_atomic_increases_total{{outcome=\"{outcome}\"}} 1"
    ))
}

/// `ekscale.v1.NodeGroups/AtomicIncreaseSize` on AWS: the ASG's desired capacity raised by N and kept once
/// all N are in service; when they are not all in service within the group's provisioning time, the desired
/// capacity set back and what did launch for it terminated. Meanwhile the group takes no other change.
#[tokio::test]
async fn an_all_or_nothing_increase_is_kept_whole_or_set_back() {
    use ekscale::proto::ekscale::AtomicIncreaseSizeRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;

    let c = cluster(ATOMIC_CONFIG).await;
    let mut groups = NodeGroupsClient::new(c.server.channel().await);
    let mut client = c.server.client().await;
    let asg = c.asgs["web"].clone();
    let mut checks = c.backend.atomic_checks_done();
    let atomic = |delta| AtomicIncreaseSizeRequest {
        id: "web".into(),
        delta,
    };

    // Whole: moto launches both at once; the next read of the group ends the increase.
    groups.atomic_increase_size(atomic(2)).await.unwrap();
    let (desired, whole) = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!((desired, whole.len()), (4, 4));
    let refused = client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: "web".into(),
            delta: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused
            .message()
            .contains("an all-or-nothing increase of 2 is in flight"),
        "{refused:?}"
    );
    client.refresh(RefreshRequest {}).await.unwrap();
    assert!(atomic_ended(&c.metrics.encode(c.backend.as_ref()), "whole"));
    assert_eq!(moto::asg_state(&c.sdk, &asg).await, (4, whole.clone()));

    // Over what the group may take: refused before AWS is asked.
    let status = groups.atomic_increase_size(atomic(3)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(moto::asg_state(&c.sdk, &asg).await.0, 4);

    // Set back: of two asked for, the ASG gives one (the other launch never comes: taken away here).
    groups.atomic_increase_size(atomic(2)).await.unwrap();
    let (desired, ids) = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!(desired, 6);
    let added: Vec<&String> = ids.iter().filter(|id| !whole.contains(id)).collect();
    assert_eq!(added.len(), 2);
    aws_sdk_autoscaling::Client::new(&c.sdk)
        .terminate_instance_in_auto_scaling_group()
        .instance_id(added[0].rsplit('/').next().unwrap())
        .should_decrement_desired_capacity(true)
        .send()
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !atomic_ended(&c.metrics.encode(c.backend.as_ref()), "set_back") {
            checks.changed().await.unwrap();
        }
    })
    .await
    .expect("set back when its provisioning time ends");
    assert_eq!(
        moto::asg_state(&c.sdk, &asg).await,
        (4, whole),
        "the instance launched for it terminated, the desired capacity what it was"
    );
    // The group takes changes again.
    increase(&mut client, "web", 1).await;
    assert_eq!(moto::asg_state(&c.sdk, &asg).await.0, 5);
}

/// A node group tagged `ekscale.io/dra-drivers` publishes, on its template node, the slices NVIDIA's driver
/// would for the GPUs DescribeInstanceTypes gives its instance type; a tag that cannot be followed (a driver
/// we do not know, an instance type without GPUs) leaves the group served, without slices.
#[tokio::test]
async fn dra_drivers_tags_give_templates_their_resource_slices() {
    use ekscale::autoscaler::{ProviderClient, ProviderConfig};
    use ekscale::model::{AttrValue, NodeScope, QualifiedName, Quantity};
    const DRA_TAG: &str = "ekscale.io/dra-drivers";
    let moto = Moto::start();
    let sdk = moto.sdk().await;
    let group = |name, instance_types, tags| NodeGroup {
        name,
        instance_types,
        desired: 0,
        tags,
        ..Default::default()
    };
    moto::create_cluster(
        &sdk,
        "prod",
        &[
            group("a10g", &["g5.12xlarge"], &[(DRA_TAG, "gpu.nvidia.com")]),
            group("typo", &["g5.xlarge"], &[(DRA_TAG, "gpu.nvidia.co")]),
            group("cpu", &["m5.large"], &[(DRA_TAG, "gpu.nvidia.com")]),
            group("plain", &["g4dn.xlarge"], &[]),
        ],
    )
    .await;
    let config = AwsConfig::load("cluster: prod\nrefreshInterval: 0s\n", None, None).unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let backend = Arc::new(AwsBackend::new(config, &sdk, metrics.clone()));
    backend.refresh().await.unwrap();
    let server = Server::serve(backend.clone(), None, None).await;
    let client = ProviderClient::new(&ProviderConfig::plaintext(server.addr.to_string())).unwrap();
    client.refresh().await.unwrap();
    let served: Vec<String> = (client.node_groups().await.unwrap().iter())
        .map(|g| g.id.clone())
        .collect();
    assert_eq!(served.len(), 4, "every group served: {served:?}");

    let template = client.template("a10g").await.unwrap().unwrap();
    let node = template.metadata.as_ref().unwrap().name.clone().unwrap();
    let [slice] = client
        .template_slices("a10g")
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(&*slice.driver, "gpu.nvidia.com");
    assert_eq!(slice.scope, NodeScope::Node(node.as_str().into()));
    assert_eq!(&*slice.pool.name, node);
    let nvidia = |id: &str| QualifiedName {
        domain: "gpu.nvidia.com".into(),
        id: id.into(),
    };
    let names: Vec<&str> = slice.devices.iter().map(|d| &*d.name).collect();
    assert_eq!(names, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
    let memory: Quantity = "23028Mi".parse().unwrap();
    for device in &slice.devices {
        let product = &device.attributes[&nvidia("productName")];
        assert_eq!(product, &AttrValue::Str("NVIDIA A10G".into()));
        assert_eq!(device.capacity[&nvidia("memory")], memory);
    }
    for id in ["typo", "cpu", "plain"] {
        assert!(client.template_slices(id).await.unwrap().is_empty(), "{id}");
    }
    drop(moto);
}

#[tokio::test]
async fn options_from_tags_and_config_and_prices() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    let options = |id: &str| NodeGroupAutoscalingOptionsRequest {
        id: id.into(),
        defaults: None,
    };
    let batch = client
        .node_group_get_options(options("batch"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        batch
            .node_group_autoscaling_options
            .unwrap()
            .scale_down_utilization_threshold,
        0.3,
        "from the tag"
    );
    let web = client
        .node_group_get_options(options("web"))
        .await
        .unwrap()
        .into_inner();
    let web = web.node_group_autoscaling_options.unwrap();
    assert_eq!(
        web.scale_down_unneeded_duration.unwrap().seconds,
        300,
        "from the config"
    );
    assert_eq!(
        web.scale_down_unneeded_time.unwrap().duration,
        300_000_000_000
    );
    let gpu = client
        .node_group_get_options(options("gpu"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(gpu.node_group_autoscaling_options, None);

    let hour = |seconds| Some(prost_types::Timestamp { seconds, nanos: 0 });
    let price = |node: ExternalGrpcNode| PricingNodePriceRequest {
        node: Some(node),
        start_timestamp: hour(0),
        end_timestamp: hour(3600),
        ..Default::default()
    };
    let web_node = real_ids(&nodes(&mut client, "web").await)[0].clone();
    let web_price = client
        .pricing_node_price(price(ExternalGrpcNode {
            provider_id: web_node,
            ..Default::default()
        }))
        .await;
    assert!((web_price.unwrap().into_inner().price - 0.096).abs() < 1e-9);
    let batch_node = real_ids(&nodes(&mut client, "batch").await)[0].clone();
    let batch_price = client
        .pricing_node_price(price(ExternalGrpcNode {
            provider_id: batch_node,
            ..Default::default()
        }))
        .await;
    assert!(
        (batch_price.unwrap().into_inner().price - 0.136 * 0.35).abs() < 1e-9,
        "spot at the default ratio"
    );
}

#[tokio::test]
async fn refresh_makes_a_constant_handful_of_calls() {
    let c = cluster(CONFIG).await;
    let before = c.metrics.encode(&*c.backend);
    c.backend.refresh().await.unwrap();
    let after = c.metrics.encode(&*c.backend);
    let delta = |service, operation| {
        metric(&after, service, operation) - metric(&before, service, operation)
    };
    assert_eq!(delta("eks", "ListNodegroups"), 1);
    assert_eq!(
        delta("eks", "DescribeNodegroup"),
        0,
        "descriptions are re-read every describeInterval only"
    );
    // One batch by name, one by tag for the orphan whose ASG does not exist.
    assert_eq!(delta("autoscaling", "DescribeAutoScalingGroups"), 2);
    assert_eq!(
        delta("ec2", "DescribeInstanceTypes"),
        0,
        "instance types are cached for the process"
    );
    assert_eq!(
        delta("ec2", "DescribeLaunchTemplateVersions"),
        0,
        "launch template versions are re-read every describeInterval only"
    );
    assert_eq!(delta("eks", "ListFargateProfiles"), 1);
    assert_eq!(
        delta("eks", "DescribeFargateProfile"),
        0,
        "profiles are re-read every describeInterval only"
    );

    // With the default interval, a Refresh right after another makes no call at all.
    let config = AwsConfig::load("cluster: prod\n", None, None).unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let backend = AwsBackend::new(config, &c.sdk, metrics.clone());
    backend.refresh().await.unwrap();
    let first = metrics.encode(&backend);
    backend.refresh().await.unwrap();
    assert_eq!(
        metrics
            .encode(&backend)
            .lines()
            .filter(|l| l.contains("aws_requests_total"))
            .collect::<Vec<_>>(),
        first
            .lines()
            .filter(|l| l.contains("aws_requests_total"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_changes_against_moto_end_consistent() {
    let c = cluster(CONFIG).await;
    let client = c.server.client().await;
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            client
                .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                    id: "web".into(),
                    delta: 1,
                })
                .await
                .map(drop)
        }));
    }
    let first = real_ids(&nodes(&mut client.clone(), "web").await);
    for id in first {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            let nodes = vec![ExternalGrpcNode {
                provider_id: id,
                ..Default::default()
            }];
            client
                .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
                    id: "web".into(),
                    nodes,
                })
                .await
                .map(drop)
        }));
    }
    for task in tasks {
        if let Err(status) = task.await.unwrap() {
            assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
        }
    }
    let mut client = client.clone();
    client.refresh(RefreshRequest {}).await.unwrap();
    let (desired, ids) = moto::asg_state(&c.sdk, &c.asgs["web"]).await;
    let target = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
        .await
        .unwrap();
    assert_eq!(target.into_inner().target_size, desired);
    assert_eq!(ids.len() as i32, desired);
    assert!(desired <= 6);
    assert_eq!(real_ids(&nodes(&mut client, "web").await), ids);
}

/// moto with cluster `prod` and one node group `web`, for the real binary to find through the SDK's
/// environment; and a runtime for the test's own calls.
fn moto_with_web() -> (Moto, tokio::runtime::Runtime) {
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let sdk = moto.sdk().await;
        moto::create_cluster(
            &sdk,
            "prod",
            &[NodeGroup {
                name: "web",
                ..Default::default()
            }],
        )
        .await;
    });
    (moto, runtime)
}

/// The SDK's environment for a binary reaching `moto` with these credentials.
fn sdk_env<'a>(moto: &'a Moto, key_id: &'a str, secret: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", key_id),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("AWS_CONFIG_FILE", "/dev/null"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null"),
    ]
}

/// The real binary finds AWS the way the SDK does: here `AWS_ENDPOINT_URL` and static credentials.
#[test]
fn the_binary_serves_a_cluster_found_through_the_sdk_environment() {
    let (moto, _runtime) = moto_with_web();
    let env = sdk_env(&moto, "test", "test");
    let provider = Binary::start_with_env(&["--backend", "aws", "--cluster", "prod"], &env);
    assert!(
        provider
            .log
            .iter()
            .any(|l| l.contains("serving EKS managed node groups") && l.contains("node_groups=1")),
        "{:?}",
        provider.log
    );
    let output = std::process::Command::new(grpcurl())
        .args([
            "-plaintext",
            &provider.grpc.to_string(),
            "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroups",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("\"web\""),
        "{text}"
    );

    // A cluster that does not exist: the provider refuses to start and says which.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ekscale-provider"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--backend",
            "aws",
            "--cluster",
            "nope",
        ])
        .envs(env)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("EKS cluster nope"), "{message}");
}

/// deploy/iam-policy.json allows every AWS operation the backend was seen calling, and nothing more.
#[tokio::test]
async fn the_iam_policy_allows_exactly_what_the_backend_calls() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    // Exercise every path: refresh, scale up, delete a node, a placeholder's scaling activities.
    increase(&mut client, "web", 1).await;
    let victim = real_ids(&nodes(&mut client, "web").await)[0].clone();
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![ExternalGrpcNode {
            provider_id: victim,
            ..Default::default()
        }],
    };
    client.node_group_delete_nodes(request).await.unwrap();
    c.backend.refresh().await.unwrap();
    let text = c.metrics.encode(&*c.backend);
    let called: Vec<String> = moto::aws_calls(&text).into_keys().collect();

    let policy_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/iam-policy.json");
    let policy: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(policy_path).unwrap()).unwrap();
    let mut allowed: Vec<String> = policy["Statement"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|statement| {
            statement["Action"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
        })
        // The interruption queue's calls: tests/interruption.rs checks those.
        .filter(|a| !a.starts_with("sqs:"))
        .collect();
    allowed.sort();
    // DescribeScalingActivities runs only for groups short of capacity, which moto never leaves a group;
    // DescribeCapacityReservations only for groups whose launch template targets a reservation, which this
    // cluster has none of (a_capacity_block_groups_launch_template_targets_its_block makes that call).
    let mut expected = called.clone();
    expected.push("autoscaling:DescribeScalingActivities".into());
    expected.push("ec2:DescribeCapacityReservations".into());
    expected.sort();
    expected.dedup();
    assert_eq!(allowed, expected, "called: {called:?}");
}

/// Fargate on AWS: profiles read from EKS, pods matched, sized and priced as on the sim.
#[tokio::test]
async fn fargate_profiles_come_from_eks() {
    use ekscale::proto::ekscale::fargate_client::FargateClient;
    use ekscale::proto::ekscale::{ListProfilesRequest, MatchPodRequest};
    let c = cluster(CONFIG).await;
    let mut fargate = FargateClient::new(c.server.channel().await);
    let profiles = fargate
        .list_profiles(ListProfilesRequest {})
        .await
        .unwrap()
        .into_inner()
        .profiles;
    assert_eq!(profiles.len(), 1);
    assert_eq!(
        (profiles[0].name.as_str(), profiles[0].status.as_str()),
        ("serverless", "ACTIVE")
    );
    assert_eq!(profiles[0].selectors[0].labels["compute"], "fargate");
    assert_eq!(profiles[0].subnets, ["subnet-12345678"]);

    let json = r#"{"metadata":{"name":"api","namespace":"serverless","labels":{"compute":"fargate"}},
                   "spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1","memory":"8Gi"}}}]}}"#;
    let answer = fargate
        .match_pod(MatchPodRequest {
            pod_bytes: vec![],
            pod_json: json.into(),
        })
        .await
        .unwrap();
    let answer = answer.into_inner();
    assert_eq!(
        (
            answer.profile.as_str(),
            answer.capacity_provisioned.as_str()
        ),
        ("serverless", "2vCPU 9GB")
    );

    // PricingPodPrice, old and new generations, for a pod the profile takes.
    // No requests: the smallest Fargate size.
    let pod = common::pod("serverless", &[("compute", "fargate")], "0", "0");
    let channel = c.server.channel().await;
    let ts = |seconds| Some(prost_types::Timestamp { seconds, nanos: 0 });
    let time = |seconds| {
        Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Time {
            seconds: Some(seconds),
            nanos: None,
        })
    };
    let smallest = 0.25 * 0.04048 + 0.5 * 0.004445;
    let request = common::wire::new::PricingPodPriceRequest {
        pod_bytes: pod.encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let price: PricingPodPriceResponse = common::wire::call(&channel, "PricingPodPrice", request)
        .await
        .unwrap();
    assert!((price.price - smallest).abs() < 1e-12, "{}", price.price);
    let request = common::wire::old::PricingPodPriceRequest {
        pod: Some(pod),
        start_time: time(0),
        end_time: time(3600),
    };
    let price: PricingPodPriceResponse = common::wire::call(&channel, "PricingPodPrice", request)
        .await
        .unwrap();
    assert!((price.price - smallest).abs() < 1e-12, "{}", price.price);
}

/// At the default log level the provider's log carries no AWS credentials and nothing of the pods it is
/// shown (images, environment, annotations), whatever the calls, valid or not.
#[test]
fn the_default_log_holds_no_credentials_and_no_pod_specs() {
    use ekscale::proto::ekscale::MatchPodRequest;
    use ekscale::proto::ekscale::fargate_client::FargateClient;
    use k8s_pb::api::core::v1::EnvVar;
    const KEY_ID: &str = "AKIAEKSCALELOGTEST01";
    const SECRET: &str = "ekscale/Secret+Access+Key/NeverLogged";
    const TOKEN: &str = "ekscaleSessionTokenNeverLogged";
    const IMAGE: &str = "registry.example/private-image:v7";
    const PASSWORD: &str = "hunter2-in-an-env-var";
    const ANNOTATION: &str = "internal-only-annotation-value";

    let (moto, runtime) = moto_with_web();
    let mut env = sdk_env(&moto, KEY_ID, SECRET);
    env.push(("AWS_SESSION_TOKEN", TOKEN));
    let provider = Binary::start_with_env(&["--backend", "aws", "--cluster", "prod"], &env);
    runtime.block_on(async {
        let channel = provider.channel().await;
        let mut client = cloud_provider_client::CloudProviderClient::new(channel.clone());
        let mut pod = common::pod("default", &[("app", "web")], "500m", "1Gi");
        let spec = pod.spec.as_mut().unwrap();
        spec.containers[0].image = Some(IMAGE.into());
        spec.containers[0].env = vec![EnvVar {
            name: Some("PASSWORD".into()),
            value: Some(PASSWORD.into()),
            ..Default::default()
        }];
        let meta = pod.metadata.as_mut().unwrap();
        meta.annotations = [("example.com/note".to_string(), ANNOTATION.to_string())].into();
        let bytes = pod.encode_to_vec();
        let now = prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 0,
        };
        // Valid and invalid pricing, a Fargate match, size changes that work and ones that are refused.
        let _ = client
            .pricing_pod_price(PricingPodPriceRequest {
                pod_bytes: bytes.clone(),
                start_timestamp: Some(now),
                end_timestamp: Some(prost_types::Timestamp {
                    seconds: now.seconds + 3600,
                    nanos: 0,
                }),
                ..Default::default()
            })
            .await;
        let mut broken = bytes.clone();
        broken.truncate(bytes.len() / 2);
        let refused = client
            .pricing_pod_price(PricingPodPriceRequest {
                pod_bytes: broken,
                start_timestamp: Some(now),
                end_timestamp: Some(now),
                ..Default::default()
            })
            .await;
        assert!(refused.is_err());
        FargateClient::new(channel)
            .match_pod(MatchPodRequest {
                pod_bytes: bytes,
                ..Default::default()
            })
            .await
            .unwrap();
        client
            .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                id: "web".into(),
                delta: 1,
            })
            .await
            .unwrap();
        assert!(
            client
                .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                    id: "web".into(),
                    delta: 100,
                })
                .await
                .is_err()
        );
        client.refresh(RefreshRequest {}).await.unwrap();
    });
    let log = provider.stop().join("\n");
    assert!(
        log.contains("increased target size"),
        "the log was read: {log}"
    );
    for secret in [KEY_ID, SECRET, TOKEN, IMAGE, PASSWORD, ANNOTATION] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}

/// Calls Refresh until the backend has read AWS again since the call (its cache younger than the wait):
/// waits on the refresh itself, which `refreshInterval` lets through.
async fn refreshed(c: &Cluster) {
    let mut client = c.server.client().await;
    let start = Instant::now();
    for _ in 0..200 {
        client.refresh(RefreshRequest {}).await.unwrap();
        if c.backend.cache_age().is_some_and(|a| a < start.elapsed()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no refresh within 10 s");
}

/// The group's instances as nodes of a view, placeholders left out (they never register).
async fn view_of(c: &Cluster) -> Arc<ekscale::autoscaler::ClusterView> {
    let nodes: Vec<serde_json::Value> = common::cluster::nodes_of(c.server.addr, &["web"])
        .await
        .into_iter()
        .filter(|n| {
            !n["spec"]["providerID"]
                .as_str()
                .unwrap()
                .contains("i-placeholder-")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("view.json");
    std::fs::write(&path, common::cluster::list(nodes).to_string()).unwrap();
    use ekscale::autoscaler::ClusterSource;
    ekscale::autoscaler::Snapshot::read(&path)
        .unwrap()
        .view()
        .await
        .unwrap()
}

/// AWS placeholder ids come back after every IncreaseSize (`i-placeholder-<asg>-0` again): the companion's
/// provision timer must start again for the new one, not resume the old one's and delete a fresh
/// placeholder as "unregistered for too long" (which lowers the ASG's desired capacity).
#[tokio::test]
async fn a_placeholder_id_seen_again_after_a_while_is_a_new_instance() {
    use ekscale::autoscaler::RunOnce;
    use ekscale::autoscaler::Settings;
    use ekscale::autoscaler::{ProviderClient, ProviderConfig};
    // Placeholders stay until the next full refresh, at most 5 s away.
    let c = cluster(&CONFIG.replace("refreshInterval: 0s", "refreshInterval: 5s")).await;
    let mut client = c.server.client().await;
    let settings = Settings {
        act: true,
        remove_unregistered: true,
        scale_down: ekscale::autoscaler::ScaleDownSettings {
            enabled: false,
            ..Default::default()
        },
        ..Settings::default()
    };
    let companion =
        ProviderClient::new(&ProviderConfig::plaintext(c.server.addr.to_string())).unwrap();
    let mut once = RunOnce::new(companion, settings);
    let t0 = std::time::SystemTime::now();
    let increase = NodeGroupIncreaseSizeRequest {
        id: "web".into(),
        delta: 1,
    };

    refreshed(&c).await;
    client
        .node_group_increase_size(increase.clone())
        .await
        .unwrap();
    let status = once.run(&*view_of(&c).await, t0).await.unwrap();
    let web = |s: &ekscale::autoscaler::status::Status| {
        s.node_groups
            .iter()
            .find(|g| g.id == "web")
            .unwrap()
            .clone()
    };
    assert_eq!(
        (web(&status).registered, web(&status).upcoming),
        (2, 1),
        "the placeholder is seen"
    );

    // The instance launched: the placeholder is gone from the next refresh on.
    refreshed(&c).await;
    let status = once
        .run(&*view_of(&c).await, t0 + Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!((web(&status).registered, web(&status).upcoming), (3, 0));

    // Twenty minutes on (past --max-node-provision-time, 15 m), another scale-up: placeholder 0 again.
    refreshed(&c).await;
    let view = view_of(&c).await;
    client.node_group_increase_size(increase).await.unwrap();
    let status = once
        .run(&view, t0 + Duration::from_secs(20 * 60))
        .await
        .unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    assert_eq!(web(&status).skipped, None, "not backed off");
    assert_eq!(web(&status).upcoming, 1);
    let (desired, _) = moto::asg_state(&c.sdk, &c.asgs["web"]).await;
    assert_eq!(desired, 4, "the fresh placeholder was not cancelled");
}

/// DeleteNodes never makes the ASG pick an instance to terminate: an instance terminated outside ekscale
/// since the provider's last read is refused, not taken for a placeholder; and a placeholder whose instance
/// has launched since is not cancelled (lowering the desired capacity would terminate a real instance).
#[tokio::test]
async fn an_instance_gone_or_launched_since_the_read_is_never_deleted_by_mistake() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    let asg = c.asgs["web"].clone();
    let autoscaling = aws_sdk_autoscaling::Client::new(&c.sdk);

    // Terminated outside ekscale, replaced by the ASG; the provider reads the replacement.
    let (_, before) = moto::asg_state(&c.sdk, &asg).await;
    let gone = before[0].clone();
    autoscaling
        .terminate_instance_in_auto_scaling_group()
        .instance_id(gone.rsplit('/').next().unwrap())
        .should_decrement_desired_capacity(false)
        .send()
        .await
        .unwrap();
    c.backend.refresh().await.unwrap();
    let (desired, instances) = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!((desired, instances.len()), (2, 2));
    assert!(!instances.contains(&gone));
    // The caller still holds the node it read before: the backend is asked for it.
    let error = c
        .backend
        .delete_instances("web", std::slice::from_ref(&gone))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ekscale::cloud::CloudError::NotFound(m) if m.contains(&gone)),
        "{error:?}"
    );
    assert_eq!(
        moto::asg_state(&c.sdk, &asg).await,
        (2, instances.clone()),
        "nothing terminated, desired capacity unchanged"
    );

    // A scale-up: moto launches at once, the provider shows a placeholder until its next read.
    increase(&mut client, "web", 1).await;
    let listed = nodes(&mut client, "web").await;
    let placeholder = listed
        .iter()
        .find(|i| i.id.contains("i-placeholder-"))
        .expect("a placeholder until the next read")
        .id
        .clone();
    let launched = moto::asg_state(&c.sdk, &asg).await;
    assert_eq!((launched.0, launched.1.len()), (3, 3));
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![ExternalGrpcNode {
            provider_id: placeholder,
            ..Default::default()
        }],
    };
    let status = client.node_group_delete_nodes(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    assert_eq!(
        moto::asg_state(&c.sdk, &asg).await,
        launched,
        "the launched instance stays, desired capacity unchanged"
    );
    // The re-read shows the instance in place of the placeholder.
    assert_eq!(real_ids(&nodes(&mut client, "web").await), launched.1);
}

/// After an IncreaseSize, the launched instance has its node group within seconds, without a Refresh: the
/// group is in flux (desired capacity above its instances), so it is re-read every `fluxInterval` (10 s)
/// with one DescribeAutoScalingGroups until it settles, and no more calls are made once it has.
#[tokio::test]
async fn a_launched_instance_is_visible_within_seconds_without_a_refresh() {
    let c = cluster(CONFIG).await;
    let mut client = c.server.client().await;
    let asg = c.asgs["web"].clone();
    let (_, before) = moto::asg_state(&c.sdk, &asg).await;
    // Re-reads of groups in flux, counted from before any is in flux.
    let mut settles = c.backend.settles();
    increase(&mut client, "web", 1).await;
    let (_, after) = moto::asg_state(&c.sdk, &asg).await;
    let launched = after.iter().find(|i| !before.contains(i)).unwrap().clone();
    let describes = || {
        metric(
            &c.metrics.encode(&*c.backend),
            "autoscaling",
            "DescribeAutoScalingGroups",
        )
    };
    let at_increase = describes();
    let group_of = async |client: &mut cloud_provider_client::CloudProviderClient<_>| {
        let request = NodeGroupForNodeRequest {
            node: Some(ExternalGrpcNode {
                provider_id: launched.clone(),
                ..Default::default()
            }),
        };
        let answer = client.node_group_for_node(request).await.unwrap();
        answer
            .into_inner()
            .node_group
            .map(|g| g.id)
            .unwrap_or_default()
    };
    assert_eq!(
        group_of(&mut client).await,
        "",
        "not known before the re-read"
    );
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(15), settles.changed())
        .await
        .expect("the group in flux is re-read within 15 s")
        .unwrap();
    assert_eq!(group_of(&mut client).await, "web");
    eprintln!("{launched} visible after {:?}", started.elapsed());
    assert_eq!(real_ids(&nodes(&mut client, "web").await), after);
    assert_eq!(
        nodes(&mut client, "web").await.len(),
        3,
        "no placeholder left"
    );
    assert_eq!(describes(), at_increase + 1, "one batched re-read");
    // Settled: the next tick reads nothing.
    assert_eq!(c.backend.settle().await.unwrap(), 0);
    assert_eq!(describes(), at_increase + 1);
}

/// A Capacity Block group through moto: EKS's capacity type CAPACITY_BLOCK, and the block its launch template
/// version targets (`CapacityReservationSpecification`), read with the DescribeLaunchTemplateVersions the
/// backend makes anyway: its template says `karpenter.sh/capacity-type: reserved`. moto serves no
/// DescribeCapacityReservations (tests/aws_errors.rs reads EC2's answer instead): the call is made once a
/// refresh for the block's id and counted as failed, and the group is served without reservations meanwhile.
#[tokio::test]
async fn a_capacity_block_groups_launch_template_targets_its_block() {
    use aws_sdk_ec2::types::{
        CapacityReservationTarget, LaunchTemplateCapacityReservationSpecificationRequest,
        RequestLaunchTemplateData,
    };
    let moto = Moto::start();
    let sdk = moto.sdk().await;
    let train = NodeGroup {
        name: "train",
        instance_types: &["g4dn.xlarge"],
        capacity_type: "CAPACITY_BLOCK",
        desired: 0,
        ..Default::default()
    };
    let web = NodeGroup {
        name: "web",
        ..Default::default()
    };
    let asgs = moto::create_cluster(&sdk, "prod", &[train, web]).await;
    let target = CapacityReservationTarget::builder()
        .capacity_reservation_id("cr-0b10c000000000001")
        .build();
    aws_sdk_ec2::Client::new(&sdk)
        .create_launch_template_version()
        .launch_template_name("lt-train")
        .launch_template_data(
            RequestLaunchTemplateData::builder()
                .image_id("ami-12c6146b")
                .instance_type(aws_sdk_ec2::types::InstanceType::G4dnXlarge)
                .capacity_reservation_specification(
                    LaunchTemplateCapacityReservationSpecificationRequest::builder()
                        .capacity_reservation_target(target)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    aws_sdk_autoscaling::Client::new(&sdk)
        .update_auto_scaling_group()
        .auto_scaling_group_name(&asgs["train"])
        .launch_template(
            aws_sdk_autoscaling::types::LaunchTemplateSpecification::builder()
                .launch_template_name("lt-train")
                .version("2")
                .build(),
        )
        .send()
        .await
        .unwrap();
    let config = AwsConfig::load("cluster: prod\nrefreshInterval: 0s\n", None, None).unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let backend = Arc::new(AwsBackend::new(config, &sdk, metrics.clone()));
    backend.refresh().await.unwrap();
    let labels = |id: &str| {
        let template = backend.node_group(id).unwrap().template.clone();
        let labels = &template.metadata.as_ref().unwrap().labels;
        (
            labels["karpenter.sh/capacity-type"].clone(),
            labels["eks.amazonaws.com/capacityType"].clone(),
        )
    };
    assert_eq!(
        labels("train"),
        ("reserved".into(), "CAPACITY_BLOCK".into())
    );
    assert_eq!(labels("web"), ("on-demand".into(), "ON_DEMAND".into()));
    let spec = backend.node_group("train").unwrap();
    assert_eq!(spec.capacity_type.as_str(), "CAPACITY_BLOCK");
    assert!(spec.reservations.is_empty(), "moto said none");
    let calls = || {
        let text = metrics.encode(&*backend);
        metric(&text, "ec2", "DescribeCapacityReservations")
    };
    assert_eq!(calls(), 1);
    backend.refresh().await.unwrap();
    assert_eq!(
        calls(),
        2,
        "one call a refresh, for all the groups' reservations"
    );
}
