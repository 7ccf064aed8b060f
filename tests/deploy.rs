//! deploy/: every kustomization renders with `kubectl kustomize`, validates against Kubernetes' schemas
//! (`kubernetes-validate --strict`), runs both programs as non-root with a read-only root filesystem and no
//! capabilities, wires the autoscalers to the provider's Service with certificates cert-manager issues, and
//! passes only flags the binaries accept.

mod common;

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const KUSTOMIZATIONS: [&str; 5] = [
    "provider",
    "cluster-autoscaler",
    "autoscaler",
    "cert-manager",
    "overlays/example",
];

fn tool(name: &str, env: &str) -> std::path::PathBuf {
    common::tool(env, name, "run tests/run, which installs it into .venv")
}

/// `kubectl kustomize deploy/DIR`, as documents.
fn render(dir: &str) -> (String, Vec<Value>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(dir);
    let output = Command::new(tool("kubectl", "KUBECTL"))
        .arg("kustomize")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let docs = serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect();
    (text, docs)
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> impl Iterator<Item = &'a Value> {
    let kind = kind.to_string();
    docs.iter().filter(move |d| d["kind"] == kind.as_str())
}

#[test]
fn every_kustomization_renders_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    for name in KUSTOMIZATIONS {
        let (text, docs) = render(name);
        assert!(!docs.is_empty(), "{name} renders nothing");
        let file = dir.path().join(format!("{}.yaml", name.replace('/', "-")));
        std::fs::write(&file, &text).unwrap();
        let output = Command::new(tool("kubernetes-validate", "KUBERNETES_VALIDATE"))
            .args(["--strict", "--quiet"])
            .arg(&file)
            .output()
            .unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{name}: {report}");
        // Only cert-manager's own kinds have no schema here; anything else unknown is a mistake.
        for line in report
            .lines()
            .filter(|l| l.contains("Couldn't find schema"))
        {
            assert!(line.contains("cert-manager.io/v1"), "{name}: {line}");
        }
    }
}

