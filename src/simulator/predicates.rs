//! The scheduler's filters that depend on the pod and one node only: node selector and affinity, taints,
//! resources. The ones that depend on where other pods sit (ports, pod affinity, topology spread) live with
//! the placement state in `world.rs`. Reasons read like the scheduler's own messages.

use crate::model::{Node, Resources, Scheduling, Taint};
use std::collections::BTreeMap;
use std::fmt;

/// Why a pod cannot go on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unfit {
    NotReady,
    Unschedulable,
    NodeAffinity,
    Taint(Taint),
    /// Every resource short, in kube-scheduler's order (pods, cpu, memory, ephemeral-storage, then the
    /// others).
    Insufficient(Vec<String>),
    HostPorts,
    Affinity,
    AntiAffinity,
    Spread,
    MissingTopology(String),
    /// Its ResourceClaims cannot be allocated (or used) on the node: why, in the scheduler's words.
    Claims(String),
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::NotReady => write!(f, "node(s) were not ready"),
            Unfit::Unschedulable => write!(f, "node(s) were unschedulable"),
            Unfit::NodeAffinity => write!(f, "node(s) didn't match Pod's node affinity/selector"),
            Unfit::Taint(t) => write!(
                f,
                "node(s) had untolerated taint {{{}: {}}} ({})",
                t.key,
                t.value,
                t.effect.as_str()
            ),
            Unfit::Insufficient(resources) => {
                for (i, resource) in resources.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if resource == "pods" {
                        f.write_str("Too many pods")?;
                    } else {
                        write!(f, "Insufficient {resource}")?;
                    }
                }
                Ok(())
            }
            Unfit::HostPorts => {
                write!(
                    f,
                    "node(s) didn't have free ports for the requested pod ports"
                )
            }
            Unfit::Affinity => write!(f, "node(s) didn't match pod affinity rules"),
            Unfit::AntiAffinity => write!(f, "node(s) didn't match pod anti-affinity rules"),
            Unfit::Spread => write!(f, "node(s) didn't match pod topology spread constraints"),
            Unfit::Claims(why) => f.write_str(why),
            Unfit::MissingTopology(key) => write!(
                f,
                "node(s) didn't match pod topology spread constraints (missing required label {key})"
            ),
        }
    }
}

/// Node selector, required node affinity and taints (NoSchedule, NoExecute).
pub fn node_fit(scheduling: &Scheduling, node: &Node) -> Result<(), Unfit> {
    if !scheduling.node_matches(&node.name, &node.labels) {
        return Err(Unfit::NodeAffinity);
    }
    if let Some(taint) = crate::model::untolerated(&node.taints, &scheduling.tolerations) {
        return Err(Unfit::Taint(taint.clone()));
    }
    Ok(())
}

/// Whether `demand` (and its extended resources) fits in what is free, naming every resource short as the
/// scheduler does.
pub fn resources_fit(
    demand: &Resources,
    extended: &BTreeMap<String, u64>,
    free: &Resources,
    free_extended: &BTreeMap<String, u64>,
) -> Result<(), Unfit> {
    let mut short = Vec::new();
    let mut check = |name: &str, want: u64, have: u64| {
        if want > have {
            short.push(name.to_string());
        }
    };
    check("pods", demand.pods, free.pods);
    check("cpu", demand.cpu_millis, free.cpu_millis);
    check("memory", demand.memory_bytes, free.memory_bytes);
    check(
        "ephemeral-storage",
        demand.ephemeral_storage_bytes,
        free.ephemeral_storage_bytes,
    );
    check(crate::model::GPU_RESOURCE, demand.gpus, free.gpus);
    for (name, amount) in extended {
        check(name, *amount, free_extended.get(name).copied().unwrap_or(0));
    }
    if short.is_empty() {
        Ok(())
    } else {
        Err(Unfit::Insufficient(short))
    }
}

