//! Each ProvisioningRequest of a served class, read into what the loop does with it this loop: book the room
//! of one that is provisioned (less what its consuming pods already run on), try to provision one that is
//! not, or nothing (failed, booking over). Its pods are made from the PodTemplates its pod sets name; one
//! naming a missing or unreadable template fails, as upstream's "pods cannot be created". The conditions
//! are upstream's, with its reasons, messages and times (10 minutes of booking, 7 days to be provisioned).

use crate::k8s::{
    self as api, BEST_EFFORT_ATOMIC, CHECK_CAPACITY, ConditionSet as Set,
    REQUEST_ACCEPTED as ACCEPTED, REQUEST_BOOKING_EXPIRED as BOOKING_EXPIRED,
    REQUEST_FAILED as FAILED, REQUEST_NO_RETRY as NO_RETRY, REQUEST_PROVISIONED as PROVISIONED,
    Template, VersionedRequest, condition_is_true, condition_since, find_condition, set_condition,
    time_from_api,
};
use crate::model::{Invalid, Pod};
use std::time::{Duration, SystemTime};

/// How long room stays booked after `Provisioned=True`, and how long a request may wait to be provisioned
/// (upstream's defaults, not settable there either).
pub const BOOKING_TIME: Duration = Duration::from_secs(10 * 60);
pub const EXPIRATION_TIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// The most pods one request may ask for: each becomes a virtual pod every loop, so a request for two
/// billion (the API allows it) must fail, not take the companion's memory.
pub const MAX_PODS: u64 = 10_000;

/// Reasons and messages, as cluster-autoscaler writes them.
const ACCEPTED_MSG: &str = "ProvisioningRequest is accepted by ClusterAutoscaler";
pub const CAPACITY_IS_FOUND: &str = "CapacityIsFound";
pub const CAPACITY_IS_FOUND_MSG: &str = "Capacity is found in the cluster";
pub const CAPACITY_IS_NOT_FOUND: &str = "CapacityIsNotFound";
pub const CAPACITY_IS_NOT_FOUND_MSG: &str = "Capacity is not found, CA will try to find it later.";
pub const CAPACITY_IS_PROVISIONED: &str = "CapacityIsProvisioned";
const NO_RETRY_MSG: &str = "CA could not find requested capacity.";
const FAILED_TO_CREATE_PODS: &str = "FailedToCreatePods";
const RESERVATION_EXPIRED: &str = "CapacityReservationTimeExpired";
const RESERVATION_EXPIRED_MSG: &str = "Capacity reservation time is expired";
const EXPIRED: &str = "Expired";
const EXPIRED_MSG: &str = "ProvisioningRequest is expired";

/// The two classes served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Places the pods on the cluster as it is; never scales up.
    CheckCapacity,
    /// Scales up for all the pods in one all-or-nothing increase, or not at all.
    BestEffortAtomic,
}

impl Class {
    fn of(name: &str) -> Option<Class> {
        match name {
            CHECK_CAPACITY => Some(Class::CheckCapacity),
            BEST_EFFORT_ATOMIC => Some(Class::BestEffortAtomic),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::CheckCapacity => CHECK_CAPACITY,
            Class::BestEffortAtomic => BEST_EFFORT_ATOMIC,
        }
    }
}

/// What the loop does for a request this loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// Nothing: it failed, or its booking is over.
    Nothing,
    /// Provisioned: hold room for this many of its pods (those whose consumers do not run yet).
    Book(u32),
    /// Not provisioned yet: find (or make) room for all its pods.
    Provision,
}

/// A request, read: its pods and what this loop does for it; its status, to be written back.
#[derive(Clone, Debug)]
pub struct Request {
    pub namespace: String,
    pub name: String,
    pub class: Class,
    /// Each pod set's pod and count, in the request's order (empty when its pods cannot be made).
    pub pod_sets: Vec<(Pod, u32)>,
    /// How many pods its spec asks for (every pod set's count, whether or not its pods can be made).
    pub asked: u32,
    pub want: Want,
    pub no_retry: bool,
    pub created: Option<SystemTime>,
    /// Its status with this loop's conditions.
    pub status: api::RequestStatus,
    /// The status the object has now: a status equal to it is not written again.
    pub previous: Option<api::RequestStatus>,
    pub version: &'static str,
    generation: Option<i64>,
}

