//! A pod's scheduling constraints read from its spec into the model: node selector and affinity, pod affinity
//! and anti-affinity, tolerations, host ports and topology spread, each checked as the API server validates it.

use super::object_error::{ObjectError, invalid};
use crate::model::NODE_NAME_FIELD;
use crate::model::{
    HostPort, LabelSelector, Labels, NodeSelector, NodeSelectorTerm, Operator, PodAffinityTerm,
    Requirement, Scheduling, SpreadConstraint, TaintEffect, Toleration,
};
use k8s_openapi::api::core::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

pub(super) fn scheduling(
    key: &str,
    namespace: &str,
    labels: &Labels,
    spec: &api::PodSpec,
) -> Result<Scheduling, ObjectError> {
    let affinity = spec.affinity.as_ref();
    let node_affinity = affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|selector| node_selector(key, selector))
        .transpose()?;
    let terms = |list: Option<&Vec<api::PodAffinityTerm>>| {
        list.into_iter()
            .flatten()
            .map(|t| affinity_term(key, namespace, labels, t))
            .collect::<Result<Vec<_>, _>>()
    };
    let host_ports = host_ports(spec);
    let spread = spread_constraints(key, labels, spec)?;
    Ok(Scheduling {
        node_selector: spec.node_selector.clone().unwrap_or_default().into(),
        node_affinity,
        tolerations: spec
            .tolerations
            .iter()
            .flatten()
            .map(|t| toleration(key, t))
            .collect::<Result<_, _>>()?,
        host_ports,
        affinity: terms(
            affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        )?,
        anti_affinity: terms(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        )?,
        spread,
    })
}

/// The host ports a pod's containers take (init containers too).
fn host_ports(spec: &api::PodSpec) -> Vec<HostPort> {
    let mut host_ports = Vec::new();
    for container in spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
    {
        for port in container.ports.iter().flatten() {
            // On the host's network a container port is a host port (the API server defaults a pod's
            // hostPort so; a DaemonSet's template is not defaulted).
            let host_port = match port.host_port.filter(|p| *p > 0) {
                None if spec.host_network == Some(true) => Some(port.container_port),
                other => other,
            };
            if let Some(host_port) = host_port {
                host_ports.push(HostPort {
                    protocol: port.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    port: host_port,
                    ip: port.host_ip.clone().unwrap_or_default(),
                });
            }
        }
    }
    host_ports
}

/// A pod's hard topology spread constraints (`DoNotSchedule`), checked as the API server validates them.
fn spread_constraints(
    key: &str,
    labels: &Labels,
    spec: &api::PodSpec,
) -> Result<Vec<SpreadConstraint>, ObjectError> {
    let mut spread = Vec::new();
    for constraint in spec.topology_spread_constraints.iter().flatten() {
        if constraint.when_unsatisfiable != "DoNotSchedule" {
            continue;
        }
        let Ok(max_skew @ 1..) = u32::try_from(constraint.max_skew) else {
            return Err(invalid(
                key,
                "topologySpreadConstraints: maxSkew must be at least 1",
            ));
        };
        let selector = term_selector(
            key,
            constraint.label_selector.as_ref(),
            constraint.match_label_keys.as_ref(),
            labels,
        )?;
        let Ok(min_domains @ 1..) = u32::try_from(constraint.min_domains.unwrap_or(1)) else {
            return Err(invalid(
                key,
                "topologySpreadConstraints: minDomains must be at least 1",
            ));
        };
        let policy = |name: &str, value: Option<&String>, default: bool| match value
            .map(String::as_str)
        {
            None => Ok(default),
            Some("Honor") => Ok(true),
            Some("Ignore") => Ok(false),
            Some(other) => Err(invalid(
                key,
                format!("topologySpreadConstraints: {name} must be Honor or Ignore, not {other:?}"),
            )),
        };
        spread.push(SpreadConstraint {
            max_skew,
            topology_key: constraint.topology_key.clone(),
            selector,
            min_domains,
            honor_node_affinity: policy(
                "nodeAffinityPolicy",
                constraint.node_affinity_policy.as_ref(),
                true,
            )?,
            honor_node_taints: policy(
                "nodeTaintsPolicy",
                constraint.node_taints_policy.as_ref(),
                false,
            )?,
        });
    }
    Ok(spread)
}

fn operator(key: &str, text: &str) -> Result<Operator, ObjectError> {
    Operator::parse(text).ok_or_else(|| invalid(key, format!("unknown operator {text:?}")))
}

