//! Which of an estimation's new nodes hold pods that a hostname-keyed term matches, or that hold it as
//! anti-affinity: one bit per node and term. A pod with hostname affinity may only join a node holding a
//! partner, and one with hostname anti-affinity (or matched by another pod's) only a node without. Checked
//! node by node, a first fit for such pods is quadratic: on Karpenter's mix a sixth of the pods keep apart,
//! and each of them was offered every node the others had taken. With the marks a first fit passes over the
//! nodes these terms refuse 64 at a time, and checks only the others, in the same order as before.
//!
//! Marks are only ever set: an estimation only adds pods, so a node a term refuses stays refused, and the
//! open nodes computed before a pass are a superset of those that would take the pod during it.

use super::topology::{PodTerms, TermId, Topology};

type Bits = Vec<u64>;

fn set(bits: &mut Bits, n: usize) {
    let word = n / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (n % 64);
}

fn word(bits: &[u64], w: usize) -> u64 {
    bits.get(w).copied().unwrap_or(0)
}

/// Per hostname-keyed term, the nodes (by index in the estimation's list) that hold its pods.
#[derive(Clone, Debug, Default)]
pub struct HostMarks {
    per_host: Vec<bool>,
    /// `[term]`: nodes holding a pod the term matches.
    matched: Vec<Bits>,
    /// `[term]`: nodes holding a pod with the term as required anti-affinity.
    held: Vec<Bits>,
}

impl HostMarks {
    pub fn new(topology: &Topology) -> HostMarks {
        let per_host = topology.per_host_terms();
        let empty = vec![Bits::new(); per_host.len()];
        HostMarks {
            per_host,
            matched: empty.clone(),
            held: empty,
        }
    }

    /// Pods with `terms` were put on node `n`.
    pub fn put(&mut self, terms: &PodTerms, n: usize) {
        for &t in terms.matched_by() {
            if self.per_host[t] {
                set(&mut self.matched[t], n);
            }
        }
        for &t in terms.anti() {
            if self.per_host[t] {
                set(&mut self.held[t], n);
            }
        }
    }

    /// The first `len` nodes that a pod with `terms` is not refused by its hostname terms (nor by other
    /// pods' hostname anti-affinity) as they stand.
    pub fn open(&self, topology: &Topology, terms: &PodTerms, len: usize) -> Open {
        let words = len.div_ceil(64);
        let host = |t: &TermId| self.per_host[*t];
        let avoid: Vec<&Bits> = (terms.anti().iter().filter(|t| host(t)))
            .map(|&t| &self.matched[t])
            .chain((terms.blocked_by().iter().filter(|t| host(t))).map(|&t| &self.held[t]))
            .collect();
        // A term the pod matches itself lets the first such pod go anywhere: no node is refused for it yet.
        let join: Vec<&Bits> = (terms.affinity().iter())
            .filter(|&&(t, own)| host(&t) && !(own && topology.total(t) == 0))
            .map(|&(t, _)| &self.matched[t])
            .collect();
        if avoid.is_empty() && join.is_empty() {
            return Open { bits: None, len };
        }
        let bits = (0..words)
            .map(|w| {
                let mut open = if w + 1 == words && !len.is_multiple_of(64) {
                    (1u64 << (len % 64)) - 1
                } else {
                    u64::MAX
                };
                for bits in &avoid {
                    open &= !word(bits, w);
                }
                for bits in &join {
                    open &= word(bits, w);
                }
                open
            })
            .collect();
        Open {
            bits: Some(bits),
            len,
        }
    }
}

/// Nodes a pod may be offered: every one below `len`, or those whose bit is set.
#[derive(Debug)]
pub struct Open {
    bits: Option<Bits>,
    len: usize,
}

impl Open {
    /// The first open node at or after `from`.
    pub fn next(&self, from: usize) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let Some(bits) = &self.bits else {
            return Some(from);
        };
        let mut w = from / 64;
        let mut current = bits[w] & (u64::MAX << (from % 64));
        loop {
            if current != 0 {
                return Some(w * 64 + current.trailing_zeros() as usize);
            }
            w += 1;
            current = *bits.get(w)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open nodes from `from` on, in order.
    fn from(open: &Open, from: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(open.next(from), |&n| open.next(n + 1))
    }
    use crate::model::{
        HOSTNAME_LABEL, LabelSelector, Pod, PodAffinityTerm, Resources, Scheduling,
    };
    use std::sync::Arc;

    fn term(app: &str, key: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            selector: LabelSelector {
                match_labels: [("app".to_string(), app.to_string())].into(),
                expressions: vec![],
            },
            topology_key: key.to_string(),
            namespaces: None,
        }
    }

    fn pod(app: &str, scheduling: Scheduling) -> Pod {
        Pod {
            labels: [("app".to_string(), app.to_string())].into(),
            scheduling: Arc::new(scheduling),
            ..Pod::pending("default", app, Resources::default())
        }
    }

    fn opened(open: &Open) -> Vec<usize> {
        from(open, 0).collect()
    }

    #[test]
    fn hostname_terms_open_only_the_nodes_they_allow_and_zonal_terms_open_all() {
        let apart = pod(
            "web",
            Scheduling {
                anti_affinity: vec![term("web", HOSTNAME_LABEL)],
                ..Default::default()
            },
        );
        let beside = pod(
            "cache",
            Scheduling {
                affinity: vec![term("web", HOSTNAME_LABEL)],
                ..Default::default()
            },
        );
        let zonal = pod(
            "batch",
            Scheduling {
                affinity: vec![term("web", "topology.kubernetes.io/zone")],
                ..Default::default()
            },
        );
        let plain = pod("db", Scheduling::default());
        let mut topology = Topology::default();
        for p in [&apart, &beside, &zonal, &plain] {
            topology.register(p);
        }
        let terms = |p: &Pod| topology.resolve(p);
        let mut marks = HostMarks::new(&topology);
        // 130 nodes (three words); `web` pods on nodes 3, 64 and 129.
        for n in [3, 64, 129] {
            marks.put(&terms(&apart), n);
        }
        let web = [3, 64, 129];
        let len = 130;
        let all: Vec<usize> = (0..len).collect();
        let without: Vec<usize> = all.iter().copied().filter(|n| !web.contains(n)).collect();
        assert_eq!(opened(&marks.open(&topology, &terms(&apart), len)), without);
        assert_eq!(opened(&marks.open(&topology, &terms(&beside), len)), web);
        assert_eq!(opened(&marks.open(&topology, &terms(&zonal), len)), all);
        assert_eq!(opened(&marks.open(&topology, &terms(&plain), len)), all);
        // Only the first `len` nodes are open; a search starts where it is asked to.
        assert_eq!(
            opened(&marks.open(&topology, &terms(&beside), 100)),
            [3, 64]
        );
        let open = marks.open(&topology, &terms(&beside), len);
        assert_eq!(from(&open, 4).collect::<Vec<_>>(), [64, 129]);
        assert_eq!(from(&open, 130).next(), None);
        let open = marks.open(&topology, &terms(&plain), 3);
        assert_eq!(from(&open, 1).collect::<Vec<_>>(), [1, 2]);
    }
}