/// Reads every request of a served class (others are left alone), at `now`, given how many of each one's
/// consuming pods run (`running`, by `namespace/name`).
pub fn read(
    requests: &[VersionedRequest],
    templates: &[Template],
    running: impl Fn(&str) -> u32,
    now: SystemTime,
) -> Vec<Request> {
    let mut out: Vec<Request> = (requests.iter())
        .filter_map(|read| {
            let class = Class::of(&read.request.spec.provisioning_class_name)?;
            Some(resolve(read, class, templates, &running, now))
        })
        .collect();
    // Oldest first, as upstream takes them: an older request is not starved by newer ones.
    out.sort_by_key(|r| (r.created, r.key()));
    out
}

fn resolve(
    read: &VersionedRequest,
    class: Class,
    templates: &[Template],
    running: &impl Fn(&str) -> u32,
    now: SystemTime,
) -> Request {
    let request = &read.request;
    let metadata = &request.metadata;
    let mut r = Request {
        namespace: metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        name: metadata.name.clone().unwrap_or_default(),
        class,
        pod_sets: Vec::new(),
        asked: (request.spec.pod_sets.iter())
            .map(|s| u32::try_from(s.count).unwrap_or(0))
            .fold(0u32, u32::saturating_add),
        want: Want::Nothing,
        no_retry: request.spec.parameters.get(NO_RETRY).map(String::as_str) == Some("true"),
        created: metadata.creation_timestamp.as_ref().map(time_from_api),
        status: request.status.clone().unwrap_or_default(),
        previous: request.status.clone(),
        version: read.version,
        generation: metadata.generation,
    };
    let ended = |c: &[_]| condition_is_true(c, FAILED) || condition_is_true(c, BOOKING_EXPIRED);
    if ended(&r.status.conditions) {
        return r;
    }
    if find_condition(&r.status.conditions, ACCEPTED).is_none() {
        r.set(
            Set {
                kind: ACCEPTED,
                ok: true,
                reason: ACCEPTED,
                message: ACCEPTED_MSG.into(),
            },
            now,
        );
    }
    match pod_sets(&r.namespace, &request.spec, templates) {
        Ok(sets) => r.pod_sets = sets,
        Err(why) => {
            let message = format!("Provisioning Request's pods cannot be created: {why}");
            r.set(
                Set {
                    kind: FAILED,
                    ok: true,
                    reason: FAILED_TO_CREATE_PODS,
                    message,
                },
                now,
            );
            return r;
        }
    }
    let conditions = &r.status.conditions;
    if condition_is_true(conditions, PROVISIONED) {
        let since = condition_since(conditions, PROVISIONED).unwrap_or(now);
        if since + BOOKING_TIME < now {
            let message = RESERVATION_EXPIRED_MSG.into();
            r.set(
                Set {
                    kind: BOOKING_EXPIRED,
                    ok: true,
                    reason: RESERVATION_EXPIRED,
                    message,
                },
                now,
            );
        } else {
            r.want = Want::Book(r.pods().saturating_sub(running(&r.key())));
        }
    } else if r.created.is_some_and(|c| c + EXPIRATION_TIME < now) {
        r.set(
            Set {
                kind: FAILED,
                ok: true,
                reason: EXPIRED,
                message: EXPIRED_MSG.into(),
            },
            now,
        );
    } else {
        r.want = Want::Provision;
    }
    r
}

/// Each pod set's pod (from its PodTemplate in `namespace`) and count.
fn pod_sets(
    namespace: &str,
    spec: &api::RequestSpec,
    templates: &[Template],
) -> Result<Vec<(Pod, u32)>, Invalid> {
    if spec.pod_sets.is_empty() {
        return Err(Invalid::value("it has no podSets"));
    }
    let asked: u64 = spec.pod_sets.iter().map(|s| s.count.max(0) as u64).sum();
    if asked > MAX_PODS {
        return Err(Invalid::value(format!(
            "it asks for {asked} pods, more than ekscale provisions for one request ({MAX_PODS})"
        )));
    }
    let mut sets = Vec::with_capacity(spec.pod_sets.len());
    for (i, set) in spec.pod_sets.iter().enumerate() {
        let name = &set.pod_template_ref.name;
        let count = u32::try_from(set.count)
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                Invalid::value(format!("podSets[{i}].count is {}: at least 1", set.count))
            })?;
        let template = (templates.iter())
            .find(|t| t.namespace == namespace && &t.name == name)
            .ok_or_else(|| Invalid::value(format!("PodTemplate {namespace}/{name} not found")))?;
        let pod = (template.pod.clone())
            .map_err(|e| Invalid::value(format!("PodTemplate {namespace}/{name}: {e}")))?;
        sets.push((pod, count));
    }
    Ok(sets)
}

