//! A window's `minSize` above a group's target is asked for at once, at the window's start, as
//! cluster-autoscaler's `--enforce-node-group-min-size` asks for a group below its min (upstream's
//! `ScaleUpToNodeGroupMinSize`): after the pending pods' scale-up, for what it did not already ask of the
//! group. A group scale-up skips (backed off, unhealthy, failing) is not raised this loop.

use crate::autoscaler::group::Group;
use crate::autoscaler::schedules::in_force::SizesInForce;
use crate::autoscaler::status::ScaleUp;
use crate::model::PodNames;

impl SizesInForce {
    /// The scale-ups that take each group up to its scheduled min, beyond what `planned` asks of it.
    pub fn raise_to_min(&self, groups: &[Group], planned: &[ScaleUp]) -> Vec<ScaleUp> {
        let mut raised = Vec::new();
        for (g, sizes) in self.each() {
            let Some(group) = groups.get(g).filter(|group| group.skip.is_none()) else {
                continue;
            };
            let asked: u64 = (planned.iter())
                .filter(|s| s.node_group == group.id && s.error.is_none())
                .map(|s| s.delta)
                .sum();
            let coming = i64::from(group.target_size) + i64::try_from(asked).unwrap_or(i64::MAX);
            let short = i64::from(sizes.min_size).saturating_sub(coming);
            let Ok(delta) = u64::try_from(short) else {
                continue;
            };
            if delta == 0 {
                continue;
            }
            raised.push(ScaleUp {
                node_group: group.id.clone(),
                delta,
                pods: PodNames::default(),
                reason: format!(
                    "{} is {}: raised from {coming} ahead of the pods (as cluster-autoscaler's \
                     --enforce-node-group-min-size)",
                    group.id,
                    sizes.held_at_min()
                ),
                zones: Default::default(),
                error: None,
                replaces: Vec::new(),
                provisioning_request: None,
            });
        }
        raised
    }
}
