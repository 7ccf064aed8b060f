//! Each group's scheduled sizes this loop: the first window of its entry's `schedules:` open at the loop's
//! `now` (`simulate --now`, the simulated clock; never the machine's clock here), its `minSize` and `maxSize`
//! held within the provider's own min and max, written over the group's sizes so that every stage after the
//! cluster state (scale-up's max, the balance, scale-down's min, consolidation, the instances that never
//! registered) plans with them. The report keeps the provider's own sizes beside the window's.

use crate::autoscaler::clusterstate::state::MAX_SIZE_REACHED;
use crate::autoscaler::disruption::{DisruptionConfig, ScheduledSize, SizeSchedule, in_force};
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::status::{GroupStatus, ScheduleStatus};
use std::time::SystemTime;

/// The sizes a window holds one group to this loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSizes {
    /// The group's id.
    pub group: String,
    /// Which of its entry's `schedules` (its index).
    pub index: usize,
    /// The window as written, for people: `schedules[0]: "0 19 * * mon-fri" for 13h in Europe/Berlin`.
    pub window: String,
    /// The sizes in force: the window's, within the provider's own.
    pub min_size: i32,
    pub max_size: i32,
    /// The provider's own min and max.
    pub own: (i32, i32),
    /// When the window closes.
    pub until: SystemTime,
    /// What the window asked beyond the provider's own sizes, when it did.
    pub clamped: Option<String>,
}

impl GroupSizes {
    /// The window's sizes held within the provider's `own` min and max.
    fn new(group: &GroupFacts, sized: ScheduledSize, written: &SizeSchedule) -> GroupSizes {
        let own = (group.group.min_size, group.group.max_size);
        let (own_min, own_max) = own;
        let min_size = sized.min_size.unwrap_or(own_min).clamp(own_min, own_max);
        let max_size = sized.max_size.unwrap_or(own_max).clamp(min_size, own_max);
        let mut beyond = Vec::new();
        if let Some(min) = sized.min_size.filter(|&m| m != min_size) {
            beyond.push(format!("minSize {min}"));
        }
        if let Some(max) = sized.max_size.filter(|&m| m != max_size) {
            beyond.push(format!("maxSize {max}"));
        }
        let clamped = (!beyond.is_empty()).then(|| {
            format!(
                "the window asks for {}, beyond the provider's own minSize {own_min} and maxSize {own_max}: \
                 held at {min_size} to {max_size}",
                beyond.join(" and ")
            )
        });
        let w = &written.window;
        GroupSizes {
            group: group.group.id.clone(),
            index: sized.index,
            window: format!(
                "schedules[{}]: {:?} for {} in {}",
                sized.index,
                w.cron(),
                humantime::format_duration(w.duration()),
                w.time_zone()
            ),
            min_size,
            max_size,
            own,
            until: sized.until,
            clamped,
        }
    }

    /// Whether the window takes the group's max below the provider's.
    pub fn lowers_max(&self) -> bool {
        self.max_size < self.own.1
    }

    /// `batch is held at maxSize 0 by schedules[0] until 2026-03-03T07:00:00Z`.
    pub fn held_at_max(&self) -> String {
        format!(
            "{} is held at maxSize {} by schedules[{}] until {}",
            self.group,
            self.max_size,
            self.index,
            humantime::format_rfc3339_seconds(self.until)
        )
    }

    /// `held at minSize 5 by schedules[1] until 2026-03-03T08:00:00Z`.
    pub fn held_at_min(&self) -> String {
        format!(
            "held at minSize {} by schedules[{}] until {}",
            self.min_size,
            self.index,
            humantime::format_rfc3339_seconds(self.until)
        )
    }
}

/// Every group's scheduled sizes this loop (by the groups' order as the provider listed them), and the
/// schedules that could not be evaluated.
#[derive(Clone, Debug, Default)]
pub struct SizesInForce {
    of: Vec<Option<GroupSizes>>,
    /// A group's schedules that could not be evaluated: it keeps its own sizes this loop.
    problems: Vec<String>,
}

impl SizesInForce {
    /// The window in force for each group of `facts` whose entry in `config` has `schedules:`, at `now`;
    /// its sizes written over the group's.
    pub fn apply(
        config: Option<&DisruptionConfig>,
        facts: &mut [GroupFacts],
        now: SystemTime,
    ) -> SizesInForce {
        let mut sizes = SizesInForce {
            of: vec![None; facts.len()],
            problems: Vec::new(),
        };
        let Some(config) = config else {
            return sizes;
        };
        for (f, slot) in facts.iter_mut().zip(&mut sizes.of) {
            let Some(policy) = config.policy_for(&f.group.id) else {
                continue;
            };
            let schedules = policy.schedules();
            let sized = match in_force(schedules, now) {
                Ok(Some(sized)) => sized,
                Ok(None) => continue,
                Err(e) => {
                    let id = &f.group.id;
                    (sizes.problems).push(format!(
                        "scheduled sizes of {id}: a window {e}; it keeps its own sizes this loop"
                    ));
                    continue;
                }
            };
            let held = GroupSizes::new(f, sized, &schedules[sized.index]);
            f.group.min_size = held.min_size;
            f.group.max_size = held.max_size;
            *slot = Some(held);
        }
        sizes
    }

    /// Each group with its window, by index.
    pub fn each(&self) -> impl Iterator<Item = (usize, &GroupSizes)> {
        (self.of.iter().enumerate()).filter_map(|(g, s)| Some((g, s.as_ref()?)))
    }

    /// The schedules that could not be evaluated this loop, for the report's `errors`.
    pub fn take_problems(&mut self) -> Vec<String> {
        std::mem::take(&mut self.problems)
    }

    /// A group a window holds at its max is skipped by scale-up, the window named (rather than upstream's
    /// "max node group size reached"); a group backed off or unhealthy keeps that reason.
    pub fn hold(&self, groups: &mut [Group]) {
        for (g, sizes) in self.each() {
            let Some(group) = groups.get_mut(g) else {
                continue;
            };
            let at_max = group.target_size >= sizes.max_size;
            let plain = group.skip.as_deref().is_none_or(|s| s == MAX_SIZE_REACHED);
            if sizes.lowers_max() && at_max && plain {
                group.skip = Some(sizes.held_at_max());
            }
        }
    }

    /// The report's groups: the provider's own sizes, and the window in force beside them.
    pub fn report(&self, statuses: &mut [GroupStatus]) {
        for (status, sizes) in statuses.iter_mut().zip(&self.of) {
            let Some(sizes) = sizes else {
                continue;
            };
            (status.min_size, status.max_size) = sizes.own;
            let mut shown = ScheduleStatus::new(
                sizes.min_size,
                sizes.max_size,
                sizes.until,
                sizes.window.clone(),
            );
            shown.note = sizes.clamped.clone();
            status.schedule = Some(shown);
        }
    }
}
