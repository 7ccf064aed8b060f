//! AWS answers moto cannot give (throttling, ValidationError, AccessDenied, stockouts, degraded groups),
//! from aws-smithy-mocks behind the real SDK clients.

mod common;

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_sdk_eks::config::{Credentials, Region};
use aws_smithy_mocks::{MockResponseInterceptor, Rule, RuleMode, create_mock_http_client, mock};
use common::Server;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::aws::AwsBackend;
use ekscale::cloud::aws::AwsConfig;
use ekscale::cloud::aws::Calls;
use ekscale::proto::externalgrpc::instance_status::InstanceState;
use ekscale::proto::externalgrpc::*;
use ekscale::provider::ProviderMetrics;
use std::sync::Arc;
use std::time::Duration;

/// A client of `$sdk` answering from `$rules`, with fast SDK retries (3 attempts).
macro_rules! client {
    ($sdk:ident, $rules:expr) => {{
        let mut interceptor = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
        for rule in $rules {
            interceptor = interceptor.with_rule(rule);
        }
        let config = $sdk::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "mock"))
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(3)
                    .with_initial_backoff(Duration::from_millis(5)),
            )
            .http_client(create_mock_http_client())
            .interceptor(interceptor)
            .build();
        $sdk::Client::from_conf(config)
    }};
}

fn list_web() -> Rule {
    use aws_sdk_eks::operation::list_nodegroups::ListNodegroupsOutput;
    mock!(aws_sdk_eks::Client::list_nodegroups)
        .then_output(|| ListNodegroupsOutput::builder().nodegroups("web").build())
}

fn describe_web(status: aws_sdk_eks::types::NodegroupStatus) -> Rule {
    use aws_sdk_eks::operation::describe_nodegroup::DescribeNodegroupOutput;
    use aws_sdk_eks::types::{
        AutoScalingGroup, Nodegroup, NodegroupResources, NodegroupScalingConfig,
    };
    mock!(aws_sdk_eks::Client::describe_nodegroup)
        .match_requests(|r| r.nodegroup_name() == Some("web"))
        .then_output(move || {
            let ng = Nodegroup::builder()
                .nodegroup_name("web")
                .status(status.clone())
                .release_version("1.31.0-20250101")
                .instance_types("m5.large")
                .scaling_config(
                    NodegroupScalingConfig::builder()
                        .min_size(0)
                        .max_size(5)
                        .desired_size(3)
                        .build(),
                )
                .resources(
                    NodegroupResources::builder()
                        .auto_scaling_groups(AutoScalingGroup::builder().name("eks-web").build())
                        .build(),
                )
                .build();
            DescribeNodegroupOutput::builder().nodegroup(ng).build()
        })
}

/// The ASG wants 3 but has 2: one placeholder.
fn describe_asg() -> Rule {
    mock!(aws_sdk_autoscaling::Client::describe_auto_scaling_groups).then_output(asg_output)
}

fn asg_output()
-> aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput {
    asg_with(3, &["i-0000000000000001a", "i-0000000000000002b"])
}

/// The ASG `eks-web` wanting `desired`, with these instances in service.
fn asg_with(
    desired: i32,
    ids: &[&str],
) -> aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput {
    use aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput;
    DescribeAutoScalingGroupsOutput::builder()
        .auto_scaling_groups(asg_builder(desired, ids).build())
        .build()
}

/// The ASG `eks-web` wanting `desired`, with these instances in service, to be built.
fn asg_builder(
    desired: i32,
    ids: &[&str],
) -> aws_sdk_autoscaling::types::builders::AutoScalingGroupBuilder {
    use aws_sdk_autoscaling::types::{AutoScalingGroup, Instance, LifecycleState};
    let instance = |id: &&str| {
        Instance::builder()
            .instance_id(*id)
            .availability_zone("us-east-1a")
            .lifecycle_state(LifecycleState::InService)
            .health_status("Healthy")
            .protected_from_scale_in(false)
            .build()
    };
    AutoScalingGroup::builder()
        .auto_scaling_group_name("eks-web")
        .min_size(0)
        .max_size(5)
        .desired_capacity(desired)
        .default_cooldown(300)
        .availability_zones("us-east-1a")
        .health_check_type("EC2")
        .created_time(aws_sdk_autoscaling::primitives::DateTime::from_secs(0))
        .set_instances(Some(ids.iter().map(instance).collect()))
}

