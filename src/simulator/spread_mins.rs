//! The least-filled domain of each topology spread, kept across the pods placed on one list of places.
//!
//! kube-scheduler's PodTopologySpread compares the count in a node's domain with the minimum over every
//! domain the pod may use. Counting that minimum over every place for each pod a spread stops made
//! Karpenter's mix quadratic (thousands of spread pods, thousands of nodes). Here each spread keeps the
//! domains of the list (each once), its minimum, and the domains that were at the minimum when it was
//! counted. Places added at the end of the list are folded in; while one of those domains is still at the
//! minimum, the minimum holds; only when all have grown past it is it counted again, over the domains
//! rather than the places. Counts must only grow while a [`SpreadMins`] is in use (placing pods does
//! that); the owner of a list that takes pods off starts a new one.

use crate::model::FastMap;

/// What is known of the spreads' minimums over one list of places: owned with the list (an estimation's
/// nodes, the cluster's places).
#[derive(Clone, Debug, Default)]
pub struct SpreadMins {
    /// By term id and the pod it was counted for (0 when the term alone decides which places are domains).
    known: FastMap<(usize, usize), KnownMin>,
}

/// What the spread checks of one list of places carry besides the list itself: the minimums known over it
/// (`mins`) and the places outside it that count as domains too (`others`, placed before the list).
pub struct SpreadScope<'a, P> {
    pub(super) mins: &'a mut SpreadMins,
    pub(super) others: &'a [P],
}

/// One spread's domains over the list `others` then `places` (of places `P`), as the topology counts them.
pub(super) struct Domains<'a, P> {
    pub others: &'a [P],
    pub places: &'a [P],
    /// A place's domain, when the spread counts the place.
    pub domain: &'a dyn Fn(&P) -> Option<u32>,
    /// The pods the spread's term matches in a domain.
    pub count: &'a dyn Fn(u32) -> u32,
    /// How many times the term's counts have changed.
    pub changes: u64,
    /// Places made so far by the topology.
    pub made: u64,
}

#[derive(Clone, Debug, Default)]
struct KnownMin {
    /// Whether the fields below describe the list up to `others` and `places` (before the first count,
    /// nothing is known and 0 stands for the minimum).
    ready: bool,
    /// The domains, each once, and which domain ids are among them.
    domains: Vec<u32>,
    listed: Vec<bool>,
    /// A lower bound of the least count: counts only grow.
    min: u32,
    /// Domains whose count was `min`: while one still is, `min` is the least count.
    at_min: Vec<u32>,
    /// The term's change count when `min` was last known to be the least count.
    exact_at: Option<u64>,
    others: usize,
    places: usize,
    made: u64,
}

impl SpreadMins {
    /// These minimums, for a list whose spreads also count `others` as domains.
    pub fn with_others<'a, P>(&'a mut self, others: &'a [P]) -> SpreadScope<'a, P> {
        SpreadScope { mins: self, others }
    }

    /// Whether `after` pods in a domain (whose count is `here` now) keep the spread `key` within
    /// `max_skew` of its least-filled domain, taken as 0 when there are fewer than `min_domains` domains.
    pub(super) fn within<P>(
        &mut self,
        key: (usize, usize),
        (after, here): (u32, u32),
        (max_skew, min_domains): (u32, u32),
        lists: &Domains<P>,
    ) -> bool {
        let known = self.known.entry(key).or_default();
        known.catch_up(lists);
        // A lower bound says yes for the minimum; a no is checked against the minimum itself.
        let bound = known.lower_bound(min_domains).min(here);
        if after <= bound.saturating_add(max_skew) {
            return true;
        }
        let min = known.exact_min(lists, min_domains).min(here);
        after <= min.saturating_add(max_skew)
    }
}

impl KnownMin {
    /// Folds in the places added to the end of the list; forgets everything when it changed otherwise.
    fn catch_up<P>(&mut self, lists: &Domains<P>) {
        if !self.ready {
            return;
        }
        let appended = self.others == lists.others.len()
            && self.places <= lists.places.len()
            && lists.made - self.made == (lists.places.len() - self.places) as u64;
        if !appended {
            *self = KnownMin::default();
            return;
        }
        for place in &lists.places[self.places..] {
            if let Some(d) = (lists.domain)(place).filter(|&d| self.list(d)) {
                self.meet(d, (lists.count)(d));
            }
        }
        self.places = lists.places.len();
        self.made = lists.made;
    }

    /// Adds domain `d`; false when it was there already.
    fn list(&mut self, d: u32) -> bool {
        let i = d as usize;
        if self.listed.len() <= i {
            self.listed.resize(i + 1, false);
        }
        let new = !self.listed[i];
        if new {
            self.listed[i] = true;
            self.domains.push(d);
        }
        new
    }

