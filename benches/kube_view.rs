//! The live cluster source's view (`Kube::view`) over a fake API server on loopback: what a loop costs before
//! `elapsedMs` starts. Two clusters: 1,000 nodes and 30,000 pods (the RunOnce bench's cluster), and 100,000
//! nodes with 1,000,000 pods of which 1,000 changed since the last view (their watch events applied before
//! the view is timed, as between two loops of `run`). The caches are filled once.
//!
//! `cargo bench --bench kube_view -- "30000 pods"` runs one of them.

#[path = "../tests/common/kube_api.rs"]
#[allow(dead_code)]
mod kube_api;

// The allocator the shipped companion runs with (src/bin/ekscale-autoscaler.rs), counting what is allocated
// while the 1,000,000-pod source is filled: what it keeps a pod, as the allocator was asked for it. Resident
// memory would count the fake API server's objects and the lists' pages too, freed but not yet given back.
#[global_allocator]
static GLOBAL: Counting = Counting;

/// Whether allocations are counted: only while a source is filled, so the timed views pay one load.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated and not freed while counting.
static HELD: AtomicIsize = AtomicIsize::new(0);

struct Counting;

impl Counting {
    fn count(&self, bytes: isize) {
        if COUNTING.load(Relaxed) {
            HELD.fetch_add(bytes, Relaxed);
        }
    }
}

// SAFETY: every call is mimalloc's own, with the caller's arguments; counting only reads the layouts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count(layout.size() as isize);
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.count(layout.size() as isize);
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.count(-(layout.size() as isize));
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.count(new_size as isize - layout.size() as isize);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

use criterion::{Criterion, criterion_group, criterion_main};
use ekscale::autoscaler::ClusterSource;
use ekscale::autoscaler::control::{Kube, RateLimits};
use serde_json::{Value, json};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicIsize};
use std::time::{Duration, Instant};

fn running(n: usize, p: usize, pods: usize) -> Value {
    let node = format!("node-{n}");
    let mut pod = kube_api::pod(&format!("web-{n}-{p}"), Some(&node));
    pod["metadata"]["uid"] = json!(format!("uid-{n}-{p}"));
    pod["metadata"]["labels"] = json!({"app": format!("app-{}", (n * pods + p) % 50)});
    pod
}

/// A fake API server with `nodes` nodes of `pods` pods each, and the kube-rs source connected to it.
fn cluster(rt: &tokio::runtime::Runtime, nodes: usize, pods: usize) -> (Kube, kube_api::Fake) {
    let mut objects = kube_api::Objects::default();
    for n in 0..nodes {
        objects.nodes.push(kube_api::node(&format!("node-{n}")));
        for p in 0..pods {
            objects.pods.push(running(n, p, pods));
        }
    }
    rt.block_on(async {
        ekscale::tls::install_crypto_provider();
        let fake = kube_api::Fake::new(objects);
        let addr = kube_api::serve(fake.clone()).await;
        let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        // The initial lists are pages of 500 objects; at client-go's 5 requests a second a million pods
        // take 400 s to list, which is not what this bench measures.
        let limits = RateLimits {
            qps: 10_000.0,
            burst: 10_000,
        };
        let kube = Kube::connect(config, limits).await.unwrap();
        // The lists are in; the fake's copies are not needed any more.
        *fake.objects.lock().unwrap() = kube_api::Objects::default();
        (kube, fake)
    })
}

fn view(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (kube, _fake) = cluster(&rt, 1_000, 30);
    let view = rt.block_on(kube.view()).unwrap();
    println!(
        "kube view: {} nodes, {} pods",
        view.nodes.len(),
        view.pods.len()
    );
    drop(view);
    c.bench_function("kube view/1000 nodes, 30000 pods", |b| {
        b.to_async(&rt).iter(|| kube.view())
    });
}

/// 1,000 pods change between two views (a rollout's step): their MODIFIED events go through the watch, the
/// last one a pod turning Unschedulable, whose wake-up says all of them are in; then the view is timed.
fn changed(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    // Counted from before the fake's objects are made to after they are dropped: what is left is what the
    // source keeps (and the fake server's own few bytes).
    COUNTING.store(true, Relaxed);
    let (kube, fake) = cluster(&rt, 100_000, 10);
    COUNTING.store(false, Relaxed);
    let held = HELD.load(Relaxed);
    let view = rt.block_on(kube.view()).unwrap();
    println!(
        "kube view: {} nodes, {} pods (filled in {:.1} s); the source holds {:.0} MiB, {:.0} bytes a pod \
         (nodes included; as allocated, without the allocator's rounding)",
        view.nodes.len(),
        view.pods.len(),
        started.elapsed().as_secs_f64(),
        held as f64 / f64::from(1 << 20),
        held as f64 / view.pods.len() as f64,
    );
    drop(view);
    let mut version = 100u64;
    c.bench_function("kube view/100000 nodes, 1000000 pods, 1000 changed", |b| {
        b.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            for _ in 0..iterations {
                rt.block_on(async {
                    for i in 0..1_000usize {
                        version += 1;
                        let n = (version as usize * 7_919 + i * 104_729) % 100_000;
                        let mut pod = running(n, i % 10, 10);
                        pod["metadata"]["resourceVersion"] = json!(version.to_string());
                        pod["metadata"]["labels"]["revision"] = json!(version.to_string());
                        fake.send_when_watched(
                            4,
                            "pods",
                            json!({"type": "MODIFIED", "object": pod}),
                        )
                        .await;
                    }
                    version += 1;
                    let wake = kube_api::unschedulable("burst", &version.to_string());
                    fake.send_when_watched(4, "pods", json!({"type": "MODIFIED", "object": wake}))
                        .await;
                    kube.unschedulable_pod().await;
                    let start = Instant::now();
                    // Made and dropped (a loop drops its view when it ends): both timed.
                    drop(kube.view().await.unwrap());
                    spent += start.elapsed();
                });
            }
            spent
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(10));
    targets = view, changed
}
criterion_main!(benches);
