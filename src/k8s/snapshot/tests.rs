//! Snapshot files as kubectl prints them, in each form it takes, and the errors that name what is wrong.

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
fn an_objects_kind_is_read_from_its_first_keys_where_kubectl_puts_it() {
    let pretty = "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Pod\",\n    \"metadata\": {}}";
    assert_eq!(leading_kind(pretty), Some("Pod"));
    assert_eq!(
        leading_kind(r#"{"kind":"Node","apiVersion":"v1"}"#),
        Some("Node")
    );
    // Anywhere else, or written with escapes, the object is read properly instead.
    assert_eq!(
        leading_kind(r#"{"metadata":{"kind":"x"},"kind":"Pod"}"#),
        None
    );
    assert_eq!(
        leading_kind(r#"{"apiVersion":"v1","metadata":{},"kind":"Pod"}"#),
        None
    );
    assert_eq!(leading_kind(r#"{"k\u0069nd":"Pod"}"#), None);
    assert_eq!(leading_kind(r#"["kind","Pod"]"#), None);
    let snapshot =
        parse_snapshot(r#"{"kind":"List","items":[{"metadata":{"name":"n"},"kind":"Node"}]}"#);
    assert_eq!(snapshot.unwrap().nodes[0].name, "n");
}

#[test]
fn reads_what_kubectl_prints() {
    let snapshot = parse_snapshot(LIST).unwrap();
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
    let snapshot = parse_snapshot(&yaml).unwrap();
    assert_eq!(snapshot.pods, parse_snapshot(LIST).unwrap().pods);
}

#[test]
fn errors_name_the_item_and_the_problem() {
    let error = |text: &str| parse_snapshot(text).unwrap_err().to_string();
    assert!(error("[1, 2]").contains("not a kubectl List"));
    assert!(error(r#"{"kind":"List"}"#).contains("a List without `items`"));
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
    let kind = LIST.replace(r#""kind":"PodDisruptionBudget""#, r#""kind":"Service""#);
    assert!(
        error(&kind).contains("only Node, Pod, PodDisruptionBudget, DaemonSet, CapacityBuffer")
    );
    assert!(
        error(&kind).starts_with("item 2 (Service)"),
        "{}",
        error(&kind)
    );
    // A buffer of a version nobody serves is named with the versions that are read.
    let buffer = LIST.replace(
        r#""apiVersion":"policy/v1","kind":"PodDisruptionBudget""#,
        r#""apiVersion":"autoscaling.x-k8s.io/v2","kind":"CapacityBuffer""#,
    );
    assert!(
        error(&buffer)
            .contains("apiVersion \"autoscaling.x-k8s.io/v2\": CapacityBuffers are read as"),
        "{}",
        error(&buffer)
    );
}

#[test]
fn truncated_yaml_is_refused_with_its_last_line() {
    // kubectl's YAML prints keys in order, so `kind: List` comes after the items: cut after an item,
    // the file still parses, and must not be used.
    let value: std::collections::BTreeMap<String, serde_json::Value> =
        serde_json::from_str(LIST).unwrap();
    let yaml = serde_norway::to_string(&value).unwrap();
    assert!(yaml.find("\nkind: List") > yaml.find("\nitems:"), "{yaml}");
    let cut = yaml.find("- apiVersion: policy/v1").expect("the pdb item");
    let truncated = &yaml[..cut];
    let error = parse_snapshot(truncated).unwrap_err().to_string();
    let lines = truncated.lines().count();
    assert!(
        error.contains(&format!("looks truncated (it ends at line {lines})")),
        "{error}"
    );
}

#[test]
fn typed_lists_single_objects_and_several_documents_are_read() {
    // As the API server lists nodes: a NodeList whose items carry no kind.
    let nodes = r#"{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":[
        {"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"2","pods":"10"}}},
        {"metadata":{"name":"n2"},"status":{"allocatable":{"cpu":"2","pods":"10"}}}]}"#;
    let snapshot = parse_snapshot(nodes).unwrap();
    assert_eq!(snapshot.nodes.len(), 2);
    assert_eq!(snapshot.nodes[1].name, "n2");
    // A kind-less item in a plain List is an error that names it.
    let error = parse_snapshot(&nodes.replace("NodeList", "List"))
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("item 0 (): no `kind`"), "{error}");
    // `"items": null` is an empty list.
    let empty = parse_snapshot(r#"{"apiVersion":"v1","kind":"List","items":null}"#).unwrap();
    assert!(empty.nodes.is_empty() && empty.pods.is_empty());
    // One object, and YAML documents each a List or an object.
    let one = parse_snapshot(
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"solo"},"spec":{"containers":[]}}"#,
    )
    .unwrap();
    assert_eq!(one.pods[0].key(), "default/solo");
    let documents = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: []}}\n";
    let both = parse_snapshot(documents).unwrap();
    assert_eq!((both.nodes.len(), both.pods.len()), (1, 1));
    // A single object with items, and an unknown kind, are refused.
    let error = parse_snapshot(r#"{"kind":"Pod","items":[]}"#)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("top-level kind \"Pod\" with `items`"),
        "{error}"
    );
    let error = parse_snapshot("kind: Secret\nmetadata: {name: c}\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("kind \"Secret\""), "{error}");
    // ConfigMaps other than the disruption configuration are there to be ignored (`kubectl get cm -A`).
    let other =
        parse_snapshot("kind: ConfigMap\nmetadata: {name: c}\ndata: {config.yaml: x}\n").unwrap();
    assert_eq!(other.disruption_config, None);
    let ours = "kind: ConfigMap\nmetadata: {name: ekscale-disruption}\ndata: {config.yaml: \"nodeGroups: []\"}\n";
    let ours = parse_snapshot(ours).unwrap();
    assert_eq!(ours.disruption_config.as_deref(), Some("nodeGroups: []"));
    let error = parse_snapshot("kind: ConfigMap\nmetadata: {name: ekscale-disruption}\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("ekscale-disruption has no config.yaml"),
        "{error}"
    );
    let error = parse_snapshot("kind: Node\nmetadata: {name: a}\n---\nkind: Secret\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("not a kubectl List in JSON or YAML: document 2:"),
        "{error}"
    );
    assert!(parse_snapshot("").is_err());
}

/// A file large enough to be read in parts reads as one: characters of several bytes cut by the parts'
/// edges included; and bytes that are not UTF-8 are refused whole.
#[test]
fn a_large_file_read_in_parts_is_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    let mut pieces = ["{\"a\":1}\n", "é€", "ü"].into_iter().cycle();
    let mut text = String::new();
    while text.len() <= 1 << 24 {
        text.push_str(pieces.next().expect("a cycle does not end"));
    }
    std::fs::write(&path, &text).unwrap();
    assert!(read_snapshot_text(&path).unwrap() == text);
    let mut bytes = text.into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] = 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let error = read_snapshot_text(&path).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
}

#[test]
fn the_snapshot_is_as_new_as_its_newest_timestamp() {
    // The node was created long ago; its heartbeat, a taint and a pod's condition are newer.
    let list = r#"{"apiVersion":"v1","kind":"List","items":[
      {"kind":"Node","metadata":{"name":"n1","creationTimestamp":"2026-01-01T00:00:00Z"},
       "spec":{"taints":[{"key":"k","effect":"NoSchedule","timeAdded":"2026-11-30T10:00:00Z"}]},
       "status":{"conditions":[{"type":"Ready","status":"False",
         "lastHeartbeatTime":"2026-11-30T11:00:00Z","lastTransitionTime":"2026-11-30T09:00:00Z"}]}},
      {"kind":"Pod","metadata":{"name":"p","creationTimestamp":"2026-11-30T08:00:00Z"},
       "spec":{"containers":[]},
       "status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
         "lastTransitionTime":"2026-11-30T11:30:00Z"}]}}]}"#;
    let snapshot = parse_snapshot(list).unwrap();
    let newest = k8s_openapi::jiff::Timestamp::from_second(
        snapshot
            .newest
            .unwrap()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64,
    )
    .unwrap();
    assert_eq!(newest.to_string(), "2026-11-30T11:30:00Z");
}

