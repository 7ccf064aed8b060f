//! What a node group's new instances launch with: the image of the launch template version its Auto Scaling
//! group launches, and the capacity reservation it targets (`CapacityReservationSpecification`), from
//! `ec2:DescribeLaunchTemplateVersions`, remembered between refreshes; and those reservations, from one
//! `ec2:DescribeCapacityReservations` a refresh for all their ids.

use super::calls::{Calls, sdk_error};
use crate::model::{Invalid, Reservation, ReservationType};
use aws_sdk_autoscaling::types::AutoScalingGroup;
use aws_sdk_ec2::types::{CapacityReservation, CapacityReservationState, CapacityReservationType};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

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
    /// The capacity reservation it targets, if it targets one.
    reservation: Option<ReservationTarget>,
}

/// The capacity reservation a launch template version targets (`CapacityReservationTarget`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ReservationTarget {
    /// One reservation, `cr-...`: read with DescribeCapacityReservations.
    Id(String),
    /// A resource group of reservations, by its ARN. Its members are not read (that takes
    /// `resource-groups:ListGroupResources`): the group's nodes are labelled reserved, and it is served
    /// without reservations.
    ResourceGroup(String),
}

/// What a launch template version says of the instances it launches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Launch {
    /// Its AMI id, when EC2 said one.
    pub(super) image: Option<String>,
    pub(super) reservation: Option<ReservationTarget>,
}

/// The reservation target of a launch template version's data, if it has one.
fn reservation_target(
    data: &aws_sdk_ec2::types::ResponseLaunchTemplateData,
) -> Option<ReservationTarget> {
    let target = data
        .capacity_reservation_specification()?
        .capacity_reservation_target()?;
    match (
        target.capacity_reservation_id(),
        target.capacity_reservation_resource_group_arn(),
    ) {
        (Some(id), _) => Some(ReservationTarget::Id(id.to_string())),
        (None, Some(arn)) => Some(ReservationTarget::ResourceGroup(arn.to_string())),
        (None, None) => None,
    }
}

impl Images {
    /// The AMI id and reservation each of `wanted` launches with, asking EC2 only about versions it has not
    /// answered for yet.
    /// A numbered version's AMI is kept for as long as some group launches it; what a `$Latest` or `$Default`
    /// version launches, and a version EC2 gave no AMI for (an error, no answer, an image resolved only at
    /// launch), is asked again once `again` (`describeInterval`) has passed. EC2 failing never fails a
    /// refresh: the group's image is then its release version (`discovery.rs`).
    pub(super) async fn lookup(
        &mut self,
        calls: &Calls,
        wanted: &HashSet<TemplateVersion>,
        again: Duration,
    ) -> HashMap<TemplateVersion, Launch> {
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
            let (image, reservation) = match answer {
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
                    (image.map(str::to_string), data.and_then(reservation_target))
                }
                Err(error) => {
                    let error = sdk_error("ec2:DescribeLaunchTemplateVersions", error);
                    tracing::warn!(
                        %version,
                        %error,
                        "launch template version unknown: the node groups launching it report their \
                         release version as their image"
                    );
                    (None, None)
                }
            };
            let known = Known {
                read_at: now,
                image,
                reservation,
            };
            self.known.insert(version, known);
        }
        (self.known.iter())
            .map(|(version, known)| {
                let launch = Launch {
                    image: known.image.clone(),
                    reservation: known.reservation.clone(),
                };
                (version.clone(), launch)
            })
            .collect()
    }
}

/// The capacity reservations the groups' launch templates target, as EC2 last said them.
#[derive(Default)]
pub(super) struct Reservations {
    last: HashMap<String, Reservation>,
}

