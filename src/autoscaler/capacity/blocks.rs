//! A Capacity Block group at an instant, as the EKS user guide says EKS treats it: new nodes only within a
//! block's window, `[start, end - 40 min)`, and only into its available instances; EKS scales the group to 0
//! forty minutes before the block ends, EC2 terminates the instances ten minutes later. ekscale asks for no
//! node from `drainLead` before that scale-in on (its pods planned elsewhere, the nodes leaving), and never
//! raises the group's target back: nothing fights EKS's scale-to-zero. A group EKS says is `CAPACITY_BLOCK`
//! whose provider serves no block is left as any group.

use crate::autoscaler::clusterstate::backoff::GroupBackoff;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::model::{
    CapacityType, DEFAULT_DRAIN_LEAD, NodeGroupState, Reservation, ReservationType,
};
use std::time::{Duration, SystemTime};

/// How long a full block keeps its group out of scale-up once seen full, as Karpenter's unavailable
/// offerings cache keeps an offering out (3 minutes); seen full again, again.
pub const FULL_UNAVAILABLE: Duration = Duration::from_secs(3 * 60);

/// An instant as the report writes it.
fn at(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Where a Capacity Block group stands at an instant.
#[derive(Clone, Debug, PartialEq)]
pub enum Standing<'r> {
    /// A block's window is open and its drain not started: new nodes may be asked for, as many as the open
    /// blocks have available.
    Open {
        blocks: Vec<&'r Reservation>,
        available: u32,
    },
    /// A block ends: its nodes drain from `drain_from`; EKS scales the group in at `scale_in`.
    Ending {
        block: &'r Reservation,
        drain_from: SystemTime,
        scale_in: SystemTime,
    },
    /// No block's window has opened yet; the first opens at `opens`.
    NotYet {
        block: &'r Reservation,
        opens: SystemTime,
    },
    /// Every block has ended.
    Closed { block: &'r Reservation },
}

/// When the group stops growing for `block`: `drain_lead` before EKS scales it in; and that scale-in.
fn drain_window(
    block: &Reservation,
    drain_lead: Duration,
) -> Option<(SystemTime, SystemTime, SystemTime)> {
    let (start, close) = block.scale_up_window()?;
    let drain_from = close.checked_sub(drain_lead).unwrap_or(start).max(start);
    Some((start, drain_from, close))
}

/// Where a group stands at `now`, when EKS says it is a Capacity Block group and the provider serves its
/// blocks; `None` otherwise (the group is left as any group).
pub fn standing(
    state: &NodeGroupState,
    drain_lead: Duration,
    now: SystemTime,
) -> Option<Standing<'_>> {
    if state.capacity_type != Some(CapacityType::CapacityBlock) {
        return None;
    }
    let blocks: Vec<(&Reservation, (SystemTime, SystemTime, SystemTime))> =
        (state.reservations.iter())
            .filter(|r| r.kind == ReservationType::CapacityBlock)
            .filter_map(|r| Some((r, drain_window(r, drain_lead)?)))
            .collect();
    let open: Vec<&Reservation> = (blocks.iter())
        .filter(|(_, (start, drain_from, _))| *start <= now && now < *drain_from)
        .map(|(r, _)| *r)
        .collect();
    if !open.is_empty() {
        let available = open.iter().map(|r| r.available).sum();
        return Some(Standing::Open {
            blocks: open,
            available,
        });
    }
    let ending = (blocks.iter())
        .filter(|(r, (_, drain_from, _))| *drain_from <= now && r.end.is_some_and(|e| now < e))
        .min_by_key(|(_, (_, _, close))| *close);
    if let Some(&(block, (_, drain_from, scale_in))) = ending {
        return Some(Standing::Ending {
            block,
            drain_from,
            scale_in,
        });
    }
    let next = (blocks.iter())
        .filter(|(_, (start, ..))| now < *start)
        .min_by_key(|(_, (start, ..))| *start);
    if let Some(&(block, (opens, ..))) = next {
        return Some(Standing::NotYet { block, opens });
    }
    let last = blocks.iter().max_by_key(|(r, _)| r.end).map(|(r, _)| *r)?;
    Some(Standing::Closed { block: last })
}

