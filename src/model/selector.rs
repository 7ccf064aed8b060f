//! Label selectors (pods) and node selector terms (node affinity), matched as the scheduler matches them.

use super::labels::Labels;

/// One requirement on one label key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    /// Node affinity only: the label's value as an integer is greater (or less) than the one value.
    Gt,
    Lt,
}

impl Operator {
    pub fn parse(text: &str) -> Option<Operator> {
        Some(match text {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }

    /// The API's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

impl Requirement {
    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.key);
        let number = |v: &str| v.parse::<i64>().ok();
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Gt | Operator::Lt => {
                let (Some(have), Some(bound)) = (
                    value.and_then(|v| number(v)),
                    self.values.first().and_then(|v| number(v)),
                ) else {
                    return false;
                };
                if self.operator == Operator::Gt {
                    have > bound
                } else {
                    have < bound
                }
            }
        }
    }
}

/// A pod label selector: `matchLabels` and `matchExpressions`, all of which must hold. The empty selector
/// matches everything; a selector that was absent is `None` where it appears and matches nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    pub match_labels: Labels,
    pub expressions: Vec<Requirement>,
}

impl LabelSelector {
    /// A selector no labels satisfy: what Kubernetes makes of a term whose selector is absent.
    pub fn nothing() -> LabelSelector {
        LabelSelector {
            match_labels: Labels::new(),
            expressions: vec![Requirement {
                key: String::new(),
                operator: Operator::In,
                values: Vec::new(),
            }],
        }
    }

    /// The label keys it reads.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.match_labels
            .keys()
            .chain(self.expressions.iter().map(|r| &r.key))
            .map(String::as_str)
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.expressions.iter().all(|r| r.matches(labels))
    }
}

/// The node field `matchFields` can name: kube-scheduler supports only the node's name.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// Required node affinity: the node must satisfy any one term, and a term is all of its requirements.
/// A term with no requirements matches no node, as in Kubernetes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeSelector {
    pub terms: Vec<NodeSelectorTerm>,
}

/// One term: `matchExpressions` on the node's labels and `matchFields` on its fields (only
/// [`NODE_NAME_FIELD`], with `In` or `NotIn`: what the DaemonSet controller pins each of its pods with).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeSelectorTerm {
    pub expressions: Vec<Requirement>,
    pub fields: Vec<Requirement>,
}

impl NodeSelectorTerm {
    fn matches(&self, name: &str, labels: &Labels) -> bool {
        if self.expressions.is_empty() && self.fields.is_empty() {
            return false;
        }
        let fields = Labels::from([(NODE_NAME_FIELD.to_string(), name.to_string())]);
        self.expressions.iter().all(|r| r.matches(labels))
            && self.fields.iter().all(|r| r.matches(&fields))
    }
}

impl NodeSelector {
    /// Whether the node named `name` with `labels` satisfies it.
    pub fn matches(&self, name: &str, labels: &Labels) -> bool {
        self.terms.iter().any(|term| term.matches(name, labels))
    }

    /// The same without the per-node `metadata.name` requirements the DaemonSet controller adds to each of
    /// its pods: what the DaemonSet asks of any node. `None` when nothing else was asked.
    pub fn without_node_names(&self) -> Option<NodeSelector> {
        let terms: Vec<NodeSelectorTerm> = self
            .terms
            .iter()
            .filter_map(|term| {
                let fields: Vec<Requirement> = term
                    .fields
                    .iter()
                    .filter(|r| r.key != NODE_NAME_FIELD)
                    .cloned()
                    .collect();
                let pinned = fields.len() < term.fields.len();
                let left = NodeSelectorTerm {
                    expressions: term.expressions.clone(),
                    fields,
                };
                // A term that only named the node said nothing about other nodes.
                (!pinned || !left.expressions.is_empty() || !left.fields.is_empty()).then_some(left)
            })
            .collect();
        (!terms.is_empty()).then_some(NodeSelector { terms })
    }
}