#[test]
fn buffers_and_what_they_name_are_read_from_kubectls_list() {
    let list = r#"{"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"autoscaling.x-k8s.io/v1alpha1","kind":"CapacityBuffer",
       "metadata":{"name":"web-burst","namespace":"shop"},
       "spec":{"scalableRef":{"apiGroup":"apps","kind":"Deployment","name":"web"},"percentage":20}},
      {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
       "spec":{"replicas":7,"selector":{},"template":{"spec":{"containers":[
         {"name":"c","resources":{"requests":{"cpu":"250m"}}}]}}}},
      {"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"etl","namespace":"shop"},
       "spec":{"parallelism":4,"template":{"spec":{"containers":[]}}}},
      {"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"chunk","namespace":"shop","generation":2},
       "template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"1Gi"}}}]}}}],
      "kind":"List"}"#;
    let buffers = parse_snapshot(list).unwrap().buffers;
    assert_eq!(buffers.buffers.len(), 1);
    assert_eq!(buffers.buffers[0].version, "v1alpha1");
    assert_eq!(buffers.buffers[0].buffer.key(), "shop/web-burst");
    let web = &buffers.scalables[0];
    assert_eq!((web.kind.as_str(), web.replicas), ("Deployment", 7));
    assert_eq!(web.pod.as_ref().unwrap().demand.cpu_millis, 250);
    assert_eq!(
        (
            buffers.scalables[1].kind.as_str(),
            buffers.scalables[1].replicas
        ),
        ("Job", 4)
    );
    let chunk = &buffers.templates[0];
    assert_eq!((chunk.name.as_str(), chunk.generation), ("chunk", 2));
    assert_eq!(chunk.pod.as_ref().unwrap().demand.memory_bytes, 1 << 30);
}

