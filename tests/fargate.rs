//! Fargate through gRPC on the simulated EKS: ListProfiles, MatchPod (pod bytes and pasted JSON), and
//! PricingPodPrice for pods a profile takes, in both wire generations.

mod common;

use common::wire::{call, new, old};
use common::{SCENARIO, Server, pod};
use ekscale::proto::ekscale::fargate_client::FargateClient;
use ekscale::proto::ekscale::*;
use ekscale::proto::externalgrpc::PricingPodPriceResponse;
use k8s_pb::api::core::v1::{ContainerPort, Pod};
use prost::Message;

/// 2 vCPU / 9 GB at us-east-1's rates.
const TWO_BY_NINE: f64 = 2.0 * 0.04048 + 9.0 * 0.004445;

fn fargate_pod() -> Pod {
    pod("serverless", &[("compute", "fargate")], "1", "8Gi")
}

async fn fargate(server: &Server) -> FargateClient<tonic::transport::Channel> {
    FargateClient::new(server.channel().await)
}

fn bytes(pod: &Pod) -> MatchPodRequest {
    MatchPodRequest {
        pod_bytes: pod.encode_to_vec(),
        pod_json: String::new(),
    }
}

#[tokio::test]
async fn list_profiles_shows_the_scenarios_profiles() {
    let server = Server::start().await;
    let profiles = fargate(&server)
        .await
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
    assert_eq!(profiles[0].selectors[0].namespace, "serverless");
    assert_eq!(profiles[0].selectors[0].labels["compute"], "fargate");
}

#[tokio::test]
async fn match_pod_sizes_and_prices_a_pod_a_profile_takes() {
    let server = Server::start().await;
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&fargate_pod()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.profile, "serverless");
    assert!(answer.candidates.is_empty());
    assert_eq!(
        answer.capacity_provisioned, "2vCPU 9GB",
        "1 vCPU + 8 GiB + 256 MiB rounds to 2 vCPU / 9 GB"
    );
    assert_eq!((answer.vcpu, answer.memory_gb), (2.0, 9.0));
    assert!(
        (answer.hourly_price - TWO_BY_NINE).abs() < 1e-9,
        "{}",
        answer.hourly_price
    );
    assert!(
        answer.incompatibilities.is_empty(),
        "{:?}",
        answer.incompatibilities
    );
}

#[tokio::test]
async fn match_pod_reads_pasted_json_and_yaml() {
    let server = Server::start().await;
    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api","namespace":"serverless","labels":{"compute":"fargate"}},
                   "spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":"1","memory":"8Gi"}}}]}}"#;
    let request = MatchPodRequest {
        pod_bytes: vec![],
        pod_json: json.into(),
    };
    let answer = fargate(&server)
        .await
        .match_pod(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            answer.profile.as_str(),
            answer.capacity_provisioned.as_str()
        ),
        ("serverless", "2vCPU 9GB")
    );
    let yaml = "metadata: {name: tiny, namespace: serverless, labels: {compute: fargate}}\nspec:\n  containers: [{name: app}]\n";
    let request = MatchPodRequest {
        pod_bytes: vec![],
        pod_json: yaml.into(),
    };
    let answer = fargate(&server)
        .await
        .match_pod(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        answer.capacity_provisioned, "0.25vCPU 0.5GB",
        "no requests: the smallest size"
    );
}

#[tokio::test]
async fn match_pod_reports_incompatibilities_and_non_matches() {
    let server = Server::start().await;
    let mut host = fargate_pod();
    let spec = host.spec.as_mut().unwrap();
    spec.host_network = Some(true);
    spec.containers[0].ports = vec![ContainerPort {
        host_port: Some(8080),
        container_port: Some(80),
        ..Default::default()
    }];
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&host))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        answer.profile, "serverless",
        "it matches, but cannot run there"
    );
    assert!(
        answer
            .incompatibilities
            .iter()
            .any(|r| r.contains("hostNetwork")),
        "{:?}",
        answer.incompatibilities
    );
    assert!(
        answer
            .incompatibilities
            .iter()
            .any(|r| r.contains("hostPort")),
        "{:?}",
        answer.incompatibilities
    );

    let huge = pod("serverless", &[("compute", "fargate")], "16", "120Gi");
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&huge))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.capacity_provisioned, "");
    assert!(
        answer
            .incompatibilities
            .iter()
            .any(|r| r.contains("16 vCPU / 120 GB")),
        "{:?}",
        answer.incompatibilities
    );

    let elsewhere = pod("default", &[], "1", "1Gi");
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&elsewhere))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.profile, "");
    assert!(
        answer.reason.contains("no ACTIVE Fargate profile"),
        "{}",
        answer.reason
    );
}