fn stockout() -> Rule {
    use aws_sdk_autoscaling::operation::describe_scaling_activities::DescribeScalingActivitiesOutput;
    use aws_sdk_autoscaling::types::{Activity, ScalingActivityStatusCode};
    mock!(aws_sdk_autoscaling::Client::describe_scaling_activities).then_output(|| {
        let activity = Activity::builder()
            .activity_id("a-1")
            .auto_scaling_group_name("eks-web")
            .cause("desired capacity changed from 2 to 3")
            .start_time(aws_sdk_autoscaling::primitives::DateTime::from(std::time::SystemTime::now()))
            .status_code(ScalingActivityStatusCode::Failed)
            .status_message("Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient m5.large capacity.")
            .build();
        DescribeScalingActivitiesOutput::builder().activities(activity).build()
    })
}

fn m5_large() -> Rule {
    mock!(aws_sdk_ec2::Client::describe_instance_types).then_output(m5_large_output)
}

fn m5_large_output() -> aws_sdk_ec2::operation::describe_instance_types::DescribeInstanceTypesOutput
{
    use aws_sdk_ec2::operation::describe_instance_types::DescribeInstanceTypesOutput;
    use aws_sdk_ec2::types::*;
    {
        let info = InstanceTypeInfo::builder()
            .instance_type(InstanceType::M5Large)
            .v_cpu_info(VCpuInfo::builder().default_v_cpus(2).build())
            .memory_info(MemoryInfo::builder().size_in_mib(8192).build())
            .processor_info(
                ProcessorInfo::builder()
                    .supported_architectures(ArchitectureType::X8664)
                    .build(),
            )
            .network_info(
                NetworkInfo::builder()
                    .maximum_network_interfaces(3)
                    .ipv4_addresses_per_interface(10)
                    .build(),
            )
            .build();
        DescribeInstanceTypesOutput::builder()
            .instance_types(info)
            .build()
    }
}

fn aws_error(code: &str, message: &str) -> aws_sdk_autoscaling::error::ErrorMetadata {
    aws_sdk_autoscaling::error::ErrorMetadata::builder()
        .code(code)
        .message(message)
        .build()
}

struct Mocked {
    backend: Arc<AwsBackend>,
    metrics: Arc<ProviderMetrics>,
    server: Server,
}

async fn mocked(eks: &[&Rule], autoscaling: &[&Rule], refresh: bool) -> Mocked {
    mocked_with_ec2(eks, autoscaling, &[&m5_large()], refresh).await
}

async fn mocked_with_ec2(
    eks: &[&Rule],
    autoscaling: &[&Rule],
    ec2: &[&Rule],
    refresh: bool,
) -> Mocked {
    let metrics = Arc::new(ProviderMetrics::default());
    // A cluster without Fargate profiles, unless a test says otherwise.
    let no_profiles = mock!(aws_sdk_eks::Client::list_fargate_profiles).then_output(|| {
        aws_sdk_eks::operation::list_fargate_profiles::ListFargateProfilesOutput::builder().build()
    });
    let eks: Vec<&Rule> = eks.iter().copied().chain([&no_profiles]).collect();
    let calls = Calls::from_clients(
        client!(aws_sdk_eks, eks),
        client!(aws_sdk_autoscaling, autoscaling),
        client!(aws_sdk_ec2, ec2),
        metrics.clone(),
    );
    let config = AwsConfig::load(
        "cluster: prod\nregion: us-east-1\nrefreshInterval: 0s\n",
        None,
        None,
    )
    .unwrap();
    let backend = Arc::new(AwsBackend::with_calls(config, calls, None, metrics.clone()));
    if refresh {
        backend.refresh().await.unwrap();
    }
    let server = Server::serve(backend.clone(), None, None).await;
    Mocked {
        backend,
        metrics,
        server,
    }
}

