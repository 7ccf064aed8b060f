//! Clients of the two ends of cluster-autoscaler's wire history, written from docs/externalgrpc.md §2:
//! `old` as releases 1.25-1.34.1 encode the messages that changed, `new` as 1.35 and later do.
//! Messages that never changed are the generated ones. Each is sent with a raw tonic unary call, so the
//! server sees exactly these field numbers.

use prost::Message;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// Calls `CloudProvider/<method>` with any prost request and response types.
pub async fn call<Req, Resp>(channel: &Channel, method: &str, request: Req) -> Result<Resp, Status>
where
    Req: Message + Send + Sync + 'static,
    Resp: Message + Default + Send + Sync + 'static,
{
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = format!("/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/{method}");
    let path = PathAndQuery::try_from(path).unwrap();
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    Ok(grpc
        .unary(Request::new(request), path, codec)
        .await?
        .into_inner())
}

/// cluster-autoscaler 1.25.0-1.34.1: embedded k8s Pod/Node, apimachinery Time and nanosecond Durations.
pub mod old {
    use ekscale::proto::externalgrpc::ExternalGrpcNode;
    use k8s_pb::api::core::v1::{Node, Pod};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{Duration, Time};

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PricingNodePriceRequest {
        #[prost(message, optional, tag = "1")]
        pub node: Option<ExternalGrpcNode>,
        #[prost(message, optional, tag = "2")]
        pub start_time: Option<Time>,
        #[prost(message, optional, tag = "3")]
        pub end_time: Option<Time>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PricingPodPriceRequest {
        #[prost(message, optional, tag = "1")]
        pub pod: Option<Pod>,
        #[prost(message, optional, tag = "2")]
        pub start_time: Option<Time>,
        #[prost(message, optional, tag = "3")]
        pub end_time: Option<Time>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupTemplateNodeInfoResponse {
        #[prost(message, optional, tag = "1")]
        pub node_info: Option<Node>,
    }

    /// As 1.33-1.34.1 (1.25-1.32 lack 6 and 7; 1.25-1.28 lack 5).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptions {
        #[prost(double, tag = "1")]
        pub scale_down_utilization_threshold: f64,
        #[prost(double, tag = "2")]
        pub scale_down_gpu_utilization_threshold: f64,
        #[prost(message, optional, tag = "3")]
        pub scale_down_unneeded_time: Option<Duration>,
        #[prost(message, optional, tag = "4")]
        pub scale_down_unready_time: Option<Duration>,
        #[prost(message, optional, tag = "5")]
        pub max_node_provision_time: Option<Duration>,
        #[prost(bool, tag = "6")]
        pub zero_or_max_node_scaling: bool,
        #[prost(bool, tag = "7")]
        pub ignore_daemon_sets_utilization: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptionsRequest {
        #[prost(string, tag = "1")]
        pub id: String,
        #[prost(message, optional, tag = "2")]
        pub defaults: Option<NodeGroupAutoscalingOptions>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptionsResponse {
        #[prost(message, optional, tag = "1")]
        pub node_group_autoscaling_options: Option<NodeGroupAutoscalingOptions>,
    }

    /// The defaults cluster-autoscaler sends with its out-of-the-box flags.
    pub fn defaults() -> NodeGroupAutoscalingOptions {
        let ns = |secs: i64| {
            Some(Duration {
                duration: Some(secs * 1_000_000_000),
            })
        };
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: 0.5,
            scale_down_gpu_utilization_threshold: 0.5,
            scale_down_unneeded_time: ns(600),
            scale_down_unready_time: ns(1200),
            max_node_provision_time: ns(900),
            zero_or_max_node_scaling: false,
            ignore_daemon_sets_utilization: false,
        }
    }
}

/// cluster-autoscaler 1.35 and later: bytes for k8s objects, Timestamp and google.protobuf.Duration.
pub mod new {
    use ekscale::proto::externalgrpc::ExternalGrpcNode;
    use prost_types::{Duration, Timestamp};

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PricingNodePriceRequest {
        #[prost(message, optional, tag = "1")]
        pub node: Option<ExternalGrpcNode>,
        #[prost(message, optional, tag = "4")]
        pub start_timestamp: Option<Timestamp>,
        #[prost(message, optional, tag = "5")]
        pub end_timestamp: Option<Timestamp>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PricingPodPriceRequest {
        #[prost(bytes = "vec", tag = "4")]
        pub pod_bytes: Vec<u8>,
        #[prost(message, optional, tag = "5")]
        pub start_timestamp: Option<Timestamp>,
        #[prost(message, optional, tag = "6")]
        pub end_timestamp: Option<Timestamp>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupTemplateNodeInfoResponse {
        #[prost(bytes = "vec", tag = "2")]
        pub node_bytes: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptions {
        #[prost(double, tag = "1")]
        pub scale_down_utilization_threshold: f64,
        #[prost(double, tag = "2")]
        pub scale_down_gpu_utilization_threshold: f64,
        #[prost(bool, tag = "6")]
        pub zero_or_max_node_scaling: bool,
        #[prost(bool, tag = "7")]
        pub ignore_daemon_sets_utilization: bool,
        #[prost(message, optional, tag = "8")]
        pub scale_down_unneeded_duration: Option<Duration>,
        #[prost(message, optional, tag = "9")]
        pub scale_down_unready_duration: Option<Duration>,
        #[prost(message, optional, tag = "10")]
        pub max_node_provision_duration: Option<Duration>,
        #[prost(message, optional, tag = "11")]
        pub max_node_startup_duration: Option<Duration>,
        #[prost(bool, tag = "12")]
        pub allow_non_atomic_scale_up_to_max: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptionsRequest {
        #[prost(string, tag = "1")]
        pub id: String,
        #[prost(message, optional, tag = "2")]
        pub defaults: Option<NodeGroupAutoscalingOptions>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeGroupAutoscalingOptionsResponse {
        #[prost(message, optional, tag = "1")]
        pub node_group_autoscaling_options: Option<NodeGroupAutoscalingOptions>,
    }

    pub fn defaults() -> NodeGroupAutoscalingOptions {
        let secs = |seconds: i64| Some(Duration { seconds, nanos: 0 });
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: 0.5,
            scale_down_gpu_utilization_threshold: 0.5,
            scale_down_unneeded_duration: secs(600),
            scale_down_unready_duration: secs(1200),
            max_node_provision_duration: secs(900),
            max_node_startup_duration: secs(900),
            ..Default::default()
        }
    }
}