#[test]
fn both_programs_run_as_non_root_with_a_read_only_root_and_no_capabilities() {
    let (_, docs) = render("overlays/example");
    let deployments: Vec<&Value> = kind(&docs, "Deployment").collect();
    assert_eq!(deployments.len(), 3);
    for deployment in deployments {
        let name = deployment["metadata"]["name"].as_str().unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{name}");
        for container in pod["containers"].as_array().unwrap() {
            let security = &container["securityContext"];
            assert_eq!(security["readOnlyRootFilesystem"], true, "{name}");
            assert_eq!(security["allowPrivilegeEscalation"], false, "{name}");
            assert_eq!(
                security["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{name}"
            );
            assert!(container["resources"]["requests"].is_object(), "{name}");
        }
    }
}

#[test]
fn the_autoscalers_reach_the_providers_service_over_mutual_tls_from_cert_managers_secrets() {
    let (_, docs) = render("overlays/example");
    let service = kind(&docs, "Service")
        .find(|s| s["metadata"]["name"] == "ekscale-provider")
        .unwrap();
    let namespace = service["metadata"]["namespace"].as_str().unwrap();
    let address = format!("ekscale-provider.{namespace}.svc:8086");
    assert!(
        service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["port"] == 8086)
    );
    let cloud_config = kind(&docs, "ConfigMap")
        .find(|c| c["metadata"]["name"] == "cluster-autoscaler-cloud-config")
        .unwrap()["data"]["cloud-config.yaml"]
        .as_str()
        .unwrap();
    let cloud_config: Value = serde_norway::from_str(cloud_config).unwrap();
    assert_eq!(cloud_config["address"], address.as_str());
    let deployment = |name: &str| {
        kind(&docs, "Deployment")
            .find(|d| d["metadata"]["name"] == name)
            .unwrap()
            .clone()
    };
    let args = |d: &Value| -> Vec<String> {
        d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    assert!(args(&deployment("ekscale-autoscaler")).contains(&format!("--provider={address}")));

    // Every secret a Deployment mounts is one a Certificate produces; the server's names cover the address.
    let issued: BTreeSet<&str> = kind(&docs, "Certificate")
        .map(|c| c["spec"]["secretName"].as_str().unwrap())
        .collect();
    for name in [
        "ekscale-provider",
        "cluster-autoscaler",
        "ekscale-autoscaler",
    ] {
        for volume in deployment(name)["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
        {
            if let Some(secret) = volume["secret"]["secretName"].as_str() {
                assert!(
                    issued.contains(secret),
                    "{name} mounts {secret}, which no Certificate issues"
                );
            }
        }
    }
    let server = kind(&docs, "Certificate")
        .find(|c| c["metadata"]["name"] == "ekscale-provider-tls")
        .unwrap();
    assert!(
        server["spec"]["dnsNames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == &format!("ekscale-provider.{namespace}.svc"))
    );
}

#[test]
fn the_manifests_pass_only_flags_the_binaries_accept() {
    let (_, docs) = render("overlays/example");
    let help = |binary: &str, sub: &[&str]| {
        let output = Command::new(binary)
            .args(sub)
            .arg("--help")
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    let provider_help = help(env!("CARGO_BIN_EXE_ekscale-provider"), &[]);
    let run_help = help(env!("CARGO_BIN_EXE_ekscale-autoscaler"), &["run"]);
    for deployment in kind(&docs, "Deployment") {
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let (help, args) = match container["command"][0].as_str() {
            Some("ekscale-provider") => (&provider_help, &container["args"]),
            Some("ekscale-autoscaler") => (&run_help, &container["args"]),
            _ => continue,
        };
        for arg in args.as_array().unwrap() {
            let arg = arg.as_str().unwrap();
            if let Some(flag) = arg.strip_prefix("--") {
                let flag = flag.split('=').next().unwrap();
                assert!(help.contains(&format!("--{flag}")), "unknown flag --{flag}");
            }
        }
    }
}

/// The companion's ClusterRole lets it watch the custom resources it reads and patch their status, and the
/// CRDs it ships serve every version the code reads, with the status subresource it writes.
#[test]
fn the_autoscaler_may_watch_its_custom_resources_and_write_their_status() {
    let (_, docs) = render("autoscaler");
    let role = kind(&docs, "ClusterRole").next().expect("a ClusterRole");
    let allows = |resource: &str, verb: &str| {
        (role["rules"].as_array().unwrap().iter()).any(|rule| {
            let has = |field: &str, value: &str| {
                (rule[field].as_array().unwrap().iter()).any(|v| v == value)
            };
            has("apiGroups", "autoscaling.x-k8s.io")
                && has("resources", resource)
                && has("verbs", verb)
        })
    };
    use ekscale::k8s::{CapacityBuffer, CapacityQuotaObject, ProvisioningRequest};
    for (plural, versions) in [
        (CapacityBuffer::PLURAL, &CapacityBuffer::VERSIONS),
        (ProvisioningRequest::PLURAL, &ProvisioningRequest::VERSIONS),
        (CapacityQuotaObject::PLURAL, &CapacityQuotaObject::VERSIONS),
    ] {
        for verb in ["list", "watch"] {
            assert!(allows(plural, verb), "{plural}: {verb}");
        }
        assert!(
            allows(&format!("{plural}/status"), "patch"),
            "{plural}/status"
        );
        let name = format!("{plural}.autoscaling.x-k8s.io");
        let crd = (kind(&docs, "CustomResourceDefinition"))
            .find(|c| c["metadata"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no CRD {name}"));
        for version in versions {
            let served = (crd["spec"]["versions"].as_array().unwrap().iter())
                .find(|v| v["name"] == *version)
                .unwrap_or_else(|| panic!("{name} does not serve {version}"));
            assert_eq!(served["served"], true, "{name} {version}");
            assert!(
                served["subresources"]["status"].is_object(),
                "{name} {version}"
            );
        }
    }
}

/// The CapacityQuota CRD is upstream's: cluster-scoped, shortName cq, v1beta1 stored, v1alpha1 served and
/// deprecated, the two schemas the same (no conversion), the limits checked as upstream's CRD checks them.
#[test]
fn the_capacity_quota_crd_is_upstreams() {
    let (_, docs) = render("autoscaler");
    let crd = (kind(&docs, "CustomResourceDefinition"))
        .find(|c| c["metadata"]["name"] == "capacityquotas.autoscaling.x-k8s.io")
        .expect("the CapacityQuota CRD");
    let spec = &crd["spec"];
    assert_eq!(spec["scope"], "Cluster");
    assert_eq!(spec["names"]["shortNames"], serde_json::json!(["cq"]));
    assert!(spec.get("conversion").is_none());
    let versions = spec["versions"].as_array().unwrap();
    let named = |name: &str| versions.iter().find(|v| v["name"] == name).unwrap();
    let (beta, alpha) = (named("v1beta1"), named("v1alpha1"));
    assert_eq!(
        (beta["storage"].clone(), alpha["storage"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(alpha["deprecated"], true);
    assert!(beta.get("deprecated").is_none());
    assert_eq!(beta["schema"], alpha["schema"]);
    let resources = &beta["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["limits"]
        ["properties"]["resources"];
    assert_eq!(resources["maxProperties"], 20);
    let messages: Vec<&str> = (resources["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter())
    .map(|r| r["message"].as_str().unwrap())
    .collect();
    assert_eq!(
        messages,
        [
            "Resource names must be 63 characters or less.",
            "All resource quantities must be non-negative integers."
        ]
    );
}

/// The companion's ClusterRole lets it watch every kind of Dynamic Resource Allocation it reads.
#[test]
fn the_autoscaler_may_watch_dra_objects() {
    let (_, docs) = render("autoscaler");
    let role = kind(&docs, "ClusterRole").next().expect("a ClusterRole");
    for (kind, plural) in ekscale::k8s::DRA_KINDS {
        for verb in ["list", "watch"] {
            let allowed = (role["rules"].as_array().unwrap().iter()).any(|rule| {
                let has = |field: &str, value: &str| {
                    (rule[field].as_array().unwrap().iter()).any(|v| v == value)
                };
                has("apiGroups", ekscale::k8s::DRA_GROUP)
                    && has("resources", plural)
                    && has("verbs", verb)
            });
            assert!(allowed, "{kind}: {verb} {plural}");
        }
    }
}

/// deploy/aws/interruption-queue.yaml: the queue (encrypted, 300 s), its policy letting EventBridge send,
/// the four rules, one per kind of event the provider reads (state changes only to the leaving states),
/// each targeting the queue, and its outputs.
#[test]
fn the_interruption_queue_template_makes_the_queue_its_four_rules_and_outputs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/aws/interruption-queue.yaml");
    let template: Value = serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let resources = template["Resources"].as_object().unwrap();
    let queue_arn = serde_json::json!({"Fn::GetAtt": ["InterruptionQueue", "Arn"]});
    let queue = &resources["InterruptionQueue"];
    assert_eq!(queue["Type"], "AWS::SQS::Queue");
    assert_eq!(queue["Properties"]["MessageRetentionPeriod"], 300);
    assert_eq!(queue["Properties"]["SqsManagedSseEnabled"], true);

    let policy = &resources["InterruptionQueuePolicy"];
    assert_eq!(policy["Type"], "AWS::SQS::QueuePolicy");
    let statements = policy["Properties"]["PolicyDocument"]["Statement"]
        .as_array()
        .unwrap();
    let sends = (statements.iter())
        .find(|s| s["Effect"] == "Allow" && s["Action"] == "sqs:SendMessage")
        .expect("a statement allowing sqs:SendMessage");
    let principals: BTreeSet<&str> = (sends["Principal"]["Service"].as_array().unwrap().iter())
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        principals,
        BTreeSet::from(["events.amazonaws.com", "sqs.amazonaws.com"])
    );
    assert_eq!(sends["Resource"], queue_arn);

    let mut detail_types = BTreeSet::new();
    for rule in resources
        .values()
        .filter(|r| r["Type"] == "AWS::Events::Rule")
    {
        let pattern = &rule["Properties"]["EventPattern"];
        let source = pattern["source"][0].as_str().unwrap();
        let detail_type = pattern["detail-type"][0].as_str().unwrap();
        detail_types.insert((source, detail_type));
        let targets = rule["Properties"]["Targets"].as_array().unwrap();
        assert!(targets.iter().all(|t| t["Arn"] == queue_arn), "{rule}");
    }
    let expected = BTreeSet::from([
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.health", "AWS Health Event"),
    ]);
    assert_eq!(detail_types, expected);
    // The state-change rule passes only the states that take an instance away, not every launch.
    let states =
        &resources["InstanceStateChangeRule"]["Properties"]["EventPattern"]["detail"]["state"];
    let states: BTreeSet<&str> = (states.as_array().expect("a state filter").iter())
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        BTreeSet::from(["stopping", "stopped", "shutting-down", "terminated"])
    );

    let outputs = template["Outputs"].as_object().unwrap();
    assert_eq!(
        outputs["QueueUrl"]["Value"],
        serde_json::json!({"Ref": "InterruptionQueue"})
    );
    assert_eq!(outputs["QueueArn"]["Value"], queue_arn);
}
