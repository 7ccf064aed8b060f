//! The Fargate stage: pods the fargate-scheduler holds get their profile, size and price; pods a profile would
//! take but that kept the default scheduler are noted (EKS assigns fargate-scheduler only when a pod is
//! created, docs/eks.md "Fargate").
//!
//! Which profile takes a pod is decided here, by the rules the provider applies (`model::fargate`), from the
//! profiles ListProfiles returned this loop: a pod no profile selects costs no RPC. MatchPod is asked only
//! for what the provider alone can say (the price of the rounded size, the incompatibilities it reads from the
//! whole pod), once per pod shape a profile takes, and the answer is kept while that shape keeps appearing.

use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::status::FargatePod;
use crate::k8s::{PodFacts, pod_to_pb_bytes};
use crate::model::{FargateProfile, Pod, PodList, PodMatch};
use crate::model::{Matcher, SCHEDULER_NAME, Selection};
use crate::simulator::EquivalenceGroup;
use std::collections::HashMap;

/// MatchPod's answers by pod shape, kept across loops; only shapes asked about in the last loop stay.
#[derive(Default)]
pub struct FargateAnswers {
    answers: HashMap<String, PodMatch>,
}

/// What the stage found: a line per Fargate pod, and the calls that failed (the loop goes on without them).
#[derive(Default)]
pub struct FargateReport {
    pub pods: Vec<FargatePod>,
    pub errors: Vec<String>,
}

impl FargateAnswers {
    /// `fargate`: the pending pods the fargate-scheduler holds; `help`: those scale-up is for. `profiles` is
    /// `None` when the provider does not serve `ekscale.v1.Fargate`.
    pub async fn report(
        &mut self,
        client: &ProviderClient,
        profiles: Option<&[FargateProfile]>,
        pods: PodList<'_>,
        fargate: &[EquivalenceGroup],
        help: &[EquivalenceGroup],
    ) -> FargateReport {
        let mut report = FargateReport::default();
        let mut kept = HashMap::new();
        let Some(profiles) = profiles else {
            for eg in fargate {
                for &p in &eg.pods {
                    report.pods.push(FargatePod {
                        note: Some("the provider does not serve ekscale.v1.Fargate".into()),
                        ..unpriced(&pods[p], String::new())
                    });
                }
            }
            return report;
        };
        let mut matcher = Matcher::new(profiles);
        for eg in fargate {
            let exemplar = eg.exemplar(pods);
            let selection = matcher.select(&exemplar.namespace, &exemplar.labels);
            let answer = self.ask(client, exemplar, &selection, &mut kept).await;
            for &p in &eg.pods {
                report.pods.push(match &answer {
                    Ok(a) => FargatePod {
                        pod: pods[p].key(),
                        profile: a.profile.clone(),
                        capacity_provisioned: a.capacity_provisioned.clone(),
                        hourly_price: a.hourly_price,
                        scheduler: SCHEDULER_NAME.into(),
                        incompatibilities: a.incompatibilities.clone(),
                        note: (!a.reason.is_empty()).then(|| a.reason.clone()),
                    },
                    Err(e) => FargatePod {
                        note: Some(format!("unpriced: MatchPod failed: {e}")),
                        ..unpriced(&pods[p], profile_of(&selection))
                    },
                });
            }
            if let Err(e) = answer {
                report.errors.push(format!("Fargate: {e}"));
            }
        }
        for eg in help {
            let exemplar = eg.exemplar(pods);
            let selection = matcher.select(&exemplar.namespace, &exemplar.labels);
            if matches!(selection, Selection::NoMatch(_)) {
                continue;
            }
            let answer = match self.ask(client, exemplar, &selection, &mut kept).await {
                Ok(answer) => answer,
                Err(e) => {
                    report.errors.push(format!("Fargate: {e}"));
                    PodMatch {
                        profile: profile_of(&selection),
                        ..Default::default()
                    }
                }
            };
            if answer.profile.is_empty() {
                continue;
            }
            let scheduler = if exemplar.scheduler_name.is_empty() {
                "default-scheduler"
            } else {
                &exemplar.scheduler_name
            };
            let note = format!(
                "profile {} matches but the pod kept scheduler {scheduler:?}: EKS picks Fargate only when a pod \
                 is created, so EC2 capacity is planned for it; recreate it to run it on Fargate",
                answer.profile,
            );
            for &p in &eg.pods {
                report.pods.push(FargatePod {
                    pod: pods[p].key(),
                    profile: answer.profile.clone(),
                    capacity_provisioned: answer.capacity_provisioned.clone(),
                    hourly_price: answer.hourly_price,
                    scheduler: exemplar.scheduler_name.clone(),
                    incompatibilities: answer.incompatibilities.clone(),
                    note: Some(note.clone()),
                });
            }
        }
        self.answers = kept;
        report
    }

    /// MatchPod for a pod of this shape: from the last loops when asked before, else from the provider.
    async fn ask(
        &self,
        client: &ProviderClient,
        pod: &Pod,
        selection: &Selection,
        kept: &mut HashMap<String, PodMatch>,
    ) -> Result<PodMatch, ClientError> {
        let key = shape(pod, selection);
        if let Some(answer) = key
            .as_ref()
            .and_then(|k| kept.get(k).or_else(|| self.answers.get(k)))
        {
            let answer = answer.clone();
            if let Some(k) = key {
                kept.insert(k, answer.clone());
            }
            return Ok(answer);
        }
        let answer = match &pod.json {
            Some(json) => client.match_pod_json(json.clone()).await?,
            None => client.match_pod(pod_to_pb_bytes(pod)).await?,
        }
        // ListProfiles answered, so the service is there; a provider without MatchPod says nothing more.
        .unwrap_or_default();
        if let Some(k) = key {
            kept.insert(k, answer.clone());
        }
        Ok(answer)
    }
}

/// What MatchPod's answer depends on: the profile the pod's labels select and every fact of the pod but its
/// name and labels (its size, owners, host access, volumes). `None` when the pod cannot be read back, which
/// does not happen to a pod the loop read; it is then asked about every time.
fn shape(pod: &Pod, selection: &Selection) -> Option<String> {
    let facts = match &pod.json {
        Some(json) => crate::k8s::PodFacts::from_text(json),
        None => crate::k8s::PodFacts::from_bytes(&pod_to_pb_bytes(pod)),
    }
    .ok()?;
    let facts = PodFacts {
        name: String::new(),
        labels: Default::default(),
        ..facts
    };
    Some(format!("{selection:?} {facts:?}"))
}

fn profile_of(selection: &Selection) -> String {
    match selection {
        Selection::Profile(name) => name.clone(),
        _ => String::new(),
    }
}

fn unpriced(pod: &Pod, profile: String) -> FargatePod {
    FargatePod {
        pod: pod.key(),
        profile,
        capacity_provisioned: String::new(),
        hourly_price: 0.0,
        scheduler: SCHEDULER_NAME.into(),
        incompatibilities: Vec::new(),
        note: None,
    }
}