    fn lower_bound(&self, min_domains: u32) -> u32 {
        if !self.ready || (self.domains.len() as u64) < u64::from(min_domains) {
            0
        } else {
            self.min
        }
    }

    /// The least count, counted when the counts have changed and every domain at the old minimum grew.
    fn exact_min<P>(&mut self, lists: &Domains<P>, min_domains: u32) -> u32 {
        if !self.ready {
            *self = KnownMin {
                ready: true,
                others: lists.others.len(),
                places: lists.places.len(),
                made: lists.made,
                ..KnownMin::default()
            };
            for place in lists.others.iter().chain(lists.places) {
                if let Some(d) = (lists.domain)(place) {
                    self.list(d);
                }
            }
            self.recount(lists);
        } else if self.exact_at != Some(lists.changes) {
            while let Some(&d) = self.at_min.last() {
                if (lists.count)(d) == self.min {
                    break;
                }
                self.at_min.pop();
            }
            if self.at_min.is_empty() {
                self.recount(lists);
            } else {
                self.exact_at = Some(lists.changes);
            }
        }
        self.lower_bound(min_domains)
    }

    fn recount<P>(&mut self, lists: &Domains<P>) {
        self.min = u32::MAX;
        self.at_min.clear();
        for i in 0..self.domains.len() {
            let d = self.domains[i];
            self.meet(d, (lists.count)(d));
        }
        self.exact_at = Some(lists.changes);
    }

    /// Domain `d`, holding `count`, is one the minimum is taken over.
    fn meet(&mut self, d: u32, count: u32) {
        if count < self.min {
            self.min = count;
            self.at_min.clear();
        }
        if count == self.min {
            self.at_min.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of places, each a domain id (or none), with counts per domain that only grow: the answers
    /// of one [`SpreadMins`] kept across every step are compared with a count from scratch at each step.
    #[test]
    fn kept_minimums_answer_as_a_count_from_scratch() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..40 {
            let mut mins = SpreadMins::default();
            let mut others: Vec<Option<u32>> = (0..draw(4)).map(|_| Some(draw(6) as u32)).collect();
            let mut places: Vec<Option<u32>> = Vec::new();
            let mut counts = vec![0u32; 24];
            let (mut changes, mut made) = (0u64, (others.len() as u64));
            let (max_skew, min_domains) = (1 + draw(2) as u32, 1 + draw(4) as u32);
            let mut agreed = (0, 0);
            for _ in 0..400 {
                match draw(10) {
                    // A pod more in a domain of the list (so that the least-filled ones fill up), or
                    // in any.
                    0..=3 => {
                        let listed: Vec<u32> =
                            others.iter().chain(&places).flatten().copied().collect();
                        let d = match listed.get(draw(listed.len() as u64 + 1) as usize) {
                            Some(&d) => d,
                            None => draw(24) as u32,
                        };
                        counts[d as usize] += 1;
                        changes += 1;
                    }
                    // A place at the end, in a new domain (a hostname) or a shared one (a zone), or
                    // one the spread does not count.
                    4 | 5 => {
                        let d = match draw(3) {
                            0 => None,
                            1 => Some(draw(6) as u32),
                            _ => Some(6 + draw(18) as u32),
                        };
                        places.push(d);
                        made += 1;
                    }
                    // The last place taken back and another put there: the list did not only grow.
                    6 if !places.is_empty() => {
                        places.pop();
                        places.push(Some(draw(24) as u32));
                        made += 2;
                    }
                    // A pod asks about the domain of one of the places.
                    _ => {
                        let all: Vec<u32> =
                            others.iter().chain(&places).flatten().copied().collect();
                        let Some(&d) = all.get(draw(all.len().max(1) as u64) as usize) else {
                            continue;
                        };
                        let here = counts[d as usize];
                        let after = here + draw(2) as u32;
                        let mut distinct = all.clone();
                        distinct.sort_unstable();
                        distinct.dedup();
                        let least = all.iter().map(|&d| counts[d as usize]).min().unwrap();
                        let least = if (distinct.len() as u32) < min_domains {
                            0
                        } else {
                            least
                        };
                        let expected = after <= least + max_skew;
                        let counts_now = counts.clone();
                        let lists = Domains {
                            others: &others,
                            places: &places,
                            domain: &|p: &Option<u32>| *p,
                            count: &|d| counts_now[d as usize],
                            changes,
                            made,
                        };
                        let got =
                            mins.within((0, 0), (after, here), (max_skew, min_domains), &lists);
                        assert_eq!(got, expected, "round {round}: {after} pods in domain {d}");
                        if got {
                            agreed.0 += 1;
                        } else {
                            agreed.1 += 1;
                        }
                    }
                }
            }
            // Both answers were asked for, so both paths were checked.
            assert!(agreed.0 > 0 && agreed.1 > 0, "round {round}: {agreed:?}");
            others.clear();
        }
    }
}