impl Request {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// How many pods it asks room for: every pod set's count.
    pub fn pods(&self) -> u32 {
        self.pod_sets.iter().map(|(_, n)| n).sum()
    }

    /// Whether pods consuming it are its to place, not scale-up's: while it is neither failed nor past
    /// its booking.
    pub fn active(&self) -> bool {
        self.want != Want::Nothing
    }

    /// The virtual pods this loop holds or seeks room for: the last `n` of its pods (the first ones are
    /// taken by consumers that run), named `NAME-SET-INDEX` in its namespace.
    pub fn virtual_pods(&self) -> Vec<Pod> {
        let n = match self.want {
            Want::Nothing => 0,
            Want::Book(n) => n,
            Want::Provision => self.pods(),
        };
        let skip = self.pods() - n;
        let all = (self.pod_sets.iter().enumerate())
            .flat_map(|(s, (pod, count))| (0..*count).map(move |i| (s, i, pod)));
        all.skip(skip as usize)
            .map(|(s, i, pod)| {
                pod.virtual_pending(&self.namespace, format!("{}-{s}-{i}", self.name))
            })
            .collect()
    }

    /// The request was provisioned this loop: its room was found (`reason` says whether in the cluster as
    /// it is or in a scale-up).
    pub fn provisioned(&mut self, reason: &str, now: SystemTime) {
        self.set(
            Set {
                kind: PROVISIONED,
                ok: true,
                reason,
                message: CAPACITY_IS_FOUND_MSG.into(),
            },
            now,
        );
    }

    /// Its room was not found this loop (`why`): retried next loop, or failed with `noRetry`.
    pub fn not_provisioned(&mut self, why: &str, now: SystemTime) {
        // `noRetry` is read for check-capacity only, as upstream reads it.
        if self.no_retry && self.class == Class::CheckCapacity {
            let message = format!("{NO_RETRY_MSG} {why}");
            self.set(
                Set {
                    kind: FAILED,
                    ok: true,
                    reason: CAPACITY_IS_NOT_FOUND,
                    message,
                },
                now,
            );
        } else {
            let message = format!("{CAPACITY_IS_NOT_FOUND_MSG} {why}");
            self.set(
                Set {
                    kind: PROVISIONED,
                    ok: false,
                    reason: CAPACITY_IS_NOT_FOUND,
                    message,
                },
                now,
            );
        }
    }

    /// Whether the status differs from what the object has (so it must be written).
    pub fn changed(&self) -> bool {
        self.previous.as_ref() != Some(&self.status)
    }

