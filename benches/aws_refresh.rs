//! The AWS backend against moto's server: AWS calls and latency of Refresh for 50 managed node groups x 20
//! instances, and the hot RPCs served from the backend's view.
//!
//! `PATH=/var/tmp/ekscale-venv/bin:$PATH cargo bench --bench aws_refresh` (moto_server from
//! tests/requirements.txt). moto answers in milliseconds where AWS takes tens of them, so the latencies
//! here are a floor; the call counts are what carries over to AWS.

mod common;
#[allow(dead_code)]
#[path = "../tests/common/moto.rs"]
mod moto;
#[path = "../tests/common/tools.rs"]
mod tools;

use common::percentiles;
use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::aws::AwsBackend;
use ekscale::cloud::aws::AwsConfig;
use ekscale::provider::ProviderMetrics;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUPS: usize = 50;
const PER_GROUP: i32 = 20;

/// AWS calls so far, by service:operation.
fn calls(metrics: &ProviderMetrics, backend: &dyn NodeGroupBackend) -> BTreeMap<String, u64> {
    moto::aws_calls(&metrics.encode(backend))
}

fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = after
        .iter()
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0);
            (d > 0).then(|| format!("{k} {d}"))
        })
        .collect();
    let total: u64 = after.values().sum::<u64>() - before.values().sum::<u64>();
    format!("{total} calls ({})", parts.join(", "))
}

fn aws_refresh(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let moto = moto::Moto::start();
    let sdk = rt.block_on(moto.sdk());
    let names: Vec<String> = (0..GROUPS).map(|g| format!("ng-{g:02}")).collect();
    let groups: Vec<moto::NodeGroup> = names
        .iter()
        .map(|name| moto::NodeGroup {
            name,
            min: 0,
            max: 40,
            desired: PER_GROUP,
            ..Default::default()
        })
        .collect();
    let started = Instant::now();
    rt.block_on(moto::create_cluster(&sdk, "bench", &groups));
    println!(
        "\nfixture: {GROUPS} node groups x {PER_GROUP} instances in moto, built in {:.1?}",
        started.elapsed()
    );

    let backend = |config: &str| {
        let metrics = Arc::new(ProviderMetrics::default());
        let config = AwsConfig::load(config, None, None).unwrap();
        (
            Arc::new(AwsBackend::new(config, &sdk, metrics.clone())),
            metrics,
        )
    };
    let (steady, metrics) = backend("cluster: bench\nrefreshInterval: 0s\n");
    let before = calls(&metrics, &*steady);
    let started = Instant::now();
    rt.block_on(steady.refresh()).unwrap();
    println!(
        "first refresh:   {:>7.1?}  {}",
        started.elapsed(),
        delta(&before, &calls(&metrics, &*steady))
    );
    assert_eq!(steady.node_groups().len(), GROUPS);
    let before = calls(&metrics, &*steady);
    let started = Instant::now();
    rt.block_on(steady.refresh()).unwrap();
    println!(
        "steady refresh:  {:>7.1?}  {}",
        started.elapsed(),
        delta(&before, &calls(&metrics, &*steady))
    );

    let (describing, metrics_all) =
        backend("cluster: bench\nrefreshInterval: 0s\ndescribeInterval: 0s\n");
    rt.block_on(describing.refresh()).unwrap();
    let before = calls(&metrics_all, &*describing);
    let started = Instant::now();
    rt.block_on(describing.refresh()).unwrap();
    println!(
        "refresh re-describing every group: {:>7.1?}  {}",
        started.elapsed(),
        delta(&before, &calls(&metrics_all, &*describing))
    );

    let mut group = c.benchmark_group("aws_refresh_50x20_moto");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("steady", |b| {
        b.to_async(&rt)
            .iter(|| async { steady.refresh().await.unwrap() })
    });
    group.bench_function("describe_every_group", |b| {
        b.to_async(&rt)
            .iter(|| async { describing.refresh().await.unwrap() })
    });
    group.finish();

    // The hot RPCs answer from the view: the same path as the simulated EKS.
    let (client, instances) = rt.block_on(async {
        let client = common::serve(steady.clone(), metrics.clone()).await;
        let instances: Vec<String> = names
            .iter()
            .flat_map(|n| steady.instances(n).unwrap())
            .map(|i| i.id)
            .collect();
        (client, instances)
    });
    println!(
        "hot RPCs over the AWS backend's view ({} instances):",
        instances.len()
    );
    percentiles(&rt, &client, &names, &instances);
    drop(moto);
}

criterion_group!(benches, aws_refresh);
criterion_main!(benches);
