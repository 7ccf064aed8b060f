//! CapacityQuotas as the loop enforces them (cluster-autoscaler's `resourcequotas` tracker): what each valid
//! quota's matching nodes use (registered, upcoming and planned), and how many more nodes of a group's
//! template fit under every quota that matches the template's labels: upstream's `checkQuota`, the floor of
//! what is left over what one node adds, the tightest quota and resource winning.
//!
//! The cost is kept to one selector match per quota and set of label values a loop (`usage.rs`), and
//! per quota and template: the existing nodes are counted once into the [`QuotaBook`], whose ledger is then
//! moved by group as nodes are planned, wherever the cluster's totals move.

use crate::autoscaler::quotas::usage::usage_by_quota;
use crate::k8s::bytes_quantity;
use crate::model::{CapacityQuota, Node, QuotaSpec, ZONE_LABEL, quota_amount};
use crate::simulator::{Place, PlaceKind};
use std::sync::Arc;

/// The loop's valid quotas, what the registered nodes use of them, and what a new node of each group's
/// templates would add to each quota that matches it. Made once a loop, shared by every stage and fork.
#[derive(Debug, Default)]
pub struct QuotaBook {
    quotas: Vec<Quota>,
    /// Per quota, per limited resource: what the view's nodes use.
    existing: Vec<Vec<u64>>,
    /// Per node group: what a new node of each of its templates (one per zone) adds.
    groups: Vec<Vec<TemplateTakes>>,
}

/// One valid quota: its limited resources in the order of `limits`.
#[derive(Debug)]
struct Quota {
    name: String,
    spec: QuotaSpec,
    resources: Vec<String>,
    limits: Vec<u64>,
}

/// What a new node of one template adds: its zone (to tell a group's templates apart) and, for each quota
/// that matches it, the amount of each of the quota's resources.
#[derive(Debug)]
struct TemplateTakes {
    zone: Option<String>,
    takes: Vec<(usize, Vec<u64>)>,
}

impl QuotaBook {
    /// The book of `quotas` (those carrying a problem left out) over the view's `nodes` and each group's
    /// templates (`templates`, by group index; empty for a group with none).
    pub fn new<'a>(
        quotas: &[CapacityQuota],
        nodes: &[Arc<Node>],
        templates: impl IntoIterator<Item = &'a [Place]>,
    ) -> QuotaBook {
        let quotas: Vec<Quota> = (quotas.iter())
            .filter_map(|q| {
                let spec = q.valid()?.clone();
                let (resources, limits) =
                    (spec.limits.iter()).map(|(r, &l)| (r.clone(), l)).unzip();
                Some(Quota {
                    name: q.name.clone(),
                    spec,
                    resources,
                    limits,
                })
            })
            .collect();
        if quotas.is_empty() {
            return QuotaBook::default();
        }
        let specs: Vec<&QuotaSpec> = quotas.iter().map(|q| &q.spec).collect();
        let existing = usage_by_quota(&specs, nodes, quota_amount, u64::saturating_add);
        let groups = (templates.into_iter())
            .map(|places| {
                (places.iter())
                    .map(|t| TemplateTakes {
                        zone: t.node.labels.get(ZONE_LABEL).cloned(),
                        takes: (quotas.iter().enumerate())
                            .filter(|(_, q)| q.spec.matches(&t.node.labels))
                            .map(|(q, quota)| (q, amounts(quota, &t.node)))
                            .collect(),
                    })
                    .collect()
            })
            .collect();
        QuotaBook {
            quotas,
            existing,
            groups,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.quotas.is_empty()
    }

    /// What a new node of group `g` from `template` adds to the quotas matching it (`None`: no quota does).
    fn takes(&self, g: usize, template: &Node) -> Option<&[(usize, Vec<u64>)]> {
        let templates = self.groups.get(g)?;
        let found = match templates.as_slice() {
            [one] => one,
            many => {
                let zone = template.labels.get(ZONE_LABEL);
                many.iter().find(|t| t.zone.as_ref() == zone)?
            }
        };
        (!found.takes.is_empty()).then_some(found.takes.as_slice())
    }

    /// The names of the groups with a template some quota matches, for each quota, by quota.
    fn matched_groups(&self) -> Vec<Vec<usize>> {
        let mut matched = vec![Vec::new(); self.quotas.len()];
        for (g, templates) in self.groups.iter().enumerate() {
            for (q, groups) in matched.iter_mut().enumerate() {
                if templates
                    .iter()
                    .any(|t| t.takes.iter().any(|(tq, _)| *tq == q))
                {
                    groups.push(g);
                }
            }
        }
        matched
    }
}

