//! Status conditions as Kubernetes' `meta.SetStatusCondition` keeps them: one per type, whose transition
//! time moves only when its status changes (how long a request has been provisioned is read from it).

use crate::k8s::objects;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::time::SystemTime;

/// One condition to set.
pub struct Set<'a> {
    pub kind: &'a str,
    pub ok: bool,
    pub reason: &'a str,
    pub message: String,
}

/// Sets `set` among `conditions`, stamped with the object's `generation`.
pub fn set(
    conditions: &mut Vec<Condition>,
    set: Set<'_>,
    generation: Option<i64>,
    now: SystemTime,
) {
    let status = if set.ok { "True" } else { "False" };
    let at = conditions.iter().position(|c| c.type_ == set.kind);
    let since = at
        .map(|i| &conditions[i])
        .filter(|c| c.status == status)
        .map(|c| c.last_transition_time.clone());
    let condition = Condition {
        type_: set.kind.to_string(),
        status: status.to_string(),
        reason: set.reason.to_string(),
        message: set.message,
        observed_generation: generation,
        last_transition_time: since.unwrap_or_else(|| time(now)),
    };
    match at {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

/// Condition `kind`, when there is one.
pub fn find<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == kind)
}

/// Whether condition `kind` is there and True.
pub fn is_true(conditions: &[Condition], kind: &str) -> bool {
    find(conditions, kind).is_some_and(|c| c.status == "True")
}

/// When condition `kind` last changed, if it is there.
pub fn since(conditions: &[Condition], kind: &str) -> Option<SystemTime> {
    Some(objects::time(&find(conditions, kind)?.last_transition_time))
}

/// A condition's time: whole seconds, as the API server keeps them.
pub fn time(t: SystemTime) -> Time {
    let seconds = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = k8s_openapi::jiff::Timestamp::from_second(i64::try_from(seconds).unwrap_or(0));
    Time(stamp.unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_transition_time_moves_only_when_the_status_changes() {
        let mut conditions = Vec::new();
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let ok = |ok: bool, reason: &'static str| Set {
            kind: "Provisioned",
            ok,
            reason,
            message: reason.into(),
        };
        set(&mut conditions, ok(false, "A"), Some(1), at(10));
        set(&mut conditions, ok(false, "B"), Some(2), at(20));
        assert_eq!(since(&conditions, "Provisioned"), Some(at(10)));
        assert_eq!(conditions[0].reason, "B");
        assert_eq!(conditions[0].observed_generation, Some(2));
        set(&mut conditions, ok(true, "C"), Some(2), at(30));
        assert_eq!(since(&conditions, "Provisioned"), Some(at(30)));
        assert!(is_true(&conditions, "Provisioned"));
        assert!(!is_true(&conditions, "Failed"));
        assert_eq!(conditions.len(), 1);
    }
}
