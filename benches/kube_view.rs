//! The live cluster source's view (`Kube::view`) over a fake API server on loopback: what a loop costs before
//! `elapsedMs` starts, converting the watch caches into the model. 1,000 nodes and 30,000 pods, as the
//! RunOnce bench's cluster; the caches are filled once, then each view is built from them.

#[path = "../tests/common/kube_api.rs"]
#[allow(dead_code)]
mod kube_api;

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::cluster::ClusterSource;
use serde_json::json;
use std::time::Duration;

fn view(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut objects = kube_api::Objects::default();
    for n in 0..1_000 {
        let node = format!("node-{n}");
        objects.nodes.push(kube_api::node(&node));
        for p in 0..30 {
            let mut pod = kube_api::pod(&format!("web-{n}-{p}"), Some(&node));
            pod["metadata"]["uid"] = json!(format!("uid-{n}-{p}"));
            pod["metadata"]["labels"] = json!({"app": format!("app-{}", (n * 30 + p) % 50)});
            objects.pods.push(pod);
        }
    }
    let (kube, _fake) = rt.block_on(kube_api::connect(objects));
    let view = rt.block_on(kube.view()).unwrap();
    println!(
        "kube view: {} nodes, {} pods",
        view.nodes.len(),
        view.pods.len()
    );
    c.bench_function("kube view/1000 nodes, 30000 pods", |b| {
        b.to_async(&rt).iter(|| kube.view())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(10));
    targets = view
}
criterion_main!(benches);