fn amounts(quota: &Quota, node: &Node) -> Vec<u64> {
    (quota.resources.iter())
        .map(|r| quota_amount(node, r))
        .collect()
}

/// What each quota's matching nodes use, per resource, as the loop plans: the book's registered nodes, with
/// the upcoming and planned ones of each group.
#[derive(Clone, Debug, Default)]
pub struct QuotaLedger {
    book: Arc<QuotaBook>,
    used: Vec<Vec<u64>>,
}

impl QuotaLedger {
    /// What `places` use of `book`'s quotas: its registered nodes as the book counted them, and each other
    /// place (upcoming, planned) as its group's template.
    pub fn of(book: &Arc<QuotaBook>, places: &[Place]) -> QuotaLedger {
        let mut ledger = QuotaLedger {
            book: book.clone(),
            used: book.existing.clone(),
        };
        if book.is_empty() {
            return ledger;
        }
        for place in places {
            if place.kind != PlaceKind::Existing {
                ledger.add(place.group, &place.node, 1);
            }
        }
        ledger
    }

    /// `count` new nodes of group `group` from `template`, counted.
    pub fn add(&mut self, group: Option<usize>, template: &Node, count: u64) {
        let Some(takes) = group.and_then(|g| self.book.takes(g, template)) else {
            return;
        };
        for (q, amounts) in takes {
            for (sum, d) in self.used[*q].iter_mut().zip(amounts) {
                *sum = sum.saturating_add(d.saturating_mul(count));
            }
        }
    }

    /// How many nodes of group `g` from `template` fit under every quota matching it, and the quota that
    /// says so: `None` when no quota limits it. Among quotas allowing as few, the first by name.
    pub fn room(&self, g: usize, template: &Node) -> Option<(u64, QuotaLimit)> {
        let takes = self.book.takes(g, template)?;
        let mut tightest: Option<(u64, usize)> = None;
        for (q, amounts) in takes {
            let allowed = self.allowed(*q, amounts);
            // A tie goes to the first by name, whatever order the quotas were read in.
            let name = |q: usize| self.book.quotas[q].name.as_str();
            if tightest.is_none_or(|(n, t)| (allowed, name(*q)) < (n, name(t))) {
                tightest = Some((allowed, *q));
            }
        }
        let (allowed, q) = tightest?;
        let amounts = &takes.iter().find(|(tq, _)| *tq == q)?.1;
        let quota = &self.book.quotas[q];
        let resources = (quota.resources.iter().enumerate())
            .filter(|&(r, _)| amounts[r] > 0 && self.left(q, r) / amounts[r] == allowed)
            .map(|(r, name)| QuotaFigure {
                resource: name.clone(),
                used: self.used[q][r],
                limit: quota.limits[r],
                per_node: amounts[r],
            })
            .collect();
        let limit = QuotaLimit {
            name: quota.name.clone(),
            resources,
        };
        (allowed < u64::MAX).then_some((allowed, limit))
    }

    fn left(&self, q: usize, r: usize) -> u64 {
        self.book.quotas[q].limits[r].saturating_sub(self.used[q][r])
    }

    /// Upstream's checkQuota for one quota: the floor of what is left over what a node adds, for each
    /// resource a node adds some of.
    fn allowed(&self, q: usize, amounts: &[u64]) -> u64 {
        (amounts.iter().enumerate())
            .filter(|&(_, &d)| d > 0)
            .map(|(r, &d)| self.left(q, r) / d)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Each quota's name, limits and use now, and the groups whose templates it matches.
    pub fn usage(&self) -> Vec<QuotaUsage> {
        let book = &self.book;
        let matched = book.matched_groups();
        (book.quotas.iter().zip(&self.used).zip(matched))
            .map(|((quota, used), groups)| QuotaUsage {
                name: quota.name.clone(),
                resources: quota.resources.clone(),
                limits: quota.limits.clone(),
                used: used.clone(),
                groups,
            })
            .collect()
    }
}

/// One quota's figures at a moment, by resource in the order of `resources`.
#[derive(Clone, Debug)]
pub struct QuotaUsage {
    pub name: String,
    pub resources: Vec<String>,
    pub limits: Vec<u64>,
    pub used: Vec<u64>,
    /// The node groups (by index) whose templates it matches.
    pub groups: Vec<usize>,
}

/// The quota that stops a group, and the resources that stop it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaLimit {
    pub name: String,
    pub resources: Vec<QuotaFigure>,
}

/// One resource's figures: what the quota's nodes use (planned ones included), its limit, and what one more
/// node would add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaFigure {
    pub resource: String,
    pub used: u64,
    pub limit: u64,
    pub per_node: u64,
}