impl Reservations {
    /// The reservations `ids` name, with one DescribeCapacityReservations for them all (none when no group
    /// targets one). A failed call is counted (as every call is) and logged, and what EC2 said last stands;
    /// a reservation in no state that holds instances (expired, cancelled, pending, failed...) is left out.
    pub(super) async fn read(
        &mut self,
        calls: &Calls,
        ids: &BTreeSet<String>,
    ) -> &HashMap<String, Reservation> {
        self.last.retain(|id, _| ids.contains(id));
        if ids.is_empty() {
            return &self.last;
        }
        let request = (calls.ec2.describe_capacity_reservations())
            .set_capacity_reservation_ids(Some(ids.iter().cloned().collect()));
        let mut pages = request.into_paginator().send();
        let mut read = HashMap::new();
        while let Some(page) = pages.next().await {
            let page = match calls.record("ec2", "DescribeCapacityReservations", page) {
                Ok(page) => page,
                Err(error) => {
                    let error = sdk_error("ec2:DescribeCapacityReservations", error);
                    tracing::warn!(
                        %error,
                        reservations = ids.len(),
                        "capacity reservations unknown: the last ones read stand"
                    );
                    return &self.last;
                }
            };
            for found in page.capacity_reservations() {
                match reservation_of(found) {
                    Some(Ok(reservation)) => {
                        read.insert(reservation.id.clone(), reservation);
                    }
                    Some(Err(invalid)) => tracing::warn!(
                        reservation = found.capacity_reservation_id().unwrap_or_default(),
                        %invalid,
                        "capacity reservation left out"
                    ),
                    None => {}
                }
            }
        }
        self.last = read;
        &self.last
    }
}

/// A reservation as DescribeCapacityReservations says it: `None` when its state holds no instances (only
/// `active`, `scheduled` and `payment-pending` do), an error naming the field EC2 said wrong.
pub(super) fn reservation_of(found: &CapacityReservation) -> Option<Result<Reservation, Invalid>> {
    use CapacityReservationState::{Active, PaymentPending, Scheduled};
    if !matches!(found.state(), Some(Active | Scheduled | PaymentPending)) {
        return None;
    }
    let count = |field: &str, n: Option<i32>| {
        u32::try_from(n.unwrap_or(0)).map_err(|_| Invalid::new(field, "must not be negative"))
    };
    let time = |at: Option<&aws_sdk_ec2::primitives::DateTime>| {
        at.and_then(|at| SystemTime::try_from(*at).ok())
    };
    let read = || {
        let kind = match found.reservation_type() {
            Some(CapacityReservationType::CapacityBlock) => ReservationType::CapacityBlock,
            Some(CapacityReservationType::Default) | None => ReservationType::Odcr,
            Some(other) => {
                let rule = format!("{:?} is none of capacity-block, default", other.as_str());
                return Err(Invalid::new("ReservationType", rule));
            }
        };
        let reservation = Reservation {
            id: found
                .capacity_reservation_id()
                .unwrap_or_default()
                .to_string(),
            kind,
            start: time(found.start_date()),
            end: time(found.end_date()),
            total: count("TotalInstanceCount", found.total_instance_count())?,
            available: count("AvailableInstanceCount", found.available_instance_count())?,
        };
        reservation.validate()?;
        Ok(reservation)
    };
    Some(read())
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
    fn reservations_read_as_ec2_says_them_and_only_in_states_that_hold_instances() {
        use aws_sdk_ec2::primitives::DateTime;
        let block = CapacityReservation::builder()
            .capacity_reservation_id("cr-0123456789abcdef0")
            .reservation_type(CapacityReservationType::CapacityBlock)
            .state(CapacityReservationState::Scheduled)
            .start_date(DateTime::from_secs(1_800_000_000))
            .end_date(DateTime::from_secs(1_800_086_400))
            .total_instance_count(4)
            .available_instance_count(3)
            .build();
        let read = reservation_of(&block).unwrap().unwrap();
        assert_eq!(read.kind, ReservationType::CapacityBlock);
        assert_eq!((read.total, read.available), (4, 3));
        let at = |s| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(
            (read.start, read.end),
            (at(1_800_000_000), at(1_800_086_400))
        );

        let odcr = CapacityReservation::builder()
            .capacity_reservation_id("cr-0abc")
            .reservation_type(CapacityReservationType::Default)
            .state(CapacityReservationState::Active)
            .total_instance_count(2)
            .available_instance_count(2)
            .build();
        let read = reservation_of(&odcr).unwrap().unwrap();
        assert_eq!(
            (read.kind, read.start, read.end),
            (ReservationType::Odcr, None, None)
        );
        for gone in [
            CapacityReservationState::Expired,
            CapacityReservationState::Cancelled,
        ] {
            let found = CapacityReservation::builder().state(gone).build();
            assert_eq!(reservation_of(&found), None);
        }
        let broken = CapacityReservation::builder()
            .capacity_reservation_id("cr-0abc")
            .state(CapacityReservationState::Active)
            .total_instance_count(2)
            .available_instance_count(-1)
            .build();
        let field = reservation_of(&broken).unwrap().unwrap_err().field;
        assert_eq!(field, "AvailableInstanceCount");
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