#[tokio::test]
async fn unfulfilled_capacity_after_a_failed_launch_is_an_out_of_resources_placeholder() {
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&asg, &activities], true).await;
    let mut client = m.server.client().await;
    let instances = client
        .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
        .await
        .unwrap()
        .into_inner()
        .instances;
    assert_eq!(instances.len(), 3);
    let placeholder = &instances[2];
    assert_eq!(placeholder.id, "aws:///us-east-1a/i-placeholder-eks-web-0");
    let status = placeholder.status.as_ref().unwrap();
    assert_eq!(status.instance_state(), InstanceState::InstanceCreating);
    let error = status.error_info.as_ref().unwrap();
    assert_eq!(
        (error.instance_error_class, error.error_code.as_str()),
        (1, "placeholder-cannot-be-fulfilled")
    );
    assert!(error.error_message.contains("InsufficientInstanceCapacity"));

    // Cancelling the placeholder lowers the desired capacity to the instances that exist.
    let set = mock!(aws_sdk_autoscaling::Client::set_desired_capacity)
        .match_requests(|r| r.desired_capacity() == Some(2))
        .then_output(|| {
            aws_sdk_autoscaling::operation::set_desired_capacity::SetDesiredCapacityOutput::builder(
            )
            .build()
        });
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&asg, &activities, &set], true).await;
    let mut client = m.server.client().await;
    let nodes = vec![ExternalGrpcNode {
        provider_id: placeholder.id.clone(),
        ..Default::default()
    }];
    client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes,
        })
        .await
        .unwrap();
    assert_eq!(set.num_calls(), 1);
    assert_eq!(m.backend.target_size("web").unwrap(), 2);
}

#[tokio::test]
async fn a_validation_error_is_failed_precondition_and_the_asg_is_read_again() {
    let refuse = mock!(aws_sdk_autoscaling::Client::set_desired_capacity).then_error(|| {
        aws_sdk_autoscaling::operation::set_desired_capacity::SetDesiredCapacityError::generic(
            aws_error(
                "ValidationError",
                "New SetDesiredCapacity value 4 is above max value 3 for the AutoScalingGroup.",
            ),
        )
    });
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&refuse, &asg, &activities], true).await;
    let reads = asg.num_calls();
    let mut client = m.server.client().await;
    let status = client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: "web".into(),
            delta: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert!(
        status.message().contains("ValidationError") && status.message().contains("above max"),
        "{}",
        status.message()
    );
    assert_eq!(
        asg.num_calls(),
        reads + 1,
        "the view is re-read, not guessed"
    );
    assert_eq!(m.backend.target_size("web").unwrap(), 3);
}