/// How many pods of `demand` fit in `free` (resources only), in closed form: the estimator's fast path.
pub fn how_many(
    demand: &Resources,
    extended: &BTreeMap<String, u64>,
    free: &Resources,
    free_extended: &BTreeMap<String, u64>,
) -> u64 {
    let each = |want: u64, have: u64| have.checked_div(want).unwrap_or(u64::MAX);
    let mut n = each(demand.pods, free.pods)
        .min(each(demand.cpu_millis, free.cpu_millis))
        .min(each(demand.memory_bytes, free.memory_bytes))
        .min(each(
            demand.ephemeral_storage_bytes,
            free.ephemeral_storage_bytes,
        ))
        .min(each(demand.gpus, free.gpus));
    for (name, amount) in extended {
        n = n.min(each(*amount, free_extended.get(name).copied().unwrap_or(0)));
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        NodeSelector, NodeSelectorTerm, Operator, Requirement, TaintEffect, Toleration,
    };

    fn node() -> Node {
        Node {
            name: "n".into(),
            labels: [("zone".to_string(), "a".to_string())].into(),
            taints: vec![Taint {
                key: "dedicated".into(),
                value: "batch".into(),
                effect: TaintEffect::NoSchedule,
            }],
            ready: true,
            ..Default::default()
        }
    }

    fn tolerating() -> Scheduling {
        Scheduling {
            tolerations: vec![Toleration {
                key: Some("dedicated".into()),
                exists: true,
                value: String::new(),
                effect: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn selector_affinity_and_taints() {
        let unfit = node_fit(&Scheduling::default(), &node()).unwrap_err();
        assert_eq!(
            unfit.to_string(),
            "node(s) had untolerated taint {dedicated: batch} (NoSchedule)"
        );
        assert_eq!(node_fit(&tolerating(), &node()), Ok(()));
        let elsewhere = Scheduling {
            node_selector: [("zone".to_string(), "b".to_string())].into(),
            ..tolerating()
        };
        assert_eq!(node_fit(&elsewhere, &node()), Err(Unfit::NodeAffinity));
        let affinity = Scheduling {
            node_affinity: Some(NodeSelector {
                terms: vec![NodeSelectorTerm {
                    expressions: vec![Requirement {
                        key: "zone".into(),
                        operator: Operator::NotIn,
                        values: vec!["a".into()],
                    }],
                    fields: vec![],
                }],
            }),
            ..tolerating()
        };
        assert_eq!(node_fit(&affinity, &node()), Err(Unfit::NodeAffinity));
    }

    #[test]
    fn resources_name_what_is_short_and_count_in_closed_form() {
        let free = Resources {
            cpu_millis: 2000,
            memory_bytes: 4 << 30,
            pods: 3,
            ..Default::default()
        };
        let pod = Resources {
            cpu_millis: 500,
            memory_bytes: 1 << 30,
            pods: 1,
            ..Default::default()
        };
        let none = BTreeMap::new();
        assert_eq!(resources_fit(&pod, &none, &free, &none), Ok(()));
        assert_eq!(how_many(&pod, &none, &free, &none), 3, "pods bind first");
        let big = Resources {
            memory_bytes: 5 << 30,
            ..pod
        };
        assert_eq!(
            resources_fit(&big, &none, &free, &none),
            Err(Unfit::Insufficient(vec!["memory".into()]))
        );
        let huge = Resources {
            cpu_millis: 3000,
            pods: 4,
            ..big
        };
        let unfit = resources_fit(&huge, &none, &free, &none).unwrap_err();
        assert_eq!(
            unfit.to_string(),
            "Too many pods, Insufficient cpu, Insufficient memory",
            "every resource short, as the scheduler lists them"
        );
        let fpga = BTreeMap::from([("aws.amazon.com/fpga".to_string(), 1)]);
        assert_eq!(
            resources_fit(&pod, &fpga, &free, &none),
            Err(Unfit::Insufficient(vec!["aws.amazon.com/fpga".into()]))
        );
        assert_eq!(how_many(&pod, &fpga, &free, &fpga), 1);
        assert_eq!(
            how_many(&Resources::default(), &none, &free, &none),
            u64::MAX
        );
    }
}
