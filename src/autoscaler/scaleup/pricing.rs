//! The pricing stage, for the price expander: each node group's node price once per loop, and the price of
//! each distinct pod demand, kept across loops while that demand keeps appearing (a pod whose claims take
//! GPUs on a group's nodes priced for that group as requesting them). The calls of the stage go
//! out together. Consolidation reads the node prices alone ([`node_prices`]).

use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::group::Group;
use crate::autoscaler::scaleup::pending::Pending;
use crate::k8s::pod_to_pb_bytes;
use crate::model::{FargateProfile, Pod, Resources};
use crate::model::{Matcher, SCHEDULER_NAME, Selection};
use crate::simulator::claimed_gpus;
use futures::future::join_all;
use std::collections::{BTreeMap, HashMap};

/// What a pod's price depends on: its demand, and whether Fargate would run it (then Fargate's rate for its
/// rounded size is its price) and with which profile.
#[derive(Clone, PartialEq, Eq, Hash)]
struct PodKey {
    demand: Resources,
    extended: BTreeMap<String, u64>,
    fargate: Option<String>,
}

/// Pod prices by key, from the last loop that asked.
#[derive(Default)]
pub struct PriceBook {
    pods: HashMap<PodKey, Option<f64>>,
}

impl PriceBook {
    /// Node prices into `groups`, pod prices into `pending.prices`, the stabilizer into `pending.stabilizer`.
    pub async fn price(
        &mut self,
        client: &ProviderClient,
        profiles: &[FargateProfile],
        groups: &mut [Group],
        pending: &mut Pending<'_>,
    ) -> Result<(), ClientError> {
        let stabilizer = stabilizer_pod();
        let variants = device_variants(groups, pending);
        let exemplars: Vec<&Pod> = pending
            .groups
            .iter()
            .map(|eg| eg.exemplar(pending.pods))
            .chain(variants.iter().map(|(_, _, pod)| pod))
            .chain([&stabilizer])
            .collect();
        let plain = pending.groups.len();
        let mut matcher = Matcher::new(profiles);
        let keys: Vec<PodKey> = exemplars.iter().map(|p| key(p, &mut matcher)).collect();
        // Each key not priced last loop is asked once, by its first pod.
        let mut asked: HashMap<&PodKey, usize> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            if !self.pods.contains_key(k) {
                asked.entry(k).or_insert(i);
            }
        }
        let asked: Vec<(&PodKey, usize)> = asked.into_iter().collect();
        let pods = asked
            .iter()
            .map(|&(_, i)| client.pod_price(pod_to_pb_bytes(exemplars[i]), 1.0));
        let (node_prices, pod_prices) = futures::join!(node_prices(client, groups), join_all(pods));
        node_prices?;
        let mut book: HashMap<PodKey, Option<f64>> = HashMap::new();
        for ((k, i), price) in asked.into_iter().zip(pod_prices) {
            // A pod priced with the GPUs its claims take that no group's allocatable holds (a group of
            // devices alone) keeps its plain price.
            let variant = (plain..exemplars.len() - 1).contains(&i);
            book.insert(
                k.clone(),
                if variant {
                    price.unwrap_or(None)
                } else {
                    price?
                },
            );
        }
        for k in &keys {
            if let Some(&price) = self.pods.get(k) {
                book.entry(k.clone()).or_insert(price);
            }
        }
        let (stabilizer, keys) = keys.split_last().expect("the stabilizer is last");
        let (plain_keys, variant_keys) = keys.split_at(plain);
        for (e, k) in plain_keys.iter().enumerate() {
            pending.prices[e] = book[k];
        }
        pending.device_prices = (variants.iter().zip(variant_keys))
            .map(|(&(e, gi, _), k)| ((e, gi), book[k].or(pending.prices[e])))
            .collect();
        pending.stabilizer = book[stabilizer].unwrap_or(0.0);
        self.pods = book;
        Ok(())
    }
}

/// Each group's node price per hour into `groups` (the price of its template node), asked together.
pub async fn node_prices(client: &ProviderClient, groups: &mut [Group]) -> Result<(), ClientError> {
    let asks = groups.iter().map(|group| async {
        let Some(template) = &group.template else {
            return Ok(None);
        };
        let node = &template.node;
        client.node_price(&node.name, &node.labels, 1.0).await
    });
    let prices = join_all(asks).await;
    for (group, price) in groups.iter_mut().zip(prices) {
        group.node_price = price?;
    }
    Ok(())
}

/// The pending pods whose claims take GPUs on a group's new node, each as a pod requesting that many more
/// GPUs, with its equivalence group and the node group: priced so, a claim for N GPUs costs as N GPUs
/// (the provider prices a pod by what it requests, and a claim requests nothing).
fn device_variants(groups: &[Group], pending: &Pending<'_>) -> Vec<(usize, usize, Pod)> {
    let mut variants = Vec::new();
    for (e, eg) in pending.groups.iter().enumerate() {
        let pod = eg.exemplar(pending.pods);
        if pod.needs().is_none() {
            continue;
        }
        for (gi, group) in groups.iter().enumerate() {
            let Some(template) = &group.template else {
                continue;
            };
            let gpus = claimed_gpus(pod, &template.node, template.devices.as_deref());
            if gpus > 0 {
                let mut priced = pod.clone();
                priced.demand.gpus += gpus;
                variants.push((e, gi, priced));
            }
        }
    }
    variants
}

fn key(pod: &Pod, profiles: &mut Matcher<'_>) -> PodKey {
    let fargate = match profiles.select(&pod.namespace, &pod.labels) {
        Selection::Profile(name) => Some(name),
        Selection::Candidates(names) => Some(names.join(",")),
        Selection::NoMatch(_) => (pod.scheduler_name == SCHEDULER_NAME).then(String::new),
    };
    PodKey {
        demand: pod.demand,
        extended: pod.extended.clone(),
        fargate,
    }
}

/// cluster-autoscaler's price stabilizer: a 500m / 500MiB pod.
fn stabilizer_pod() -> Pod {
    let demand = Resources {
        cpu_millis: 500,
        memory_bytes: 500 << 20,
        pods: 1,
        ..Default::default()
    };
    Pod::pending("default", "price-stabilizer", demand)
}
