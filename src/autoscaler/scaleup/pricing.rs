//! The pricing stage, for the price expander: each node group's node price once per loop, and the price of
//! each distinct pod demand, kept across loops while that demand keeps appearing. The calls of the stage go
//! out together. Consolidation reads the node prices alone ([`node_prices`]).

use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::group::Group;
use crate::autoscaler::scaleup::pending::Pending;
use crate::k8s::objects;
use crate::model::fargate::{Matcher, SCHEDULER_NAME, Selection};
use crate::model::{FargateProfile, Pod, Resources};
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
        let exemplars: Vec<&Pod> = pending
            .groups
            .iter()
            .map(|eg| eg.exemplar(pending.pods))
            .chain([&stabilizer])
            .collect();
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
            .map(|&(_, i)| client.pod_price(objects::pod_to_pb_bytes(exemplars[i]), 1.0));
        let (node_prices, pod_prices) = futures::join!(node_prices(client, groups), join_all(pods));
        node_prices?;
        let mut book: HashMap<PodKey, Option<f64>> = HashMap::new();
        for ((k, _), price) in asked.into_iter().zip(pod_prices) {
            book.insert(k.clone(), price?);
        }
        for k in &keys {
            if let Some(&price) = self.pods.get(k) {
                book.entry(k.clone()).or_insert(price);
            }
        }
        let (stabilizer, groups) = keys.split_last().expect("the stabilizer is last");
        for (e, k) in groups.iter().enumerate() {
            pending.prices[e] = book[k];
        }
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
