//! The pods of a node that goes now get their new node from the node group that node was in, when it can
//! take them, whatever the expander would prefer (issue 60's "the same group when it can take it").

use super::{instances, leaving, now, serve, simulate};
use crate::common::cluster::{nodes_of, pending, running, scale_ups};
use ekscale::model::LeavingReason;
use std::time::Duration;

/// Two on-demand groups both able to take a 1200m pod: `b`'s m5.large is cheaper than `a`'s m5.xlarge.
const HOME_AND_CHEAPER: &str = "
cluster: leaving
region: us-east-1
nodeGroups:
  - {name: a, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 1, provisioningDelay: 30s}
  - {name: b, instanceType: m5.large, zones: [us-east-1b], minSize: 0, maxSize: 10, desiredSize: 0, provisioningDelay: 30s}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_events_pods_go_to_their_own_group_over_a_cheaper_one() {
    let (server, leaves) = serve(HOME_AND_CHEAPER, false).await;
    let a = instances(&leaves, "a");
    let nodes = nodes_of(server.addr, &["a", "b"]).await;
    let price = ["--expander", "price"];
    // A pod that fits nowhere (`a`'s node is full) goes where the price expander sends it: the cheaper `b`.
    let mut wanting = nodes.clone();
    wanting.push(running(&a[0].1, "big-0", "big", "3500m", "1Gi"));
    wanting.push(pending("default", "extra-0", "extra", "1200m", "1Gi"));
    let cheap = simulate(&server, wanting, &price);
    assert_eq!(scale_ups(&cheap), [("b".to_string(), 1)], "{cheap:#}");

    // The pod of `a`'s node that goes now, with nowhere to go, gets a node of `a`: its home group.
    let mut items = nodes;
    items.push(running(&a[0].1, "web-0", "web", "1200m", "1Gi"));
    let at = now() + Duration::from_secs(600);
    let event = leaving(&a[0].0, "a", LeavingReason::ScheduledEvent, at);
    leaves.leaving.lock().unwrap().push(event);
    let result = simulate(&server, items, &price);
    assert_eq!(result["leaving"][0]["action"], "drain", "{result:#}");
    assert_eq!(scale_ups(&result), [("a".to_string(), 1)], "{result:#}");
    let up = &result["scaleUp"][0];
    assert!(
        up["pods"].to_string().contains("default/web-0"),
        "{result:#}"
    );
    let reason = up["reason"].as_str().unwrap();
    assert!(reason.contains("leaving node was in, over b"), "{result:#}");
}
