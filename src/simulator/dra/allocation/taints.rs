//! Device taints against a request's tolerations (`resourceclaim/devicetoleration.go`): a device whose
//! NoSchedule or NoExecute taints are not all tolerated is not allocated; None and unknown effects are
//! ignored.

use crate::model::{Device, DeviceTaint, DeviceTaintEffect, DeviceToleration};

fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration.effect.is_some_and(|e| e != taint.effect) {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    toleration.exists || toleration.value == taint.value
}

pub(crate) fn tolerated(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    (device.taints.iter())
        .filter(|t| {
            matches!(
                t.effect,
                DeviceTaintEffect::NoSchedule | DeviceTaintEffect::NoExecute
            )
        })
        .all(|t| tolerations.iter().any(|tol| tolerates(tol, t)))
}