#[tokio::test]
async fn several_matching_profiles_are_all_candidates_unless_the_label_names_one() {
    let scenario = SCENARIO.replace(
        "fargateProfiles:\n",
        "fargateProfiles:\n  - name: catch-all\n    selectors: [{namespace: \"server*\"}]\n",
    );
    let server = Server::start_with(&scenario, None).await;
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&fargate_pod()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.profile, "");
    assert_eq!(answer.candidates, ["catch-all", "serverless"]);
    assert!(answer.reason.contains("at random"), "{}", answer.reason);
    let named = pod(
        "serverless",
        &[
            ("compute", "fargate"),
            ("eks.amazonaws.com/fargate-profile", "catch-all"),
        ],
        "1",
        "1Gi",
    );
    let answer = fargate(&server)
        .await
        .match_pod(bytes(&named))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.profile, "catch-all");
}

#[tokio::test]
async fn undecodable_or_ambiguous_requests_are_invalid_argument() {
    let server = Server::start().await;
    let mut client = fargate(&server).await;
    for request in [
        MatchPodRequest {
            pod_bytes: vec![],
            pod_json: String::new(),
        },
        MatchPodRequest {
            pod_bytes: fargate_pod().encode_to_vec(),
            pod_json: "{}".into(),
        },
        MatchPodRequest {
            pod_bytes: vec![0xff; 4],
            pod_json: String::new(),
        },
        MatchPodRequest {
            pod_bytes: vec![],
            pod_json: "{not json".into(),
        },
    ] {
        assert_eq!(
            client.match_pod(request).await.unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}

#[tokio::test]
async fn pod_price_of_a_fargate_pod_is_fargates_in_both_generations() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let time = |seconds| {
        Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Time {
            seconds: Some(seconds),
            nanos: None,
        })
    };
    let ts = |seconds| Some(prost_types::Timestamp { seconds, nanos: 0 });

    let request = old::PricingPodPriceRequest {
        pod: Some(fargate_pod()),
        start_time: time(0),
        end_time: time(3600),
    };
    let price: PricingPodPriceResponse = call(&channel, "PricingPodPrice", request).await.unwrap();
    assert!((price.price - TWO_BY_NINE).abs() < 1e-9, "{}", price.price);

    let request = new::PricingPodPriceRequest {
        pod_bytes: fargate_pod().encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let price: PricingPodPriceResponse = call(&channel, "PricingPodPrice", request).await.unwrap();
    assert!((price.price - TWO_BY_NINE).abs() < 1e-9, "{}", price.price);

    // Ten seconds bill the one-minute minimum.
    let request = new::PricingPodPriceRequest {
        pod_bytes: fargate_pod().encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(10),
    };
    let price: PricingPodPriceResponse = call(&channel, "PricingPodPrice", request).await.unwrap();
    assert!(
        (price.price - TWO_BY_NINE / 60.0).abs() < 1e-12,
        "{}",
        price.price
    );

    // A pod no profile takes is priced on the node groups: a different number.
    let ec2 = pod("default", &[], "1", "4Gi");
    let request = new::PricingPodPriceRequest {
        pod_bytes: ec2.encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let price: PricingPodPriceResponse = call(&channel, "PricingPodPrice", request).await.unwrap();
    assert!(
        price.price > 0.0 && (price.price - TWO_BY_NINE).abs() > 1e-6,
        "{}",
        price.price
    );
}
