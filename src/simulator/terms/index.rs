//! Which registered terms may match a pod, found from the pod's own labels: a term is filed under one label
//! its selector requires (a `matchLabels` pair, or an `In` requirement's key and values), so resolving a pod
//! reads the terms filed under its labels and checks only those. Checking every term for every pending pod
//! grew as equivalence groups x terms: 5,000 Deployments each spread by its own label made 25 million
//! selector matches a loop.

use crate::model::{LabelSelector, Labels, Operator};
use std::collections::HashMap;

/// Term ids by a label their selector requires; the terms that require none are checked for every pod.
#[derive(Clone, Debug, Default)]
pub struct TermIndex {
    /// key -> value -> terms whose selector requires that label.
    by_label: HashMap<String, HashMap<String, Vec<usize>>>,
    /// Terms whose selector requires no one label value (empty, or only `NotIn`, `Exists`, ...).
    loose: Vec<usize>,
}

impl TermIndex {
    /// Files term `id` under a label `selector` requires.
    pub fn add(&mut self, id: usize, selector: &LabelSelector) {
        if let Some((key, value)) = selector.match_labels.iter().next() {
            self.file(key, value, id);
            return;
        }
        let required = (selector.expressions.iter()).find(|r| r.operator == Operator::In);
        match required {
            // A pod matches only with one of the values: filed under each (none: it matches nothing).
            Some(r) => r.values.iter().for_each(|v| self.file(&r.key, v, id)),
            None => self.loose.push(id),
        }
    }

    fn file(&mut self, key: &str, value: &str, id: usize) {
        let values = self.by_label.entry(key.to_string()).or_default();
        values.entry(value.to_string()).or_default().push(id);
    }

    /// The terms that may match a pod with `labels`, ascending; each must still be checked in full.
    pub fn candidates(&self, labels: &Labels) -> Vec<usize> {
        let mut out = self.loose.clone();
        for (key, value) in labels {
            let filed = self.by_label.get(key).and_then(|values| values.get(value));
            if let Some(ids) = filed {
                out.extend_from_slice(ids);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Requirement;

    #[test]
    fn every_term_a_pod_matches_is_a_candidate() {
        let selectors = [
            LabelSelector {
                match_labels: Labels::of(&[("app", "web"), ("tier", "front")]),
                expressions: vec![],
            },
            LabelSelector {
                match_labels: Labels::new(),
                expressions: vec![Requirement {
                    key: "app".into(),
                    operator: Operator::In,
                    values: vec!["web".into(), "api".into()],
                }],
            },
            LabelSelector {
                match_labels: Labels::new(),
                expressions: vec![Requirement {
                    key: "app".into(),
                    operator: Operator::NotIn,
                    values: vec!["db".into()],
                }],
            },
            LabelSelector::default(),
            LabelSelector::nothing(),
            LabelSelector {
                match_labels: Labels::of(&[("app", "db")]),
                expressions: vec![],
            },
        ];
        let mut index = TermIndex::default();
        for (id, s) in selectors.iter().enumerate() {
            index.add(id, s);
        }
        for pod in [
            Labels::of(&[("app", "web"), ("tier", "front")]),
            Labels::of(&[("app", "web")]),
            Labels::of(&[("app", "api")]),
            Labels::of(&[("app", "db")]),
            Labels::of(&[]),
        ] {
            let candidates = index.candidates(&pod);
            for (id, s) in selectors.iter().enumerate() {
                if s.matches(&pod) {
                    assert!(candidates.contains(&id), "{pod:?} matches term {id}");
                }
            }
            assert!(
                !candidates.contains(&4),
                "a selector that matches nothing is never a candidate"
            );
        }
        // A pod labelled only app=db is not offered the web terms.
        assert_eq!(index.candidates(&Labels::of(&[("app", "db")])), [2, 3, 5]);
    }
}