/// A lowercase RFC 1123 DNS subdomain, as a label key's prefix must be.
pub fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// A label key's name part, as a non-empty label value is: at most 63 of `[A-Za-z0-9._-]`, alphanumeric at
/// both ends.
pub fn is_label_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, operator: Operator, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn every_operator() {
        let node = labels(&[("zone", "a"), ("cores", "8")]);
        assert!(req("zone", Operator::In, &["a", "b"]).matches(&node));
        assert!(!req("zone", Operator::In, &["c"]).matches(&node));
        assert!(req("zone", Operator::NotIn, &["c"]).matches(&node));
        assert!(
            req("missing", Operator::NotIn, &["c"]).matches(&node),
            "absent is not in"
        );
        assert!(req("zone", Operator::Exists, &[]).matches(&node));
        assert!(req("missing", Operator::DoesNotExist, &[]).matches(&node));
        assert!(req("cores", Operator::Gt, &["4"]).matches(&node));
        assert!(!req("cores", Operator::Lt, &["4"]).matches(&node));
        assert!(
            !req("zone", Operator::Gt, &["4"]).matches(&node),
            "not a number"
        );
        assert!(!req("missing", Operator::Gt, &["4"]).matches(&node));
    }

    #[test]
    fn selectors_and_terms() {
        let pod = labels(&[("app", "web"), ("tier", "front")]);
        assert!(LabelSelector::default().matches(&pod), "empty selects all");
        assert!(!LabelSelector::nothing().matches(&pod));
        assert!(!LabelSelector::nothing().matches(&Labels::new()));
        let selector = LabelSelector {
            match_labels: labels(&[("app", "web")]),
            expressions: vec![req("tier", Operator::In, &["front"])],
        };
        assert!(selector.matches(&pod));
        assert!(!selector.matches(&labels(&[("app", "web")])));

        let term = |expressions: Vec<Requirement>| NodeSelectorTerm {
            expressions,
            fields: vec![],
        };
        let affinity = NodeSelector {
            terms: vec![
                term(vec![req("zone", Operator::In, &["b"])]),
                term(vec![req("zone", Operator::In, &["a"])]),
            ],
        };
        assert!(
            affinity.matches("n", &labels(&[("zone", "a")])),
            "terms are ORed"
        );
        let empty_term = NodeSelector {
            terms: vec![term(vec![])],
        };
        assert!(!empty_term.matches("n", &labels(&[("zone", "a")])));
    }

    #[test]
    fn match_fields_pin_a_node_by_name_and_daemonsets_lose_the_pin() {
        let zone_a = labels(&[("zone", "a")]);
        // As the DaemonSet controller writes it for node ip-1, over the DaemonSet's own zone requirement.
        let pinned = NodeSelector {
            terms: vec![NodeSelectorTerm {
                expressions: vec![req("zone", Operator::In, &["a"])],
                fields: vec![req(NODE_NAME_FIELD, Operator::In, &["ip-1"])],
            }],
        };
        assert!(pinned.matches("ip-1", &zone_a));
        assert!(!pinned.matches("ip-2", &zone_a), "another node");
        assert!(!pinned.matches("ip-1", &labels(&[("zone", "b")])));
        let not_here = NodeSelector {
            terms: vec![NodeSelectorTerm {
                expressions: vec![],
                fields: vec![req(NODE_NAME_FIELD, Operator::NotIn, &["ip-1"])],
            }],
        };
        assert!(!not_here.matches("ip-1", &zone_a));
        assert!(not_here.matches("ip-2", &zone_a));

        let general = pinned
            .without_node_names()
            .expect("the zone requirement stays");
        assert!(general.matches("template-node", &zone_a));
        assert!(!general.matches("template-node", &labels(&[("zone", "b")])));
        let only_pin = NodeSelector {
            terms: vec![NodeSelectorTerm {
                expressions: vec![],
                fields: vec![req(NODE_NAME_FIELD, Operator::In, &["ip-1"])],
            }],
        };
        assert_eq!(only_pin.without_node_names(), None, "any node will do");
    }
}