/// A List of `pods` small pods with a node after every hundredth, as kubectl prints it.
fn many_items(pods: usize) -> String {
    let mut items = Vec::new();
    for i in 0..pods {
        items.push(format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{i}","namespace":"default"}},
              "spec":{{"containers":[{{"name":"a","resources":{{"requests":{{"cpu":"{}m"}}}}}}]}},
              "status":{{"phase":"Pending"}}}}"#,
            i % 1000 + 1
        ));
        if i % 100 == 99 {
            items.push(format!(
                r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n{i}"}},
                  "status":{{"allocatable":{{"cpu":"4","memory":"16Gi","pods":"110"}},
                  "conditions":[{{"type":"Ready","status":"True"}}]}}}}"#
            ));
        }
    }
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",\n")
    )
}

#[test]
fn items_converted_on_many_cores_come_back_in_the_files_order() {
    // Eleven batches and a part of one, so every converter takes several and they finish out of order.
    let pods = 11 * BATCH + 300;
    let text = many_items(pods);
    // The YAML path reads item by item on one thread: what every split across converters must equal.
    let serial = parse_snapshot(&format!("---\n{text}")).unwrap();
    assert_eq!(serial.pods.len(), pods);
    assert_eq!(serial.nodes.len(), pods / 100);
    for converters in [1, 2, 3, 8] {
        let parallel = parse_with_converters(&text, converters).unwrap();
        assert_eq!(parallel.pods, serial.pods, "{converters} converters");
        assert_eq!(parallel.nodes, serial.nodes, "{converters} converters");
    }
}

#[test]
fn an_unreadable_item_deep_in_a_file_is_named_whatever_converter_read_it() {
    let bad = 7 * BATCH + 5;
    let text = many_items(9 * BATCH).replace(
        &format!(r#""name":"p{bad}""#),
        &format!(r#""name":"p{bad}","creationTimestamp":"yesterday""#),
    );
    // Items are numbered from 0 with the nodes among them: a node follows every hundredth pod.
    let item = bad + bad / 100;
    for converters in [1, 3, 8] {
        let error = parse_with_converters(&text, converters)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("item {item} (Pod)")),
            "{converters} converters: {error}"
        );
    }
}