impl Standing<'_> {
    /// Why the group may not grow now, in words (`None`: it may, into its available instances).
    pub fn no_scale_up(&self) -> Option<String> {
        let end = |b: &Reservation| b.end.map(at).unwrap_or_default();
        match self {
            Standing::Open { blocks, available } if *available == 0 => {
                let ids: Vec<&str> = blocks.iter().map(|b| b.id.as_str()).collect();
                Some(format!(
                    "capacity block {} has no available instance",
                    ids.join(", ")
                ))
            }
            Standing::Open { .. } => None,
            Standing::NotYet { block, opens } => {
                let close = block
                    .scale_up_window()
                    .map(|(_, c)| at(c))
                    .unwrap_or_default();
                Some(format!(
                    "capacity block {} is not open yet: its window opens at {} (new nodes until {}, 40 \
                     minutes before it ends at {})",
                    block.id,
                    at(*opens),
                    close,
                    end(block)
                ))
            }
            Standing::Ending {
                block,
                drain_from,
                scale_in,
            } => Some(format!(
                "capacity block {} ends at {}: EKS scales the group in at {}; its nodes drain from {} and \
                 nothing is scaled up",
                block.id,
                end(block),
                at(*scale_in),
                at(*drain_from)
            )),
            Standing::Closed { block } => Some(format!(
                "capacity block {}'s window closed (it ended at {}): EKS scales the group in",
                block.id,
                end(block)
            )),
        }
    }
}

/// The drain lead of `group`: its disruption entry's `drainLead`, 10 minutes when it says none or no entry
/// matches.
pub fn drain_lead(config: Option<&DisruptionConfig>, group: &str) -> Duration {
    (config.and_then(|c| c.policy_for(group))).map_or(DEFAULT_DRAIN_LEAD, |p| p.drain_lead())
}

/// Every group's scale-up as its blocks allow at `now`: outside a window (or from its drain on) a Capacity
/// Block group is skipped, saying when the window opens or that it closed; a full block is an unavailable
/// offering (the group backed off for [`FULL_UNAVAILABLE`], as a stockout is); an open one grows only into
/// its available instances. Every group's prepaid room (available instances of its active reservations and
/// open blocks) is set for the expander.
pub fn gate(
    facts: &[GroupFacts],
    config: Option<&DisruptionConfig>,
    groups: &mut [Group],
    backoff: &mut GroupBackoff,
    now: SystemTime,
) {
    for (f, g) in facts.iter().zip(groups.iter_mut()) {
        let Some(state) = &f.state else { continue };
        let lead = drain_lead(config, &f.group.id);
        let Some(standing) = standing(state, lead, now) else {
            g.prepaid = (state.reservations.iter())
                .filter(|r| r.active(now))
                .map(|r| r.available)
                .sum();
            continue;
        };
        match (&standing, standing.no_scale_up()) {
            (Standing::Open { available, .. }, None) => {
                g.prepaid = *available;
                let room = i32::try_from(*available).unwrap_or(i32::MAX);
                g.max_size = g.max_size.min(f.target.saturating_add(room));
            }
            (Standing::Open { .. }, Some(why)) => {
                backoff.unavailable(&f.group.id, why.clone(), now + FULL_UNAVAILABLE);
                g.skip = backoff.unavailable_now(&f.group.id, now).or(Some(why));
                g.full = true;
            }
            (_, why) => g.skip = why,
        }
    }
}

/// A Capacity Block group whose block ends: its nodes are leaving nodes (reason `capacityBlockEnding`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEnding {
    /// When EKS scales the group in: the nodes' drain is over by then.
    pub scale_in: SystemTime,
    /// What is said of each node, in words.
    pub detail: String,
}

/// For each group (indexed like `facts`), its block's ending when its nodes drain at `now`.
pub fn endings(
    facts: &[GroupFacts],
    config: Option<&DisruptionConfig>,
    now: SystemTime,
) -> Vec<Option<BlockEnding>> {
    (facts.iter())
        .map(|f| {
            let state = f.state.as_ref()?;
            let lead = drain_lead(config, &f.group.id);
            let Standing::Ending {
                block,
                drain_from,
                scale_in,
            } = standing(state, lead, now)?
            else {
                return None;
            };
            let end = block.end.map(at).unwrap_or_default();
            Some(BlockEnding {
                scale_in,
                detail: format!(
                    "capacity block {} ends at {end}, EKS scales {} in at {} (drained from {}, drainLead {})",
                    block.id,
                    f.group.id,
                    at(scale_in),
                    at(drain_from),
                    humantime::format_duration(lead)
                ),
            })
        })
        .collect()
}