/// A resource's amount as people read it: memory and storage with a binary suffix, the rest as counts.
pub fn amount(resource: &str, n: u64) -> String {
    match resource {
        "memory" | "ephemeral-storage" => bytes_quantity(n),
        _ => n.to_string(),
    }
}

impl std::fmt::Display for QuotaLimit {
    /// Upstream's reason, `exceeded quota: "CapacityQuota/<name>", resources: <r1>, <r2>`, then the figures:
    /// ` (<r1> used <u> of <limit>, a node adds <d>; ...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = crate::model::quota_id(&self.name);
        let names: Vec<&str> = self.resources.iter().map(|r| r.resource.as_str()).collect();
        write!(f, "exceeded quota: {id:?}, resources: {}", names.join(", "))?;
        let figures: Vec<String> = (self.resources.iter())
            .map(|r| {
                let show = |n| amount(&r.resource, n);
                format!(
                    "{} used {} of {}, a node adds {}",
                    r.resource,
                    show(r.used),
                    show(r.limit),
                    show(r.per_node)
                )
            })
            .collect();
        write!(f, " ({})", figures.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LabelSelector, QuotaVersion, Resources};
    use crate::simulator::topology::Topology;

    fn node(pool: &str, cores: u64) -> Arc<Node> {
        Arc::new(Node {
            name: format!("{pool}-{cores}"),
            labels: [("pool".to_string(), pool.to_string())].into(),
            capacity: Resources {
                cpu_millis: cores * 1000,
                memory_bytes: 8 << 30,
                pods: 110,
                ..Resources::default()
            },
            ..Node::default()
        })
    }

    fn quota(name: &str, pool: Option<&str>, limits: &[(&str, u64)]) -> CapacityQuota {
        CapacityQuota {
            name: name.into(),
            version: Some(QuotaVersion::V1beta1),
            generation: 1,
            spec: Ok(QuotaSpec {
                selector: pool.map(|p| LabelSelector {
                    match_labels: [("pool".to_string(), p.to_string())].into(),
                    expressions: vec![],
                }),
                limits: limits.iter().map(|(r, l)| (r.to_string(), *l)).collect(),
            }),
            status: Default::default(),
        }
    }

    #[test]
    fn the_tightest_quota_and_resource_say_how_many_fit_and_planned_nodes_take_room() {
        let mut topology = Topology::default();
        let templates = [
            topology.place(node("gpu", 8), Some(0), PlaceKind::Planned),
            topology.place(node("cpu", 4), Some(1), PlaceKind::Planned),
        ];
        let quotas = [
            quota("gpu-pool", Some("gpu"), &[("cpu", 40), ("nodes", 10)]),
            quota("everything", None, &[("nodes", 7)]),
            quota("broken", None, &[]),
        ];
        let mut broken = quotas[2].clone();
        broken.spec = Err(crate::model::Invalid::value("bad"));
        let quotas = [quotas[0].clone(), quotas[1].clone(), broken];
        let nodes = [node("gpu", 8), node("gpu", 8), node("cpu", 4)];
        let book = Arc::new(QuotaBook::new(
            &quotas,
            &nodes,
            templates.iter().map(std::slice::from_ref),
        ));
        let mut ledger = QuotaLedger::of(&book, &[]);
        // gpu-pool: cpu 16 of 40 used, 8 a node: 3 more; everything: 3 of 7 nodes: 4 more.
        let (n, limit) = ledger.room(0, &templates[0].node).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            limit.to_string(),
            "exceeded quota: \"CapacityQuota/gpu-pool\", resources: cpu (cpu used 16 of 40, a node adds 8)"
        );
        let (n, limit) = ledger.room(1, &templates[1].node).unwrap();
        assert_eq!((n, limit.name.as_str()), (4, "everything"));
        // Two planned gpu nodes: the shared quota has 2 nodes left for either group.
        ledger.add(Some(0), &templates[0].node, 2);
        assert_eq!(ledger.room(0, &templates[0].node).unwrap().0, 1);
        let (n, limit) = ledger.room(1, &templates[1].node).unwrap();
        assert_eq!(n, 2);
        assert_eq!(limit.resources[0].used, 5);
        let usage = ledger.usage();
        assert_eq!(usage.len(), 2, "the invalid quota is not enforced");
        assert_eq!(usage[0].groups, [0]);
        assert_eq!(usage[1].groups, [0, 1]);
        assert_eq!(usage[0].used, [32, 4]);
    }

    #[test]
    fn without_quotas_nothing_is_limited() {
        let book = Arc::new(QuotaBook::new(&[], &[node("a", 1)], []));
        let ledger = QuotaLedger::of(&book, &[]);
        assert!(ledger.room(0, &node("a", 1)).is_none());
        assert!(ledger.usage().is_empty());
    }
}