pub(super) fn node_selector(
    key: &str,
    selector: &api::NodeSelector,
) -> Result<NodeSelector, ObjectError> {
    let requirements = |list: Option<&Vec<api::NodeSelectorRequirement>>, fields: bool| {
        list.into_iter()
            .flatten()
            .map(|r| {
                let operator = operator(key, &r.operator)?;
                if fields {
                    // kube-scheduler's only node field, with the only operators it takes for it.
                    if r.key != NODE_NAME_FIELD {
                        return Err(invalid(
                            key,
                            format!(
                                "matchFields: key {:?}: only {NODE_NAME_FIELD} is supported",
                                r.key
                            ),
                        ));
                    }
                    if !matches!(operator, Operator::In | Operator::NotIn) {
                        return Err(invalid(
                            key,
                            format!(
                                "matchFields: {NODE_NAME_FIELD} takes In or NotIn, not {}",
                                r.operator
                            ),
                        ));
                    }
                }
                Ok(Requirement {
                    key: r.key.clone(),
                    operator,
                    values: r.values.clone().unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, ObjectError>>()
    };
    let terms = selector
        .node_selector_terms
        .iter()
        .map(|term| {
            Ok(NodeSelectorTerm {
                expressions: requirements(term.match_expressions.as_ref(), false)?,
                fields: requirements(term.match_fields.as_ref(), true)?,
            })
        })
        .collect::<Result<_, ObjectError>>()?;
    Ok(NodeSelector { terms })
}

pub(super) fn label_selector(
    key: &str,
    selector: Option<&meta::LabelSelector>,
) -> Result<Option<LabelSelector>, ObjectError> {
    let Some(selector) = selector else {
        return Ok(None);
    };
    let expressions = selector
        .match_expressions
        .iter()
        .flatten()
        .map(|r| {
            let operator = operator(key, &r.operator)?;
            if matches!(operator, Operator::Gt | Operator::Lt) {
                return Err(invalid(key, "Gt and Lt are for node affinity only"));
            }
            Ok(Requirement {
                key: r.key.clone(),
                operator,
                values: r.values.clone().unwrap_or_default(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(LabelSelector {
        match_labels: selector.match_labels.clone().unwrap_or_default().into(),
        expressions,
    }))
}

/// The selector of a spread constraint or affinity term: an absent one matches no pod; `matchLabelKeys`
/// add the pod's own values of those labels.
fn term_selector(
    key: &str,
    selector: Option<&meta::LabelSelector>,
    match_label_keys: Option<&Vec<String>>,
    labels: &Labels,
) -> Result<LabelSelector, ObjectError> {
    let mut selector = label_selector(key, selector)?.unwrap_or_else(LabelSelector::nothing);
    for label in match_label_keys.into_iter().flatten() {
        if let Some(value) = labels.get(label) {
            selector.match_labels.insert(label.clone(), value.clone());
        }
    }
    Ok(selector)
}

fn affinity_term(
    key: &str,
    namespace: &str,
    labels: &Labels,
    term: &api::PodAffinityTerm,
) -> Result<PodAffinityTerm, ObjectError> {
    if term.topology_key.is_empty() {
        return Err(invalid(
            key,
            "pod (anti-)affinity term without a topologyKey",
        ));
    }
    let mut selector = term_selector(
        key,
        term.label_selector.as_ref(),
        term.match_label_keys.as_ref(),
        labels,
    )?;
    for label in term.mismatch_label_keys.iter().flatten() {
        if let Some(value) = labels.get(label) {
            selector.expressions.push(Requirement {
                key: label.clone(),
                operator: Operator::NotIn,
                values: vec![value.clone()],
            });
        }
    }
    let namespace_selector = label_selector(key, term.namespace_selector.as_ref())?;
    // An empty namespaceSelector means every namespace. A non-empty one selects namespaces by their labels,
    // which a snapshot does not carry: we keep to the listed namespaces (or the pod's own).
    let all_namespaces = namespace_selector.is_some_and(|s| s == LabelSelector::default());
    let namespaces = if all_namespaces {
        None
    } else {
        let listed = term.namespaces.clone().unwrap_or_default();
        Some(if listed.is_empty() {
            vec![namespace.to_string()]
        } else {
            listed
        })
    };
    Ok(PodAffinityTerm {
        selector,
        namespaces,
        topology_key: term.topology_key.clone(),
    })
}

fn toleration(key: &str, t: &api::Toleration) -> Result<Toleration, ObjectError> {
    let effect = match t.effect.as_deref() {
        None | Some("") => None,
        Some(text) => Some(
            TaintEffect::parse(text)
                .ok_or_else(|| invalid(key, format!("toleration effect {text:?}")))?,
        ),
    };
    let exists = match t.operator.as_deref() {
        None | Some("") | Some("Equal") => false,
        Some("Exists") => true,
        Some(other) => return Err(invalid(key, format!("toleration operator {other:?}"))),
    };
    Ok(Toleration {
        key: t.key.clone().filter(|k| !k.is_empty()),
        exists,
        value: t.value.clone().unwrap_or_default(),
        effect,
    })
}
