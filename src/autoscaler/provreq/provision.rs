//! The requests not provisioned yet, oldest first (at most [`MAX_TRIALS_PER_LOOP`] a loop), each tried on a
//! fork of the snapshot that replaces it only when all its pods found room: check-capacity in the cluster as
//! it is, best-effort-atomic there or in one group's all-or-nothing increase (asked for when acting). Their
//! conditions are set here; the scale-ups made for them are returned.

use crate::autoscaler::clustersnapshot::snapshot::ClusterSnapshot;
use crate::autoscaler::group::Group;
use crate::autoscaler::planning::planning;
use crate::autoscaler::provreq::outcome::Requests;
use crate::autoscaler::provreq::requests::{CAPACITY_IS_FOUND, CAPACITY_IS_PROVISIONED, Want};
use crate::autoscaler::provreq::trial::{self, MAX_TRIALS_PER_LOOP, Tried};
use crate::autoscaler::scaleup::executor::{Executor, Increase};
use crate::autoscaler::scaleup::expander::{Expander, ExpanderError};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::autoscaler::status::{RequestScaleUp, ScaleUp};
use crate::model::{PodList, PodNames};
use crate::simulator::EquivalenceGroup;
use std::time::SystemTime;

/// What provisioning reads and changes of the loop: the snapshot a request's room is kept in, the groups
/// whose targets its increases raise, and each request's pods in equivalence groups.
pub struct ProvisionWorld<'a> {
    pub snapshot: &'a mut ClusterSnapshot,
    pub groups: &'a mut [Group],
    pub pods: PodList<'a>,
    pub keys: &'a PodNames,
    pub asked: &'a [Vec<EquivalenceGroup>],
    pub limits: &'a ClusterLimits,
    pub expander: &'a Expander,
}

/// Provisions the requests of `requests` that want it; `acting` asks for their increases (none: planned only).
pub async fn provision(
    requests: &mut Requests,
    world: ProvisionWorld<'_>,
    mut acting: Option<Executor<'_>>,
    now: SystemTime,
) -> Result<Vec<ScaleUp>, ExpanderError> {
    let ProvisionWorld {
        snapshot, groups, ..
    } = world;
    let mut scale_ups = Vec::new();
    let tried = (requests.list.iter_mut().enumerate())
        .filter(|(_, r)| r.want == Want::Provision)
        .take(MAX_TRIALS_PER_LOOP);
    for (i, r) in tried {
        let on = trial::TrialWorld {
            pods: world.pods,
            keys: world.keys,
            groups,
            limits: world.limits,
            expander: world.expander,
        };
        let (mut scale_up, fork) =
            match planning(|| trial::try_on(snapshot, r.class, &world.asked[i], &on))? {
                Tried::InCluster(fork) => {
                    *snapshot = fork;
                    r.provisioned(CAPACITY_IS_FOUND, now);
                    continue;
                }
                Tried::NotFound(why) => {
                    r.not_provisioned(&why, now);
                    continue;
                }
                Tried::ScaleUp(fork, scale_up) => (scale_up, fork),
            };
        let (id, delta) = (scale_up.node_group.clone(), scale_up.delta);
        scale_up.reason = format!(
            "ProvisioningRequest {} (all or nothing): {}",
            r.key(),
            scale_up.reason
        );
        scale_up.provisioning_request = Some(r.key());
        let Some(g) = groups.iter().position(|g| g.id == id) else {
            continue;
        };
        let asked = match &mut acting {
            Some(executor) => (executor
                .increase(&groups[g], delta, Increase::AllOrNothing, now)
                .await)
                .map_err(|e| e.to_string()),
            None => Ok(()),
        };
        match asked {
            Ok(()) => {
                // The plan after this one counts these nodes against the group's max.
                let delta_i32 = i32::try_from(delta).unwrap_or(i32::MAX);
                groups[g].target_size = groups[g].target_size.saturating_add(delta_i32);
                *snapshot = fork;
                r.provisioned(CAPACITY_IS_PROVISIONED, now);
                requests.scale_ups[i].push(RequestScaleUp {
                    node_group: id,
                    delta,
                });
            }
            Err(why) => {
                let failed =
                    format!("The all-or-nothing increase of {id} by {delta} failed: {why}.");
                r.not_provisioned(&failed, now);
                scale_up.error = Some(why);
            }
        }
        scale_ups.push(scale_up);
    }
    Ok(scale_ups)
}
