//! The AMI a node group's new instances launch with: the image of the launch template version its Auto
//! Scaling group launches, from `ec2:DescribeLaunchTemplateVersions`, remembered between refreshes.

use super::calls::{Calls, sdk_error};
use aws_sdk_autoscaling::types::AutoScalingGroup;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// A launch template version as an Auto Scaling group names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct TemplateVersion {
    /// The template's id (`lt-...`), or its name when the ASG gives no id.
    template: String,
    by_name: bool,
    /// A version number, or `$Latest` / `$Default`.
    version: String,
}

impl TemplateVersion {
    /// The launch template the ASG launches with: its own, or its mixed instances policy's (EKS uses a policy
    /// for spot and for several instance types). `None` for an ASG on a launch configuration.
    pub(super) fn of(asg: &AutoScalingGroup) -> Option<TemplateVersion> {
        let spec = asg.launch_template().or_else(|| {
            asg.mixed_instances_policy()?
                .launch_template()?
                .launch_template_specification()
        })?;
        let (template, by_name) = match (spec.launch_template_id(), spec.launch_template_name()) {
            (Some(id), _) => (id, false),
            (None, Some(name)) => (name, true),
            (None, None) => return None,
        };
        Some(TemplateVersion {
            template: template.to_string(),
            by_name,
            // An ASG that names no version launches the template's default one.
            version: spec.version().unwrap_or("$Default").to_string(),
        })
    }

    /// A numbered version never changes; `$Latest` and `$Default` move when a version is added or made the
    /// default.
    fn fixed(&self) -> bool {
        self.version.parse::<u64>().is_ok()
    }
}

impl std::fmt::Display for TemplateVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} version {}", self.template, self.version)
    }
}

/// What was learnt of each launch template version, and when.
#[derive(Default)]
pub(super) struct Images {
    known: HashMap<TemplateVersion, Known>,
}

struct Known {
    read_at: Instant,
    /// Its AMI id; `None` when EC2 did not say one.
    image: Option<String>,
}

impl Images {
    /// The AMI id each of `wanted` launches, asking EC2 only about versions it has not answered for yet.
    /// A numbered version's AMI is kept for as long as some group launches it; what a `$Latest` or `$Default`
    /// version launches, and a version EC2 gave no AMI for (an error, no answer, an image resolved only at
    /// launch), is asked again once `again` (`describeInterval`) has passed. EC2 failing never fails a
    /// refresh: the group's image is then its release version (`discovery.rs`).
    pub(super) async fn lookup(
        &mut self,
        calls: &Calls,
        wanted: &HashSet<TemplateVersion>,
        again: Duration,
    ) -> HashMap<TemplateVersion, String> {
        self.known.retain(|version, _| wanted.contains(version));
        let now = Instant::now();
        let stale = |version: &TemplateVersion, known: &Known| {
            !(known.image.is_some() && version.fixed())
                && now.duration_since(known.read_at) >= again
        };
        let mut ask: Vec<&TemplateVersion> = (wanted.iter())
            .filter(|v| self.known.get(*v).is_none_or(|k| stale(v, k)))
            .collect();
        ask.sort();
        // One call a version: a call that names several versions fails whole when one is gone, and cannot
        // say which of its answers is `$Latest`. New versions are few: one per node group update.
        let mut tasks = tokio::task::JoinSet::new();
        for version in ask {
            let calls = calls.clone();
            let request = calls.ec2.describe_launch_template_versions();
            let request = match version.by_name {
                true => request.launch_template_name(&version.template),
                false => request.launch_template_id(&version.template),
            }
            .versions(&version.version);
            let version = version.clone();
            tasks.spawn(async move {
                let answer = calls
                    .ec2("DescribeLaunchTemplateVersions", request.send())
                    .await;
                (version, answer)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let Ok((version, answer)) = joined else {
                continue;
            };
            let image = match answer {
                Ok(output) => {
                    let data = (output.launch_template_versions().first())
                        .and_then(|v| v.launch_template_data());
                    // `resolve:ssm:` parameters name no AMI until EC2 launches an instance.
                    let image = data
                        .and_then(|d| d.image_id())
                        .filter(|id| id.starts_with("ami-"));
                    if image.is_none() {
                        tracing::debug!(%version, "launch template version names no AMI id");
                    }
                    image.map(str::to_string)
                }
                Err(error) => {
                    let error = sdk_error("ec2:DescribeLaunchTemplateVersions", error);
                    tracing::warn!(
                        %version,
                        %error,
                        "launch template version unknown: the node groups launching it report their \
                         release version as their image"
                    );
                    None
                }
            };
            let known = Known {
                read_at: now,
                image,
            };
            self.known.insert(version, known);
        }
        (self.known.iter())
            .filter_map(|(version, known)| Some((version.clone(), known.image.clone()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_autoscaling::types::{
        LaunchTemplate, LaunchTemplateSpecification, MixedInstancesPolicy,
    };

    fn spec(
        id: Option<&str>,
        name: Option<&str>,
        version: Option<&str>,
    ) -> LaunchTemplateSpecification {
        LaunchTemplateSpecification::builder()
            .set_launch_template_id(id.map(str::to_string))
            .set_launch_template_name(name.map(str::to_string))
            .set_version(version.map(str::to_string))
            .build()
    }

    #[test]
    fn the_asgs_own_template_or_its_mixed_policys() {
        let own = AutoScalingGroup::builder()
            .launch_template(spec(Some("lt-1"), Some("eks-web"), Some("3")))
            .build();
        let version = TemplateVersion::of(&own).unwrap();
        assert_eq!(version.to_string(), "lt-1 version 3");
        assert!(version.fixed() && !version.by_name);

        let mixed = AutoScalingGroup::builder()
            .mixed_instances_policy(
                MixedInstancesPolicy::builder()
                    .launch_template(
                        LaunchTemplate::builder()
                            .launch_template_specification(spec(None, Some("eks-spot"), None))
                            .build(),
                    )
                    .build(),
            )
            .build();
        let version = TemplateVersion::of(&mixed).unwrap();
        assert_eq!(version.to_string(), "eks-spot version $Default");
        assert!(version.by_name && !version.fixed());

        assert_eq!(
            TemplateVersion::of(&AutoScalingGroup::builder().build()),
            None
        );
    }
}
