//! Node groups that span several Availability Zones. An Auto Scaling group launches each new instance in
//! the zone with the fewest of its instances, so a new node's zone is predictable: the estimator plans it
//! there, and zone spreads and zonal anti-affinity can be planned for. The provider says each group's
//! zones (`ekscale.v1.NodeGroups`); a group in one zone, or a provider that does not say, gets every new
//! node in its template's zone, as upstream plans them.

use crate::model::{Node, ZONE_LABEL};
use std::sync::Arc;

/// The label older nodes carry beside `topology.kubernetes.io/zone`; kept in step where present.
const DEPRECATED_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";

/// The template as a node in each of `zones`, the template's own zone first; empty when the group has fewer
/// than two zones, or the template carries no zone.
pub fn templates(template: &Arc<Node>, zones: &[String]) -> Vec<Arc<Node>> {
    let Some(own) = template.labels.get(ZONE_LABEL) else {
        return Vec::new();
    };
    let mut ordered: Vec<&String> = zones.iter().filter(|z| *z == own).collect();
    ordered.extend(zones.iter().filter(|z| *z != own));
    ordered.dedup();
    if ordered.len() < 2 {
        return Vec::new();
    }
    ordered
        .into_iter()
        .map(|zone| {
            if zone == own {
                return template.clone();
            }
            let mut node = (**template).clone();
            node.labels.insert(ZONE_LABEL.into(), zone.clone());
            if node.labels.contains_key(DEPRECATED_ZONE_LABEL) {
                node.labels
                    .insert(DEPRECATED_ZONE_LABEL.into(), zone.clone());
            }
            Arc::new(node)
        })
        .collect()
}

/// The zone in an instance id (`aws:///<zone>/<instance-id>`), when it names a real instance: a
/// placeholder's zone is only where the provider wrote it, not where AWS will launch.
pub fn of_instance(id: &str) -> Option<&str> {
    let (zone, instance) = id.strip_prefix("aws:///")?.split_once('/')?;
    (!zone.is_empty() && !instance.starts_with("i-placeholder-")).then_some(zone)
}

/// The zone of each of `upcoming` nodes of a group whose zones are `zones`, given how many nodes each zone
/// has already (`nodes`, updated): first the zones of the instances known to be coming, then, for capacity
/// requested but not yet an instance, the zone with the fewest nodes, as the Auto Scaling group balances.
pub fn upcoming<'a>(
    zones: &[&str],
    nodes: &mut [u64],
    coming: impl IntoIterator<Item = &'a str>,
    upcoming: usize,
) -> Vec<usize> {
    let mut out: Vec<usize> = coming
        .into_iter()
        .filter_map(|zone| zones.iter().position(|z| *z == zone))
        .take(upcoming)
        .collect();
    for &z in &out {
        nodes[z] += 1;
    }
    while out.len() < upcoming && !zones.is_empty() {
        let z = (0..zones.len())
            .min_by_key(|&z| (nodes[z], z))
            .expect("zones");
        nodes[z] += 1;
        out.push(z);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(zone: &str) -> Arc<Node> {
        Arc::new(Node {
            name: "template".into(),
            labels: [
                (ZONE_LABEL.to_string(), zone.to_string()),
                (DEPRECATED_ZONE_LABEL.to_string(), zone.to_string()),
            ]
            .into(),
            ..Default::default()
        })
    }

    #[test]
    fn one_template_per_zone_the_templates_own_first() {
        let zones: Vec<String> = ["us-east-1a", "us-east-1b", "us-east-1c"]
            .map(String::from)
            .into();
        let nodes = templates(&template("us-east-1b"), &zones);
        let zone = |n: &Arc<Node>| n.labels[ZONE_LABEL].clone();
        assert_eq!(
            nodes.iter().map(zone).collect::<Vec<_>>(),
            ["us-east-1b", "us-east-1a", "us-east-1c"]
        );
        assert_eq!(nodes[1].labels[DEPRECATED_ZONE_LABEL], "us-east-1a");
        assert!(templates(&template("us-east-1a"), &zones[..1]).is_empty());
        assert!(templates(&Arc::new(Node::default()), &zones).is_empty());
    }

    #[test]
    fn instances_say_their_zone_placeholders_do_not() {
        assert_eq!(of_instance("aws:///us-east-1c/i-0abc"), Some("us-east-1c"));
        assert_eq!(of_instance("aws:///us-east-1a/i-placeholder-asg-3"), None);
        assert_eq!(of_instance("i-0abc"), None);
    }

    #[test]
    fn upcoming_nodes_go_where_their_instances_are_then_to_the_fewest() {
        let zones = ["a", "b", "c"];
        let mut nodes = [2, 0, 1];
        // One instance known in a; three more requested.
        let got = upcoming(&zones, &mut nodes, ["a"], 4);
        assert_eq!(got, [0, 1, 1, 2]);
        assert_eq!(nodes, [3, 2, 2]);
    }
}
