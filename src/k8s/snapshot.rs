//! Cluster snapshots: what `kubectl get nodes,pods,pdb -A -o json` prints (a `List`), in JSON or YAML.

use crate::k8s::objects::{self, ObjectError};
use crate::model::pdb::Pdb;
use crate::model::{Node, Pod};
use k8s_openapi::api::core::v1 as api;

#[derive(Debug, Default)]
pub struct Snapshot {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not a kubectl List in JSON or YAML: {0}")]
    Syntax(String),
    #[error("item {index} ({kind}): {reason}")]
    Item {
        index: usize,
        kind: String,
        reason: String,
    },
    #[error(transparent)]
    Object(#[from] ObjectError),
}

/// Reads a snapshot. Items are converted one at a time as the parser reaches them, so a large cluster's
/// JSON never exists whole as a tree in memory. JSON goes through serde_json (much faster on large
/// clusters), anything else is YAML.
pub fn parse(text: &str) -> Result<Snapshot, SnapshotError> {
    let mut reader = Reader::default();
    let parsed = if text.trim_start().starts_with('{') {
        let mut json = serde_json::Deserializer::from_str(text);
        serde::Deserializer::deserialize_map(&mut json, ListVisitor(&mut reader))
            .map_err(|e| e.to_string())
    } else {
        serde::Deserializer::deserialize_map(
            serde_norway::Deserializer::from_str(text),
            ListVisitor(&mut reader),
        )
        .map_err(|e| e.to_string())
    };
    if let Some(error) = reader.error {
        return Err(error);
    }
    parsed.map_err(SnapshotError::Syntax)?;
    if !reader.saw_items {
        return Err(SnapshotError::Syntax(
            "no `items`: expected a kubectl List".into(),
        ));
    }
    Ok(reader.snapshot)
}

#[derive(Default)]
struct Reader {
    snapshot: Snapshot,
    index: usize,
    saw_items: bool,
    /// The first item that could not be read; parsing stops there.
    error: Option<SnapshotError>,
}

impl Reader {
    fn read(&mut self, item: serde_json::Value) -> Result<(), SnapshotError> {
        let index = self.index;
        self.index += 1;
        let kind = item
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("")
            .to_string();
        let fail = |reason: String| SnapshotError::Item {
            index,
            kind: kind.clone(),
            reason,
        };
        let snapshot = &mut self.snapshot;
        match kind.as_str() {
            "Node" => {
                let node: api::Node =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.nodes.push(objects::node_from_api(&node)?);
            }
            "Pod" => {
                let pod: api::Pod =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.pods.push(objects::pod_from_api(&pod, true)?);
            }
            "PodDisruptionBudget" => {
                let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget =
                    serde_json::from_value(item).map_err(|e| fail(e.to_string()))?;
                snapshot.pdbs.push(objects::pdb_from_api(&pdb)?);
            }
            _ => {
                return Err(fail(
                    "only Node, Pod and PodDisruptionBudget are read (kubectl get nodes,pods,pdb -A -o json)"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// The List object: `items` is read item by item, everything else skipped.
struct ListVisitor<'a>(&'a mut Reader);

impl<'de> serde::de::Visitor<'de> for ListVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a kubectl List")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                self.0.saw_items = true;
                map.next_value_seed(ItemsSeed(&mut *self.0))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct ItemsSeed<'a>(&'a mut Reader);

impl<'de> serde::de::DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ItemsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<serde_json::Value>()? {
            if let Err(error) = self.0.read(item) {
                self.0.error = Some(error);
                return Err(serde::de::Error::custom("stopped at an unreadable item"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[
      {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"us-east-1a"},
        "creationTimestamp":"2026-11-30T00:00:00Z"},
       "spec":{"providerID":"aws:///us-east-1a/i-1","taints":[{"key":"dedicated","value":"batch","effect":"NoSchedule"}]},
       "status":{"capacity":{"cpu":"2","memory":"8Gi","pods":"29"},
                 "allocatable":{"cpu":"1930m","memory":"7518Mi","pods":"29","vpc.amazonaws.com/pod-eni":"9"},
                 "conditions":[{"type":"Ready","status":"True"}]}},
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"web","labels":{"app":"web"},
        "creationTimestamp":"2026-11-30T00:00:10Z",
        "annotations":{"cluster-autoscaler.kubernetes.io/pod-scale-up-delay":"10m"},
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-1","uid":"u1","controller":true}]},
       "spec":{"priority":5,"nodeSelector":{"team":"web"},
         "tolerations":[{"key":"dedicated","operator":"Equal","value":"batch","effect":"NoSchedule"},{"operator":"Exists"}],
         "affinity":{
           "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
             {"matchExpressions":[{"key":"cores","operator":"Gt","values":["4"]}]}]}},
           "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
             {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]},
           "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
             {"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["cache"]}]},
              "namespaceSelector":{},"topologyKey":"topology.kubernetes.io/zone"}]}},
         "topologySpreadConstraints":[
           {"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule",
            "labelSelector":{"matchLabels":{"app":"web"}},"matchLabelKeys":["pod-template-hash"],"minDomains":3},
           {"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway",
            "labelSelector":{"matchLabels":{"app":"web"}}}],
         "containers":[{"name":"a","ports":[{"containerPort":80,"hostPort":8080}],
           "resources":{"requests":{"cpu":"250m","memory":"64Mi","vpc.amazonaws.com/pod-eni":"1"}}}]},
       "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}},
      {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web","namespace":"web"},
       "spec":{"selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":1,"currentHealthy":3,
       "desiredHealthy":2,"expectedPods":3}}]}"#;

    #[test]
    fn reads_what_kubectl_prints() {
        let snapshot = parse(LIST).unwrap();
        let node = &snapshot.nodes[0];
        assert_eq!(node.provider_id, "aws:///us-east-1a/i-1");
        assert_eq!(
            (node.allocatable.cpu_millis, node.allocatable.pods),
            (1930, 29)
        );
        assert_eq!(node.capacity.memory_bytes, 8 << 30);
        assert_eq!(node.extended["vpc.amazonaws.com/pod-eni"], 9);
        assert!(node.ready && node.created.is_some());
        assert_eq!(node.taints[0].key, "dedicated");

        let pod = &snapshot.pods[0];
        assert_eq!(pod.key(), "web/p");
        assert!(pod.unschedulable && pod.json.is_some());
        assert_eq!(pod.priority, Some(5));
        assert_eq!(
            pod.scale_up_delay,
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(
            pod.created
                .unwrap()
                .duration_since(node.created.unwrap())
                .unwrap(),
            std::time::Duration::from_secs(10)
        );
        assert_eq!(pod.controller.as_ref().unwrap().uid, "u1");
        assert_eq!(pod.extended["vpc.amazonaws.com/pod-eni"], 1);
        let s = &pod.scheduling;
        assert_eq!(s.node_selector["team"], "web");
        assert_eq!(s.tolerations.len(), 2);
        assert!(s.tolerations[1].exists && s.tolerations[1].key.is_none());
        assert_eq!(
            s.node_affinity.as_ref().unwrap().terms[0].expressions[0].values,
            ["4"]
        );
        assert_eq!(
            s.anti_affinity[0].namespaces.as_deref(),
            Some(&["web".to_string()][..])
        );
        assert_eq!(
            s.affinity[0].namespaces, None,
            "an empty namespaceSelector is every namespace"
        );
        assert_eq!(s.spread.len(), 1, "ScheduleAnyway is a preference");
        assert_eq!((s.spread[0].max_skew, s.spread[0].min_domains), (2, 3));
        assert_eq!(s.host_ports[0].port, 8080);
        assert_eq!(s.host_ports[0].protocol, "TCP");

        assert_eq!(snapshot.pdbs[0].disruptions_allowed, 1);
        assert!(snapshot.pdbs[0].covers("web", &pod.labels));
    }

    #[test]
    fn yaml_reads_the_same() {
        let value: serde_json::Value = serde_json::from_str(LIST).unwrap();
        let yaml = serde_norway::to_string(&value).unwrap();
        let snapshot = parse(&yaml).unwrap();
        assert_eq!(snapshot.pods, parse(LIST).unwrap().pods);
    }

    #[test]
    fn errors_name_the_item_and_the_problem() {
        let error = |text: &str| parse(text).unwrap_err().to_string();
        assert!(error("[1, 2]").contains("not a kubectl List"));
        assert!(error(r#"{"kind":"List"}"#).contains("no `items`"));
        let bad_operator = LIST.replace(r#""operator":"Gt""#, r#""operator":"Within""#);
        assert!(
            error(&bad_operator).contains("unknown operator \"Within\""),
            "{}",
            error(&bad_operator)
        );
        let label_gt = LIST.replace(
            r#""operator":"In","values":["cache"]"#,
            r#""operator":"Gt","values":["1"]"#,
        );
        assert!(error(&label_gt).contains("node affinity only"));
        let skew = LIST.replace(r#""maxSkew":2"#, r#""maxSkew":0"#);
        assert!(error(&skew).contains("maxSkew must be at least 1"));
        let effect = LIST.replace(r#""effect":"NoSchedule"}]}"#, r#""effect":"Sometimes"}]}"#);
        assert!(
            error(&effect).contains("node n1: taint effect \"Sometimes\""),
            "{}",
            error(&effect)
        );
        let node = LIST.replace(r#""cpu":"1930m""#, r#""cpu":"lots""#);
        assert!(error(&node).contains("node n1: cpu"), "{}", error(&node));
        let delay = LIST.replace(
            r#"pod-scale-up-delay":"10m""#,
            r#"pod-scale-up-delay":"soon""#,
        );
        assert!(
            error(&delay)
                .contains("web/p: cluster-autoscaler.kubernetes.io/pod-scale-up-delay: \"soon\""),
            "{}",
            error(&delay)
        );
        let kind = LIST.replace(r#""kind":"PodDisruptionBudget""#, r#""kind":"Deployment""#);
        assert!(
            error(&kind).starts_with("item 2 (Deployment)"),
            "{}",
            error(&kind)
        );
    }
}
