//! Taints and tolerations, as Kubernetes matches them.

/// Put on a node being removed (NoSchedule; value: unix seconds), as cluster-autoscaler does, so that
/// upstream and the companion both recognise it.
pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";
/// Put on unneeded nodes (PreferNoSchedule) to steer new pods elsewhere while their timer runs.
pub const DELETION_CANDIDATE_TAINT: &str = "DeletionCandidateOfClusterAutoscaler";

/// A taint as EKS and Kubernetes both know it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    /// Parses Kubernetes' spelling (`NoSchedule`) and EKS's (`NO_SCHEDULE`).
    pub fn parse(text: &str) -> Option<TaintEffect> {
        match text {
            "NoSchedule" | "NO_SCHEDULE" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" | "PREFER_NO_SCHEDULE" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" | "NO_EXECUTE" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }

    /// Kubernetes' spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }

    /// Whether the scheduler keeps pods that do not tolerate it off the node (PreferNoSchedule only steers).
    pub fn repels(self) -> bool {
        !matches!(self, TaintEffect::PreferNoSchedule)
    }
}

/// A pod's toleration. `key: None` with `Exists` tolerates every taint; `effect: None` every effect.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Toleration {
    pub key: Option<String>,
    /// `Exists` when true, `Equal` otherwise.
    pub exists: bool,
    pub value: String,
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// The scheduler's rule (k8s.io/api/core/v1 `Toleration.ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        match &self.key {
            None => self.exists,
            Some(key) if key != &taint.key => false,
            Some(_) => self.exists || self.value == taint.value,
        }
    }
}

/// The first taint that repels a pod with these tolerations, if any.
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|t| t.effect.repels() && !tolerations.iter().any(|tol| tol.tolerates(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    fn toleration(
        key: Option<&str>,
        exists: bool,
        value: &str,
        effect: Option<TaintEffect>,
    ) -> Toleration {
        Toleration {
            key: key.map(Into::into),
            exists,
            value: value.into(),
            effect,
        }
    }

    #[test]
    fn tolerations_match_as_the_scheduler_matches_them() {
        let batch = taint("dedicated", "batch", TaintEffect::NoSchedule);
        assert!(toleration(Some("dedicated"), false, "batch", None).tolerates(&batch));
        assert!(!toleration(Some("dedicated"), false, "web", None).tolerates(&batch));
        assert!(toleration(Some("dedicated"), true, "", None).tolerates(&batch));
        assert!(
            toleration(None, true, "", None).tolerates(&batch),
            "tolerate everything"
        );
        assert!(
            !toleration(None, false, "", None).tolerates(&batch),
            "empty key needs Exists"
        );
        assert!(
            !toleration(Some("dedicated"), true, "", Some(TaintEffect::NoExecute))
                .tolerates(&batch),
            "the effect must match when given"
        );
    }

    #[test]
    fn only_repelling_taints_count() {
        let taints = [
            taint("soft", "", TaintEffect::PreferNoSchedule),
            taint("hard", "x", TaintEffect::NoExecute),
        ];
        assert_eq!(untolerated(&taints, &[]).unwrap().key, "hard");
        let tolerate_hard = [toleration(
            Some("hard"),
            false,
            "x",
            Some(TaintEffect::NoExecute),
        )];
        assert!(untolerated(&taints, &tolerate_hard).is_none());
    }
}
