//! The pending pods that need new nodes, as equivalence groups: what every scale-up round plans for.

use crate::autoscaler::status::NoScaleUp;
use crate::model::{FastMap, Pod, PodList, PodNames};
use crate::simulator::EquivalenceGroup;
use crate::simulator::PodTerms;
use std::collections::BTreeMap;

/// The pending pods that need new nodes, as equivalence groups.
pub struct Pending<'a> {
    pub pods: PodList<'a>,
    /// The names of `pods` (all or the first of them) packed when they were read; see [`PodNames::push_pod`].
    pub keys: &'a PodNames,
    pub groups: Vec<EquivalenceGroup>,
    pub terms: Vec<PodTerms>,
    /// Per equivalence group: how many of its pods are already placed (they are taken from the front).
    pub done: Vec<usize>,
    /// Per equivalence group: the price of one pod, when the expander prices options.
    pub prices: Vec<Option<f64>>,
    /// Per (equivalence group, node group), where the pods' claims take GPUs on the group's new node: the
    /// price of one pod requesting them, which the option of that group counts instead.
    pub device_prices: FastMap<(usize, usize), Option<f64>>,
    /// The price of a 500m / 500MiB pod, the price expander's stabilizer.
    pub stabilizer: f64,
    /// Per equivalence group (empty when none has any): the node groups (indices, sorted) its pods moved off
    /// leaving nodes were in, which scale-up prefers for it when one can take it.
    pub homes: Vec<Vec<usize>>,
}

impl<'a> Pending<'a> {
    /// The pods scale-up is for, in equivalence groups, with how many of each already found room.
    pub fn new(
        pods: PodList<'a>,
        keys: &'a PodNames,
        groups: Vec<EquivalenceGroup>,
        terms: Vec<PodTerms>,
        done: Vec<usize>,
    ) -> Pending<'a> {
        Pending {
            pods,
            keys,
            prices: vec![None; groups.len()],
            device_prices: FastMap::default(),
            groups,
            terms,
            done,
            stabilizer: 0.0,
            homes: Vec::new(),
        }
    }

    /// Sets each equivalence group's home groups: those of its pods among `moved` (indices into `pods`), each
    /// with its home group in `homes` (same order).
    pub fn set_homes(&mut self, moved: &[usize], homes: &[Option<usize>]) {
        let home: FastMap<usize, usize> = (moved.iter().zip(homes))
            .filter_map(|(&p, &g)| Some((p, g?)))
            .collect();
        if home.is_empty() {
            return;
        }
        self.homes = (self.groups.iter())
            .map(|eg| {
                let mut of: Vec<usize> = eg
                    .pods
                    .iter()
                    .filter_map(|p| home.get(p).copied())
                    .collect();
                of.sort_unstable();
                of.dedup();
                of
            })
            .collect();
    }

    /// Whether node group `group` is the home group of one of equivalence group `e`'s pods.
    pub(crate) fn is_home(&self, e: usize, group: usize) -> bool {
        self.homes
            .get(e)
            .is_some_and(|h| h.binary_search(&group).is_ok())
    }

    /// A line for each pod no scale-up took, with its equivalence group's reasons.
    pub fn left_over<'p>(
        &'p self,
        reasons: impl Fn(usize) -> BTreeMap<String, String> + 'p,
    ) -> impl Iterator<Item = NoScaleUp> + 'p {
        (self.groups.iter().enumerate()).flat_map(move |(e, eg)| {
            let why = reasons(e);
            (eg.pods[self.done[e]..].iter()).map(move |&p| NoScaleUp {
                pod: self.pods[p].key(),
                reasons: why.clone(),
            })
        })
    }

    pub(crate) fn left(&self, g: usize) -> u64 {
        (self.groups[g].pods.len() - self.done[g]) as u64
    }

    /// Each equivalence group's first pod, which stands for it.
    pub(crate) fn exemplars(&self) -> Vec<&Pod> {
        (self.groups.iter())
            .map(|eg| eg.exemplar(self.pods))
            .collect()
    }
}