/// DRA's four kinds beside the rest: a template's claim (made for a pod, which its status names) and a
/// shared claim, a class and a slice; a claim the API server would refuse is left out with why, and the rest
/// read on.
const DRA: &str = r#"{"apiVersion":"v1","kind":"List","items":[
  {"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu.nvidia.com"},
   "spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com'"}}]}},
  {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"one-gpu","namespace":"ml"},
   "spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}}},
  {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"trainer-0-gpu-x7k2p","namespace":"ml",
    "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"trainer-0","uid":"pod-1","controller":true}]},
   "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}}},
  {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"shared-nic","namespace":"ml"},
   "spec":{"devices":{"requests":[{"name":"nic","exactly":{"deviceClassName":"nic","allocationMode":"All"}}]}}},
  {"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"broken","namespace":"ml"},
   "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":-2}}]}}},
  {"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"node-1-gpu"},
   "spec":{"driver":"gpu.nvidia.com","nodeName":"node-1","pool":{"name":"node-1","generation":1,"resourceSliceCount":1},
     "devices":[{"name":"gpu-0","attributes":{"type":{"string":"gpu"}}}]}},
  {"apiVersion":"v1","kind":"Pod","metadata":{"name":"trainer-0","namespace":"ml","uid":"pod-1"},
   "spec":{"containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}],
     "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"},
       {"name":"nic","resourceClaimName":"shared-nic"}]},
   "status":{"phase":"Pending","resourceClaimStatuses":[{"name":"gpu","resourceClaimName":"trainer-0-gpu-x7k2p"}]}}]}"#;

#[test]
fn dra_objects_are_read_beside_the_rest_and_a_refused_one_is_left_out() {
    use crate::model::{ClaimSource, Name};
    let snapshot = parse_snapshot(DRA).unwrap();
    let dra = &snapshot.dra;
    assert_eq!(&*dra.classes[0].name, "gpu.nvidia.com");
    assert_eq!(&*dra.templates[0].name, "one-gpu");
    let claims: Vec<&str> = dra.claims.iter().map(|c| &*c.name).collect();
    assert_eq!(claims, ["trainer-0-gpu-x7k2p", "shared-nic"]);
    assert_eq!(dra.claims[0].owner_pod.as_deref(), Some("pod-1"));
    assert_eq!(&*dra.slices[0].devices[0].name, "gpu-0");
    let skipped: Vec<String> = snapshot.skipped.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        skipped,
        [
            "ResourceClaim ml/broken: spec.devices.requests[0].exactly.count: -2: must be greater than zero"
        ]
    );
    let pod = &snapshot.pods[0];
    assert_eq!(pod.uid().map(|u| &**u), Some("pod-1"));
    let sources: Vec<&ClaimSource> = pod.claims().iter().map(|c| &c.source).collect();
    assert_eq!(
        sources,
        [
            &ClaimSource::Template {
                template: "one-gpu".into(),
                made: Some(Name::from("trainer-0-gpu-x7k2p"))
            },
            &ClaimSource::Claim("shared-nic".into())
        ]
    );
    // The same in YAML, and as typed lists (a kind's items may leave their kind out).
    let typed = r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSliceList","items":[
      {"metadata":{"name":"s"},"spec":{"driver":"d.example.com","allNodes":true,
        "pool":{"name":"p","generation":0,"resourceSliceCount":1}}}]}"#;
    assert_eq!(&*parse_snapshot(typed).unwrap().dra.slices[0].name, "s");
}

#[test]
fn capacity_quotas_are_read_beside_the_rest_an_invalid_one_with_its_problem() {
    let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
         "metadata": {"name": "gpu-pool", "generation": 2},
         "spec": {"selector": {"matchLabels": {"pool": "gpu"}},
                  "limits": {"resources": {"nvidia.com/gpu": 8, "nodes": "4"}}}},
        {"apiVersion": "autoscaling.x-k8s.io/v1alpha1", "kind": "CapacityQuota",
         "metadata": {"name": "bad"},
         "spec": {"limits": {"resources": {"cpu": "500m"}}}}
    ]}"#;
    let read = parse_snapshot(text).unwrap();
    assert_eq!(read.quotas.len(), 2);
    assert_eq!(read.quotas[0].generation, 2);
    assert_eq!(read.quotas[0].valid().unwrap().limits["nodes"], 4);
    assert!(
        read.quotas[1]
            .problem()
            .unwrap()
            .to_string()
            .contains("non-negative integers")
    );
    let nameless = r#"{"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
        "metadata": {}, "spec": {"limits": {"resources": {"cpu": 1}}}}"#;
    let err = parse_snapshot(nameless).unwrap_err().to_string();
    assert!(err.contains("no metadata.name"), "{err}");
}