    fn set(&mut self, set: Set<'_>, now: SystemTime) {
        set_condition(&mut self.status.conditions, set, self.generation, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn templates() -> Vec<Template> {
        let template: k8s_openapi::api::core::v1::PodTemplate = serde_json::from_value(json!({
            "metadata": {"name": "worker", "namespace": "ml"},
            "template": {"spec": {"containers": [{"name": "c",
                         "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}}
        }))
        .unwrap();
        vec![Template::from_api(&template)]
    }

    fn request(class: &str, template: &str, conditions: serde_json::Value) -> VersionedRequest {
        VersionedRequest::from_value(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": "train", "namespace": "ml", "generation": 3,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"provisioningClassName": class,
                     "podSets": [{"podTemplateRef": {"name": template}, "count": 4}]},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn at(rfc3339: &str) -> SystemTime {
        let stamp: k8s_openapi::jiff::Timestamp = rfc3339.parse().unwrap();
        SystemTime::UNIX_EPOCH + Duration::from_secs(stamp.as_second() as u64)
    }

    fn one(read: VersionedRequest, running: u32, now: &str) -> Request {
        let mut all = super::read(&[read], &templates(), |_| running, at(now));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    fn condition(r: &Request, kind: &str) -> (String, String, String) {
        let c = find_condition(&r.status.conditions, kind).unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    fn provisioned_at(time: &str) -> serde_json::Value {
        json!([{"type": "Provisioned", "status": "True", "reason": "CapacityIsFound",
                "message": "Capacity is found in the cluster", "lastTransitionTime": time}])
    }

    #[test]
    fn a_new_request_is_accepted_and_provisioned_for() {
        let r = one(
            request(CHECK_CAPACITY, "worker", json!([])),
            0,
            "2026-01-01T00:01:00Z",
        );
        assert_eq!(r.want, Want::Provision);
        assert_eq!(r.pods(), 4);
        let accepted = condition(&r, ACCEPTED);
        assert_eq!(
            accepted,
            ("True".into(), "Accepted".into(), ACCEPTED_MSG.into())
        );
        assert!(r.changed());
        let names: Vec<String> = r.virtual_pods().iter().map(Pod::key).collect();
        assert_eq!(
            names,
            [
                "ml/train-0-0",
                "ml/train-0-1",
                "ml/train-0-2",
                "ml/train-0-3"
            ]
        );
        assert_eq!(r.virtual_pods()[0].demand.cpu_millis, 2000);
    }

    #[test]
    fn other_classes_are_left_alone() {
        let read = request("queued-provisioning.gke.io", "worker", json!([]));
        assert!(super::read(&[read], &templates(), |_| 0, SystemTime::now()).is_empty());
    }

    #[test]
    fn a_missing_template_fails_the_request_with_its_name() {
        let r = one(
            request(BEST_EFFORT_ATOMIC, "gone", json!([])),
            0,
            "2026-01-01T00:01:00Z",
        );
        assert_eq!((r.want, r.asked, r.pods()), (Want::Nothing, 4, 0));
        let failed = condition(&r, FAILED);
        assert_eq!(failed.1, "FailedToCreatePods");
        assert_eq!(
            failed.2,
            "Provisioning Request's pods cannot be created: PodTemplate ml/gone not found"
        );
        assert_eq!(r.status.conditions[0].observed_generation, Some(3));
    }

    #[test]
    fn booked_room_shrinks_as_consumers_run_and_ends_after_ten_minutes() {
        let booked = request(
            CHECK_CAPACITY,
            "worker",
            provisioned_at("2026-01-01T00:05:00Z"),
        );
        let r = one(booked.clone(), 1, "2026-01-01T00:14:59Z");
        assert_eq!(r.want, Want::Book(3));
        let names: Vec<String> = r.virtual_pods().iter().map(Pod::key).collect();
        assert_eq!(names, ["ml/train-0-1", "ml/train-0-2", "ml/train-0-3"]);
        let r = one(booked, 0, "2026-01-01T00:15:01Z");
        assert_eq!(r.want, Want::Nothing);
        let expired = condition(&r, BOOKING_EXPIRED);
        assert_eq!(
            expired,
            (
                "True".into(),
                RESERVATION_EXPIRED.into(),
                RESERVATION_EXPIRED_MSG.into()
            )
        );
    }

    #[test]
    fn a_request_for_more_pods_than_one_request_may_have_fails() {
        let mut read = request(CHECK_CAPACITY, "worker", json!([]));
        read.request.spec.pod_sets[0].count = i32::MAX;
        read.request
            .spec
            .pod_sets
            .push(read.request.spec.pod_sets[0].clone());
        let r = one(read, 0, "2026-01-01T00:01:00Z");
        assert_eq!(
            (r.want, r.asked, r.virtual_pods().len()),
            (Want::Nothing, 4_294_967_294, 0)
        );
        let failed = condition(&r, FAILED);
        assert_eq!(
            failed.2,
            "Provisioning Request's pods cannot be created: it asks for 4294967294 pods, more than \
             ekscale provisions for one request (10000)"
        );
    }

    #[test]
    fn a_request_never_provisioned_expires_after_seven_days() {
        let r = one(
            request(CHECK_CAPACITY, "worker", json!([])),
            0,
            "2026-01-08T00:00:01Z",
        );
        assert_eq!(r.want, Want::Nothing);
        assert_eq!(condition(&r, FAILED).1, EXPIRED);
        let r = one(
            request(CHECK_CAPACITY, "worker", json!([])),
            0,
            "2026-01-07T23:59:59Z",
        );
        assert_eq!(r.want, Want::Provision);
    }

    #[test]
    fn no_retry_fails_a_check_that_finds_no_room() {
        let mut read = request(CHECK_CAPACITY, "worker", json!([]));
        read.request
            .spec
            .parameters
            .insert(NO_RETRY.into(), "true".into());
        let mut r = one(read, 0, "2026-01-01T00:01:00Z");
        r.not_provisioned("1 of 4 pods fit.", at("2026-01-01T00:01:00Z"));
        let failed = condition(&r, FAILED);
        assert_eq!(failed.1, CAPACITY_IS_NOT_FOUND);
        assert_eq!(
            failed.2,
            "CA could not find requested capacity. 1 of 4 pods fit."
        );
        assert!(find_condition(&r.status.conditions, PROVISIONED).is_none());
    }
}
