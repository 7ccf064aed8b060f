//! cluster-autoscaler's drainability rules: what each pod on a node means for removing that node. The first
//! rule with an answer wins, in upstream's order, so a node is kept for the same reason upstream would give.

use crate::model::{FastMap, Labels, Pdb, Phase, Pod, SafeToEvict};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The `--skip-nodes-with-*` flags and the limits they read.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// `--skip-nodes-with-system-pods`: kube-system pods without a PDB keep their node.
    pub skip_system_pods: bool,
    /// `--skip-nodes-with-local-storage`: pods with data on the node's disk keep their node.
    pub skip_local_storage: bool,
    /// `--skip-nodes-with-custom-controller-pods`: only controllers upstream knows count as replicating.
    pub skip_custom_controllers: bool,
    /// `--blocking-system-pod-distruption-timeout` (sic): kube-system pods older than this stop blocking.
    pub system_pod_timeout: Duration,
    /// `--expendable-pods-priority-cutoff`: pods below it are evicted but need no new place.
    pub expendable_cutoff: i32,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            skip_system_pods: true,
            skip_local_storage: true,
            skip_custom_controllers: true,
            system_pod_timeout: Duration::from_secs(3600),
            expendable_cutoff: -10,
        }
    }
}

/// Why a pod keeps its node. The names are upstream's (`drain.BlockingPodReason`), stable for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocking {
    NotReplicated,
    LocalStorageRequested,
    NotSafeToEvictAnnotation,
    UnmovableKubeSystemPod,
    NotEnoughPdb,
    BlockedByOnCompletionPod,
}

impl fmt::Display for Blocking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What removing its node does with a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Left alone: mirror and DaemonSet pods, finished pods, pods long past their grace period.
    Stays,
    /// Evicted; `needs_place` unless it is expendable.
    Evicted { needs_place: bool },
    /// The node cannot be removed; the text says what about the pod.
    Blocks(Blocking, String),
}

/// How many more evictions each PDB allows in this pass, as removals are committed.
#[derive(Clone, Debug)]
pub struct PdbBudget<'a> {
    pdbs: &'a [Pdb],
    remaining: Vec<i32>,
    /// How many budgets allow no more disruptions: while none does, no pod can be blocked by one.
    exhausted: usize,
    /// Where a cluster has many budgets, each by its namespace and one label its selector requires: a pod is
    /// checked against the budgets its own labels name, not against every budget of the cluster (scale-down
    /// asks for every pod on every node).
    index: Option<Arc<PdbIndex<'a>>>,
}

/// Budgets by what a covered pod must have.
#[derive(Debug)]
struct PdbIndex<'a> {
    /// By namespace, label key and value: budgets whose selector requires that label.
    by_label: HashMap<(&'a str, &'a str, &'a str), Vec<usize>>,
    /// By namespace: budgets whose selector requires no label value (expressions only, or none).
    by_namespace: HashMap<&'a str, Vec<usize>>,
}

/// Up to this many budgets, each pod is checked against all of them: cheaper than looking its labels up.
const PDBS_WITHOUT_INDEX: usize = 8;