#[tokio::test]
async fn throttling_is_retried_by_the_sdk_then_reported_unavailable() {
    use aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::*;
    let throttled = || {
        TerminateInstanceInAutoScalingGroupError::generic(aws_error("Throttling", "Rate exceeded"))
    };
    // Twice throttled, then accepted: one DeleteNodes succeeds after the SDK's retries.
    let flaky = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
        .sequence()
        .error(throttled)
        .times(2)
        .output(|| TerminateInstanceInAutoScalingGroupOutput::builder().build())
        .build();
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&flaky, &asg, &activities], true).await;
    let mut client = m.server.client().await;
    let node = |id: &str| {
        vec![ExternalGrpcNode {
            provider_id: format!("aws:///us-east-1a/{id}"),
            ..Default::default()
        }]
    };
    client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes: node("i-0000000000000001a"),
        })
        .await
        .unwrap();
    assert_eq!(flaky.num_calls(), 3);
    assert_eq!(m.backend.target_size("web").unwrap(), 2);

    // Always throttled: UNAVAILABLE, with AWS's words and what was done.
    let stuck = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
        .then_error(throttled);
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&stuck, &asg, &activities], true).await;
    let mut client = m.server.client().await;
    let status = client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes: node("i-0000000000000002b"),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(
        status.message().contains("terminated 0 of 1")
            && status.message().contains("Rate exceeded"),
        "{}",
        status.message()
    );
    assert_eq!(m.backend.target_size("web").unwrap(), 3, "unchanged");
    let text = m.metrics.encode(&*m.backend);
    assert!(text.contains(r#"ekscale_provider_aws_requests_total{service="autoscaling",operation="TerminateInstanceInAutoScalingGroup",outcome="throttled"} 1"#), "{text}");
}

#[tokio::test]
async fn access_denied_fails_refresh_with_permission_denied() {
    let denied = mock!(aws_sdk_eks::Client::list_nodegroups).then_error(|| {
        aws_sdk_eks::operation::list_nodegroups::ListNodegroupsError::generic(
            aws_sdk_eks::error::ErrorMetadata::builder()
                .code("AccessDeniedException")
                .message("User is not authorized to perform: eks:ListNodegroups")
                .build(),
        )
    });
    let m = mocked(&[&denied], &[], false).await;
    let mut client = m.server.client().await;
    let status = client.refresh(RefreshRequest {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert!(
        status.message().contains("eks:ListNodegroups"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn a_degraded_node_group_is_left_out_whole() {
    let (list, describe, asg) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Degraded),
        describe_asg(),
    );
    let m = mocked(&[&list, &describe], &[&asg], true).await;
    let mut client = m.server.client().await;
    assert!(
        client
            .node_groups(NodeGroupsRequest {})
            .await
            .unwrap()
            .into_inner()
            .node_groups
            .is_empty()
    );
    let text = m.metrics.encode(&*m.backend);
    assert!(
        text.contains(r#"ekscale_provider_node_groups_skipped{reason="status DEGRADED"} 1"#),
        "{text}"
    );
}

/// `eks-web` launching version 7 of launch template `lt-0web` through a mixed instances policy, as EKS sets up
/// a managed node group of spot or of several instance types.
fn describe_asg_on_template() -> Rule {
    use aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput;
    use aws_sdk_autoscaling::types::{
        LaunchTemplate, LaunchTemplateSpecification, MixedInstancesPolicy,
    };
    mock!(aws_sdk_autoscaling::Client::describe_auto_scaling_groups).then_output(|| {
        let template = LaunchTemplateSpecification::builder()
            .launch_template_id("lt-0web")
            .launch_template_name("eks-web")
            .version("7")
            .build();
        let policy = MixedInstancesPolicy::builder()
            .launch_template(
                LaunchTemplate::builder()
                    .launch_template_specification(template)
                    .build(),
            )
            .build();
        let asg = asg_builder(2, &["i-0000000000000001a", "i-0000000000000002b"])
            .mixed_instances_policy(policy)
            .build();
        DescribeAutoScalingGroupsOutput::builder()
            .auto_scaling_groups(asg)
            .build()
    })
}

/// web's status and image, as DescribeNodeGroups serves them.
async fn described_web(m: &Mocked) -> (String, String) {
    use ekscale::proto::ekscale::DescribeNodeGroupsRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    let answer = NodeGroupsClient::new(m.server.channel().await)
        .describe_node_groups(DescribeNodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner();
    let web = answer
        .node_groups
        .into_iter()
        .find(|g| g.id == "web")
        .unwrap();
    (web.status, web.image)
}

/// A managed node group update under way: EKS reports the group UPDATING, and its ASG already launches the
/// new launch template version. The group is still served, says so, and its image is that version's AMI,
/// asked of EC2 once (a numbered version never changes).
#[tokio::test]
async fn an_updating_node_group_is_served_with_the_ami_its_asg_launches() {
    use aws_sdk_ec2::operation::describe_launch_template_versions::DescribeLaunchTemplateVersionsOutput;
    use aws_sdk_ec2::types::{LaunchTemplateVersion, ResponseLaunchTemplateData};
    let (list, describe, asg) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Updating),
        describe_asg_on_template(),
    );
    let versions = mock!(aws_sdk_ec2::Client::describe_launch_template_versions)
        .match_requests(|r| {
            r.launch_template_id() == Some("lt-0web") && r.versions() == ["7".to_string()]
        })
        .then_output(|| {
            let version = LaunchTemplateVersion::builder()
                .launch_template_id("lt-0web")
                .version_number(7)
                .launch_template_data(
                    ResponseLaunchTemplateData::builder()
                        .image_id("ami-0c1f2e3d4b5a69788")
                        .build(),
                )
                .build();
            DescribeLaunchTemplateVersionsOutput::builder()
                .launch_template_versions(version)
                .build()
        });
    let m = mocked_with_ec2(
        &[&list, &describe],
        &[&asg],
        &[&m5_large(), &versions],
        true,
    )
    .await;
    assert_eq!(
        described_web(&m).await,
        ("UPDATING".to_string(), "ami-0c1f2e3d4b5a69788".to_string())
    );
    let template = m.backend.node_group("web").unwrap().template.clone();
    let labels = &template.metadata.as_ref().unwrap().labels;
    assert_eq!(
        labels["eks.amazonaws.com/nodegroup-image"],
        "ami-0c1f2e3d4b5a69788"
    );
    m.backend.refresh().await.unwrap();
    assert_eq!(versions.num_calls(), 1, "version 7 is remembered");
}

/// A provider whose role may not describe launch templates (a policy from before this call) still serves
/// every group: its image is then EKS's releaseVersion, and the denial is counted.
#[tokio::test]
async fn when_ec2_cannot_say_a_groups_ami_its_release_version_stands_in() {
    let (list, describe, asg) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg_on_template(),
    );
    let denied = mock!(aws_sdk_ec2::Client::describe_launch_template_versions).then_error(|| {
        aws_sdk_ec2::operation::describe_launch_template_versions::DescribeLaunchTemplateVersionsError::generic(
            aws_sdk_ec2::error::ErrorMetadata::builder()
                .code("UnauthorizedOperation")
                .message("You are not authorized to perform this operation.")
                .build(),
        )
    });
    let m = mocked_with_ec2(&[&list, &describe], &[&asg], &[&m5_large(), &denied], true).await;
    assert_eq!(
        described_web(&m).await,
        ("ACTIVE".to_string(), "1.31.0-20250101".to_string())
    );
    let template = m.backend.node_group("web").unwrap().template.clone();
    let labels = &template.metadata.as_ref().unwrap().labels;
    assert!(
        !labels.contains_key("eks.amazonaws.com/nodegroup-image"),
        "{labels:?}"
    );
    let text = m.metrics.encode(&*m.backend);
    assert!(
        text.contains(r#"operation="DescribeLaunchTemplateVersions",outcome="error"} 1"#),
        "{text}"
    );
}

/// A refresh that read the ASG before an IncreaseSize and finishes after it must not undo it in the view:
/// cluster-autoscaler would see the old target and increase again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refresh_racing_a_size_change_does_not_undo_it() {
    use aws_sdk_eks::operation::describe_nodegroup::DescribeNodegroupOutput;
    use aws_sdk_eks::operation::list_nodegroups::ListNodegroupsOutput;
    use aws_sdk_eks::types::{Nodegroup, NodegroupScalingConfig, NodegroupStatus};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    // The second refresh finds a new group, web2, whose instance type is not cached yet: it asks EC2
    // after reading the ASGs, and the EC2 mock holds it there until the size change is done.
    let lists = AtomicUsize::new(0);
    let list = mock!(aws_sdk_eks::Client::list_nodegroups).then_compute_output(move |_| {
        let names: &[&str] = if lists.fetch_add(1, Ordering::SeqCst) == 0 {
            &["web"]
        } else {
            &["web", "web2"]
        };
        ListNodegroupsOutput::builder()
            .set_nodegroups(Some(names.iter().map(|n| n.to_string()).collect()))
            .build()
    });
    let web2 = mock!(aws_sdk_eks::Client::describe_nodegroup)
        .match_requests(|r| r.nodegroup_name() == Some("web2"))
        .then_output(|| {
            let ng = Nodegroup::builder()
                .nodegroup_name("web2")
                .status(NodegroupStatus::Active)
                .instance_types("m5.xlarge")
                .scaling_config(
                    NodegroupScalingConfig::builder()
                        .min_size(0)
                        .max_size(5)
                        .desired_size(0)
                        .build(),
                )
                .build();
            DescribeNodegroupOutput::builder().nodegroup(ng).build()
        });
    let (read_tx, read_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (read_tx, go_rx) = (Mutex::new(read_tx), Mutex::new(go_rx));
    let types = AtomicUsize::new(0);
    let slow_types =
        mock!(aws_sdk_ec2::Client::describe_instance_types).then_compute_output(move |_| {
            if types.fetch_add(1, Ordering::SeqCst) == 1 {
                read_tx.lock().unwrap().send(()).unwrap();
                go_rx
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap();
            }
            m5_large_output()
        });
    let set = mock!(aws_sdk_autoscaling::Client::set_desired_capacity).then_output(|| {
        aws_sdk_autoscaling::operation::set_desired_capacity::SetDesiredCapacityOutput::builder()
            .build()
    });
    let (describe, asg, activities) = (
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked_with_ec2(
        &[&list, &describe, &web2],
        &[&asg, &set, &activities],
        &[&slow_types],
        false,
    )
    .await;
    // The first refresh learns m5.large; it is cached from then on.
    m.backend.refresh().await.unwrap();
    assert_eq!(
        m.backend.target_size("web").ok(),
        Some(3),
        "{}",
        m.metrics.encode(&*m.backend)
    );

    let backend = m.backend.clone();
    let refresh = tokio::spawn(async move { backend.refresh().await });
    tokio::task::spawn_blocking(move || read_rx.recv_timeout(Duration::from_secs(10)).unwrap())
        .await
        .unwrap();
    let mut client = m.server.client().await;
    client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: "web".into(),
            delta: 1,
        })
        .await
        .unwrap();
    go_tx.send(()).unwrap();
    refresh.await.unwrap().unwrap();
    assert_eq!(
        m.backend.target_size("web").unwrap(),
        4,
        "the refresh read 3 before the change to 4"
    );
}

#[tokio::test]
async fn a_denied_termination_is_permission_denied_and_changes_nothing() {
    use aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::TerminateInstanceInAutoScalingGroupError;
    let denied = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
        .then_error(|| {
            TerminateInstanceInAutoScalingGroupError::generic(aws_error(
                "AccessDenied",
                "not authorized to perform: autoscaling:TerminateInstanceInAutoScalingGroup",
            ))
        });
    let (list, describe, asg, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        describe_asg(),
        stockout(),
    );
    let m = mocked(&[&list, &describe], &[&denied, &asg, &activities], true).await;
    let mut client = m.server.client().await;
    let nodes = vec![ExternalGrpcNode {
        provider_id: "aws:///us-east-1a/i-0000000000000001a".into(),
        ..Default::default()
    }];
    let status = client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert!(
        status.message().contains("terminated 0 of 1"),
        "{}",
        status.message()
    );
    assert_eq!(m.backend.target_size("web").unwrap(), 3);
}

/// An all-or-nothing increase the ASG cannot launch whole: when the client cancels its unlaunched capacity
/// (DeleteNodes of the placeholders a failed launch leaves, as the companion does), the increase is given up
/// whole at once: the instance that did launch for it is terminated and the desired capacity set back.
#[tokio::test]
async fn cancelling_an_all_or_nothing_increase_sets_it_back_whole() {
    use aws_sdk_autoscaling::operation::set_desired_capacity::SetDesiredCapacityOutput;
    use aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::TerminateInstanceInAutoScalingGroupOutput;
    use ekscale::proto::ekscale::AtomicIncreaseSizeRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    use std::sync::Mutex;

    // The ASG has 2; asked for 4, it launches one more and fails the last (a stockout).
    let desired: Arc<Mutex<Vec<i32>>> = Arc::default();
    let asked = desired.clone();
    let asg = mock!(aws_sdk_autoscaling::Client::describe_auto_scaling_groups).then_compute_output(
        move |_| {
            let before = ["i-0000000000000001a", "i-0000000000000002b"];
            match asked.lock().unwrap().first() {
                Some(4) => asg_with(4, &[before[0], before[1], "i-0000000000000003c"]),
                _ => asg_with(2, &before),
            }
        },
    );
    let recorded = desired.clone();
    let set = mock!(aws_sdk_autoscaling::Client::set_desired_capacity).then_compute_output(
        move |request| {
            let value = request.desired_capacity().unwrap();
            recorded.lock().unwrap().push(value);
            SetDesiredCapacityOutput::builder().build()
        },
    );
    let terminate = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
        .match_requests(|r| {
            r.instance_id() == Some("i-0000000000000003c")
                && r.should_decrement_desired_capacity() == Some(true)
        })
        .then_output(|| TerminateInstanceInAutoScalingGroupOutput::builder().build());
    let (list, describe, activities) = (
        list_web(),
        describe_web(aws_sdk_eks::types::NodegroupStatus::Active),
        stockout(),
    );
    let m = mocked(
        &[&list, &describe],
        &[&asg, &set, &terminate, &activities],
        true,
    )
    .await;
    let mut groups = NodeGroupsClient::new(m.server.channel().await);
    let mut client = m.server.client().await;
    groups
        .atomic_increase_size(AtomicIncreaseSizeRequest {
            id: "web".into(),
            delta: 2,
        })
        .await
        .unwrap();
    client.refresh(RefreshRequest {}).await.unwrap();
    let instances = client
        .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
        .await
        .unwrap()
        .into_inner()
        .instances;
    let placeholder: Vec<&ekscale::proto::externalgrpc::Instance> = instances
        .iter()
        .filter(|i| i.id.contains("i-placeholder-"))
        .collect();
    assert_eq!(placeholder.len(), 1, "{instances:?}");
    let error = (placeholder[0].status.as_ref())
        .and_then(|s| s.error_info.as_ref())
        .unwrap();
    assert!(error.error_message.contains("InsufficientInstanceCapacity"));

    client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes: vec![ExternalGrpcNode {
                provider_id: placeholder[0].id.clone(),
                ..Default::default()
            }],
        })
        .await
        .unwrap();
    assert_eq!(terminate.num_calls(), 1, "the instance launched for it");
    assert_eq!(*desired.lock().unwrap(), [4, 2], "raised, then set back");
    assert_eq!(m.backend.target_size("web").unwrap(), 2);
    let text = m.metrics.encode(&*m.backend);
    assert!(
        text.contains(r#"ekscale_provider_atomic_increases_total{outcome="set_back"} 1"#),
        "{text}"
    );
}

/// web as a Capacity Block group: DescribeNodegroup says CAPACITY_BLOCK and its Auto Scaling group launches
/// version 7 of lt-0web.
fn describe_block_web() -> Rule {
    use aws_sdk_eks::operation::describe_nodegroup::DescribeNodegroupOutput;
    use aws_sdk_eks::types::{
        AutoScalingGroup, CapacityTypes, Nodegroup, NodegroupResources, NodegroupScalingConfig,
        NodegroupStatus,
    };
    mock!(aws_sdk_eks::Client::describe_nodegroup).then_output(|| {
        let ng = Nodegroup::builder()
            .nodegroup_name("web")
            .status(NodegroupStatus::Active)
            .capacity_type(CapacityTypes::CapacityBlock)
            .instance_types("m5.large")
            .scaling_config(
                NodegroupScalingConfig::builder()
                    .min_size(0)
                    .max_size(5)
                    .desired_size(2)
                    .build(),
            )
            .resources(
                NodegroupResources::builder()
                    .auto_scaling_groups(AutoScalingGroup::builder().name("eks-web").build())
                    .build(),
            )
            .build();
        DescribeNodegroupOutput::builder().nodegroup(ng).build()
    })
}

/// A Capacity Block group on AWS: EKS says its capacity type, its launch template version the block it
/// targets, and one DescribeCapacityReservations the block's window and counts. moto serves no
/// DescribeCapacityReservations: EC2's answer is the XML of tests/data/describe-capacity-reservations.xml, read
/// by the SDK's own deserializer. A later failure of that call is counted and leaves the block as last read.
#[tokio::test]
async fn a_capacity_blocks_window_and_counts_come_from_ec2() {
    use aws_sdk_ec2::operation::describe_capacity_reservations::DescribeCapacityReservationsError;
    use aws_sdk_ec2::operation::describe_launch_template_versions::DescribeLaunchTemplateVersionsOutput;
    use aws_sdk_ec2::types::{
        CapacityReservationTargetResponse, LaunchTemplateCapacityReservationSpecificationResponse,
        LaunchTemplateVersion, ResponseLaunchTemplateData,
    };
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    use ekscale::proto::ekscale::{CapacityReservation, DescribeNodeGroupsRequest};
    const BLOCK: &str = "cr-0b10c000000000001";
    let versions =
        mock!(aws_sdk_ec2::Client::describe_launch_template_versions).then_output(|| {
            let target = CapacityReservationTargetResponse::builder()
                .capacity_reservation_id(BLOCK)
                .build();
            let data = ResponseLaunchTemplateData::builder()
                .image_id("ami-0c1f2e3d4b5a69788")
                .capacity_reservation_specification(
                    LaunchTemplateCapacityReservationSpecificationResponse::builder()
                        .capacity_reservation_target(target)
                        .build(),
                )
                .build();
            let version = LaunchTemplateVersion::builder()
                .launch_template_id("lt-0web")
                .version_number(7)
                .launch_template_data(data)
                .build();
            DescribeLaunchTemplateVersionsOutput::builder()
                .launch_template_versions(version)
                .build()
        });
    let recorded = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/describe-capacity-reservations.xml"),
    )
    .unwrap();
    let reservations = mock!(aws_sdk_ec2::Client::describe_capacity_reservations)
        .match_requests(|r| r.capacity_reservation_ids() == [BLOCK.to_string()])
        .sequence()
        .http_status(200, Some(recorded))
        .error(|| {
            DescribeCapacityReservationsError::generic(
                aws_sdk_ec2::error::ErrorMetadata::builder()
                    .code("UnauthorizedOperation")
                    .message("You are not authorized to perform this operation.")
                    .build(),
            )
        })
        .times(5)
        .build();
    let (list, describe, asg) = (list_web(), describe_block_web(), describe_asg_on_template());
    let ec2: [&Rule; 3] = [&m5_large(), &versions, &reservations];
    let m = mocked_with_ec2(&[&list, &describe], &[&asg], &ec2, true).await;
    let described = || async {
        let answer = NodeGroupsClient::new(m.server.channel().await)
            .describe_node_groups(DescribeNodeGroupsRequest {})
            .await
            .unwrap()
            .into_inner();
        let web = answer.node_groups.into_iter().next().unwrap();
        (web.capacity_type, web.reservations)
    };
    let block = CapacityReservation {
        id: BLOCK.into(),
        r#type: "capacity-block".into(),
        // 2026-12-01T11:30:00Z and a week later.
        start_unix_seconds: 1_796_124_600,
        end_unix_seconds: 1_796_729_400,
        total: 4,
        available: 1,
    };
    assert_eq!(
        described().await,
        ("CAPACITY_BLOCK".to_string(), vec![block.clone()])
    );
    let template = m.backend.node_group("web").unwrap().template.clone();
    let labels = &template.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["karpenter.sh/capacity-type"], "reserved");
    assert_eq!(labels["eks.amazonaws.com/capacityType"], "CAPACITY_BLOCK");
    let used = r#"ekscale_provider_reserved_instances{node_group="web",reservation="cr-0b10c000000000001",type="capacity-block",state="used"} 3"#;
    assert!(m.metrics.encode(&*m.backend).contains(used));

    m.backend.refresh().await.unwrap();
    assert_eq!(reservations.num_calls(), 2, "one call a refresh");
    let text = m.metrics.encode(&*m.backend);
    assert!(
        text.contains(r#"operation="DescribeCapacityReservations",outcome="error"} 1"#),
        "{text}"
    );
    assert_eq!(
        described().await,
        ("CAPACITY_BLOCK".to_string(), vec![block]),
        "the last good answer stands"
    );
}