impl<'a> PdbBudget<'a> {
    pub fn new(pdbs: &'a [Pdb]) -> PdbBudget<'a> {
        let index = (pdbs.len() > PDBS_WITHOUT_INDEX).then(|| {
            let mut index = PdbIndex {
                by_label: HashMap::new(),
                by_namespace: HashMap::new(),
            };
            for (i, pdb) in pdbs.iter().enumerate() {
                // A budget without a selector covers no pod.
                let Some(selector) = &pdb.selector else {
                    continue;
                };
                let namespace = pdb.namespace.as_str();
                match selector.match_labels.iter().next() {
                    Some((key, value)) => (index.by_label)
                        .entry((namespace, key.as_str(), value.as_str()))
                        .or_default()
                        .push(i),
                    None => index.by_namespace.entry(namespace).or_default().push(i),
                }
            }
            Arc::new(index)
        });
        PdbBudget {
            pdbs,
            remaining: pdbs.iter().map(|p| p.disruptions_allowed).collect(),
            exhausted: pdbs.iter().filter(|p| p.disruptions_allowed < 1).count(),
            index,
        }
    }

    /// Indices of the budgets that cover `pod`, in order.
    fn covering<'p>(&'p self, pod: &'p Pod) -> impl Iterator<Item = usize> + 'p {
        let covers = move |&i: &usize| self.pdbs[i].covers(&pod.namespace, &pod.labels);
        let mut named = Vec::new();
        let mut all = 0..0;
        match &self.index {
            None => all = 0..self.pdbs.len(),
            Some(index) => {
                let namespace = &*pod.namespace;
                named.extend(index.by_namespace.get(namespace).into_iter().flatten());
                for (key, value) in &pod.labels {
                    let at = (namespace, key.as_str(), value.as_str());
                    named.extend(index.by_label.get(&at).into_iter().flatten());
                }
                named.sort_unstable();
                named.dedup();
            }
        }
        all.chain(named).filter(covers)
    }

    /// The budgets covering each of `pods` (index and pod): (pod, budget) pairs, in the pods' order. A node's
    /// coverage is looked up once, when it becomes a candidate, and read by every later check of its
    /// removal; `seen` keeps what each distinct namespace and labels were found to be covered by.
    pub fn coverage<'p>(
        &self,
        seen: &mut Coverage<'p>,
        pods: impl IntoIterator<Item = (usize, &'p Pod)>,
    ) -> Vec<(usize, usize)> {
        let mut coverage = Vec::new();
        if self.pdbs.is_empty() {
            return coverage;
        }
        for (p, pod) in pods {
            let budgets = (seen.by_labels)
                .entry((&pod.namespace, &pod.labels))
                .or_insert_with(|| self.covering(pod).collect());
            coverage.extend(budgets.iter().map(|&i| (p, i)));
        }
        coverage
    }

    /// Whether every budget in `coverage` allows evicting all its pods at once; when not, the node is
    /// "risky": its drain will wait on evictions the API server refuses until replacements are ready.
    pub fn allows_all(&self, coverage: &[(usize, usize)]) -> bool {
        let mut budgets: Vec<usize> = coverage.iter().map(|&(_, i)| i).collect();
        budgets.sort_unstable();
        (budgets.chunk_by(|a, b| a == b))
            .all(|run| run.len() as i64 <= i64::from(self.remaining[run[0]]))
    }

    /// The pods of `coverage` a budget that allows no more disruptions covers, in order: what can block a pod
    /// whose node passed the drainability rules before, once other removals spent budgets.
    pub fn exhausted_pods<'c>(
        &'c self,
        coverage: &'c [(usize, usize)],
    ) -> impl Iterator<Item = usize> + 'c {
        let any = self.exhausted > 0;
        (coverage.iter())
            .filter(move |&&(_, i)| any && self.remaining[i] < 1)
            .map(|&(p, _)| p)
    }

    /// Counts the evictions of a removal that was committed, from its coverage.
    pub fn spend(&mut self, coverage: &[(usize, usize)]) {
        for &(_, i) in coverage {
            self.remaining[i] -= 1;
            if self.remaining[i] == 0 {
                self.exhausted += 1;
            }
        }
    }
}

/// The budgets found to cover each distinct namespace and labels, for one pass over a cluster's pods: the pods
/// of one workload carry equal labels, so selectors are matched once a workload, not once a pod (matching
/// per pod was a tenth of a 10,000-node loop).
#[derive(Default)]
pub struct Coverage<'p> {
    by_labels: FastMap<(&'p str, &'p Labels), Vec<usize>>,
}

/// Terminating for longer than its grace period plus upstream's 30 s: the kubelet is gone or stuck, and the
/// pod neither counts nor moves.
pub fn long_terminating(pod: &Pod, now: SystemTime) -> bool {
    let grace = Duration::from_secs(pod.disruption.grace_period_seconds + 30);
    pod.deleted
        .and_then(|t| now.duration_since(t).ok())
        .is_some_and(|late| late > grace)
}

/// Classifies one pod on a node being considered for removal, at `now`.
pub fn classify(pod: &Pod, rules: &Rules, pdbs: &PdbBudget, now: SystemTime) -> Verdict {
    let d = &pod.disruption;
    if d.mirror {
        return Verdict::Stays;
    }
    if long_terminating(pod, now) {
        return Verdict::Stays;
    }
    if pod.daemonset() {
        return Verdict::Stays;
    }
    let evicted = Verdict::Evicted {
        needs_place: !pod.expendable(rules.expendable_cutoff),
    };
    if d.safe_to_evict == SafeToEvict::Yes {
        return evicted;
    }
    if pod.phase == Phase::Terminal {
        return Verdict::Stays;
    }
    let blocks = |reason, why: String| Verdict::Blocks(reason, format!("{}: {why}", pod.key()));
    if d.safe_to_evict == SafeToEvict::OnCompletion {
        return blocks(
            Blocking::BlockedByOnCompletionPod,
            "safe-to-evict: on-completion, it runs until it finishes".into(),
        );
    }
    let replicated = match &pod.controller {
        None => false,
        Some(_) if rules.skip_custom_controllers => pod.replicated(),
        Some(_) => true,
    };
    if !replicated {
        let why = match &pod.controller {
            None => "no controller would recreate it".to_string(),
            Some(c) => format!(
                "its controller is a {} ({}), not a kind known to recreate evicted pods",
                c.kind, c.name
            ),
        };
        return blocks(Blocking::NotReplicated, why);
    }
    let covered = || pdbs.covering(pod).next().is_some();
    if rules.skip_system_pods && &*pod.namespace == "kube-system" && !covered() {
        let old = pod
            .created
            .and_then(|c| now.duration_since(c).ok())
            .is_some_and(|age| age > rules.system_pod_timeout);
        if !old {
            return blocks(
                Blocking::UnmovableKubeSystemPod,
                "kube-system pod without a PodDisruptionBudget".into(),
            );
        }
    }
    if d.safe_to_evict == SafeToEvict::No {
        return blocks(
            Blocking::NotSafeToEvictAnnotation,
            "annotated cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"".into(),
        );
    }
    if rules.skip_local_storage && !d.local_volumes.is_empty() {
        return blocks(
            Blocking::LocalStorageRequested,
            format!(
                "local storage in volume(s) {} (list them in cluster-autoscaler.kubernetes.io/\
                 safe-to-evict-local-volumes if losing them is fine)",
                d.local_volumes.join(", ")
            ),
        );
    }
    // While no budget is used up, none can block: the pod's budgets need not be looked for.
    if pdbs.exhausted > 0
        && let Some(i) = pdbs.covering(pod).find(|&i| pdbs.remaining[i] < 1)
    {
        let pdb = &pdbs.pdbs[i];
        return blocks(
            Blocking::NotEnoughPdb,
            format!(
                "PodDisruptionBudget {}/{} allows no more disruptions",
                pdb.namespace, pdb.name
            ),
        );
    }
    evicted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Controller, LabelSelector, Labels, Resources};

    fn pod(namespace: &str, kind: Option<&str>) -> Pod {
        let demand = Resources {
            cpu_millis: 100,
            pods: 1,
            ..Default::default()
        };
        Pod {
            labels: Labels::from([("app".to_string(), "web".to_string())]),
            controller: kind.map(|kind| {
                Arc::new(Controller {
                    kind: kind.into(),
                    name: "owner".into(),
                    uid: "u".into(),
                })
            }),
            node_name: Some("n1".into()),
            phase: Phase::Running,
            ..Pod::pending(namespace, "p", demand)
        }
    }

    fn pdb(allowed: i32) -> Pdb {
        Pdb {
            namespace: "default".into(),
            name: "web".into(),
            selector: Some(LabelSelector {
                match_labels: Labels::from([("app".to_string(), "web".to_string())]),
                expressions: vec![],
            }),
            disruptions_allowed: allowed,
        }
    }

    fn reason(verdict: Verdict) -> Option<Blocking> {
        match verdict {
            Verdict::Blocks(b, _) => Some(b),
            _ => None,
        }
    }

    #[test]
    fn each_rule_in_upstream_order() {
        let rules = Rules::default();
        let none = PdbBudget::new(&[]);
        let now = SystemTime::now();
        let movable = Verdict::Evicted { needs_place: true };
        assert_eq!(
            classify(&pod("default", Some("ReplicaSet")), &rules, &none, now),
            movable
        );
        assert_eq!(
            reason(classify(&pod("default", None), &rules, &none, now)),
            Some(Blocking::NotReplicated)
        );
        assert_eq!(
            reason(classify(
                &pod("default", Some("Rollout")),
                &rules,
                &none,
                now
            )),
            Some(Blocking::NotReplicated)
        );
        let custom_ok = Rules {
            skip_custom_controllers: false,
            ..rules
        };
        assert_eq!(
            classify(&pod("default", Some("Rollout")), &custom_ok, &none, now),
            movable
        );
        assert_eq!(
            classify(&pod("default", Some("DaemonSet")), &rules, &none, now),
            Verdict::Stays
        );
        let mut mirror = pod("kube-system", None);
        mirror.disruption.mirror = true;
        assert_eq!(classify(&mirror, &rules, &none, now), Verdict::Stays);

        // kube-system: blocked without a PDB, unless old; fine with one.
        let mut system = pod("kube-system", Some("ReplicaSet"));
        system.created = Some(now - Duration::from_secs(60));
        assert_eq!(
            reason(classify(&system, &rules, &none, now)),
            Some(Blocking::UnmovableKubeSystemPod)
        );
        system.created = Some(now - Duration::from_secs(7200));
        assert_eq!(classify(&system, &rules, &none, now), movable);
        let mut system_pdb = pdb(1);
        system_pdb.namespace = "kube-system".into();
        system.created = Some(now);
        let budgets = [system_pdb];
        assert_eq!(
            classify(&system, &rules, &PdbBudget::new(&budgets), now),
            movable
        );

        let mut annotated = pod("default", Some("ReplicaSet"));
        annotated.disruption.safe_to_evict = SafeToEvict::No;
        assert_eq!(
            reason(classify(&annotated, &rules, &none, now)),
            Some(Blocking::NotSafeToEvictAnnotation)
        );
        annotated.disruption.safe_to_evict = SafeToEvict::OnCompletion;
        assert_eq!(
            reason(classify(&annotated, &rules, &none, now)),
            Some(Blocking::BlockedByOnCompletionPod)
        );

        let mut local = pod("default", Some("StatefulSet"));
        local.disruption.local_volumes = vec!["scratch".into()];
        assert_eq!(
            reason(classify(&local, &rules, &none, now)),
            Some(Blocking::LocalStorageRequested)
        );
        let no_local_rule = Rules {
            skip_local_storage: false,
            ..rules
        };
        assert_eq!(classify(&local, &no_local_rule, &none, now), movable);
        // safe-to-evict "true" short-circuits everything after it, even an unowned pod with local data.
        let mut forced = pod("default", None);
        forced.disruption.local_volumes = vec!["scratch".into()];
        forced.disruption.safe_to_evict = SafeToEvict::Yes;
        assert_eq!(classify(&forced, &rules, &none, now), movable);

        let mut expendable = pod("default", Some("ReplicaSet"));
        expendable.priority = Some(-100);
        assert_eq!(
            classify(&expendable, &rules, &none, now),
            Verdict::Evicted { needs_place: false }
        );
        let mut done = pod("default", None);
        done.phase = Phase::Terminal;
        assert_eq!(classify(&done, &rules, &none, now), Verdict::Stays);
        let mut stuck = pod("default", None);
        stuck.deleted = Some(now - Duration::from_secs(120));
        assert_eq!(classify(&stuck, &rules, &none, now), Verdict::Stays);
    }

    #[test]
    fn pdbs_block_at_zero_and_are_spent_by_committed_removals() {
        let rules = Rules::default();
        let now = SystemTime::now();
        let web = pod("default", Some("ReplicaSet"));
        let blocked = [pdb(0)];
        assert_eq!(
            reason(classify(&web, &rules, &PdbBudget::new(&blocked), now)),
            Some(Blocking::NotEnoughPdb)
        );
        let one = [pdb(1)];
        let mut budget = PdbBudget::new(&one);
        assert!(matches!(
            classify(&web, &rules, &budget, now),
            Verdict::Evicted { .. }
        ));
        let mut seen = Coverage::default();
        let once = budget.coverage(&mut seen, [(7, &web)]);
        assert_eq!(once, [(7, 0)]);
        let twice = budget.coverage(&mut seen, [(7, &web), (8, &web)]);
        assert!(budget.allows_all(&once));
        assert!(!budget.allows_all(&twice), "two at once is risky");
        assert_eq!(budget.exhausted_pods(&twice).count(), 0);
        budget.spend(&once);
        assert_eq!(budget.exhausted_pods(&twice).collect::<Vec<_>>(), [7, 8]);
        assert_eq!(
            reason(classify(&web, &rules, &budget, now)),
            Some(Blocking::NotEnoughPdb),
            "the budget is spent by an earlier node of this pass"
        );
        // Another namespace's pods are not covered.
        let other = pod("other", Some("ReplicaSet"));
        assert!(matches!(
            classify(&other, &rules, &budget, now),
            Verdict::Evicted { .. }
        ));
    }

    /// Past a few budgets they are looked up by the labels a pod has: the same budgets, in the same order, as
    /// checking the pod against every one.
    #[test]
    fn indexed_budgets_cover_what_every_budget_checked_covers() {
        use crate::model::{Operator, Requirement};
        let labels = |pairs: &[(&str, &str)]| -> Labels {
            (pairs.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let budget = |i: usize, namespace: &str, selector: Option<LabelSelector>| Pdb {
            namespace: namespace.into(),
            name: format!("b{i}"),
            selector,
            disruptions_allowed: 1,
        };
        let matching = |pairs: &[(&str, &str)]| LabelSelector {
            match_labels: labels(pairs),
            expressions: vec![],
        };
        let tier_exists = LabelSelector {
            match_labels: Labels::new(),
            expressions: vec![Requirement {
                key: "tier".into(),
                operator: Operator::Exists,
                values: vec![],
            }],
        };
        let mut pdbs = Vec::new();
        for (i, app) in ["web", "api", "db", "cache"].iter().enumerate() {
            pdbs.push(budget(i, "default", Some(matching(&[("app", app)]))));
            pdbs.push(budget(
                10 + i,
                "shop",
                Some(matching(&[("app", app), ("tier", "front")])),
            ));
        }
        pdbs.push(budget(20, "default", Some(tier_exists)));
        pdbs.push(budget(21, "default", Some(LabelSelector::default())));
        pdbs.push(budget(22, "default", None));
        pdbs.push(budget(23, "shop", Some(matching(&[("tier", "front")]))));
        let budgets = PdbBudget::new(&pdbs);
        assert!(
            budgets.index.is_some(),
            "{} budgets are indexed",
            pdbs.len()
        );
        for namespace in ["default", "shop", "other"] {
            for pairs in [
                &[("app", "web")][..],
                &[("app", "api"), ("tier", "front")],
                &[("tier", "back")],
                &[("app", "db"), ("tier", "front"), ("x", "y")],
                &[],
            ] {
                let mut p = pod(namespace, Some("ReplicaSet"));
                p.labels = labels(pairs);
                let every: Vec<usize> = (0..pdbs.len())
                    .filter(|&i| pdbs[i].covers(namespace, &p.labels))
                    .collect();
                let indexed: Vec<usize> = budgets.covering(&p).collect();
                assert_eq!(indexed, every, "{namespace} {pairs:?}");
            }
        }
    }
}
