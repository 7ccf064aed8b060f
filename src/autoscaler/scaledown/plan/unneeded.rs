//! Unneeded timers, as cluster-autoscaler keeps them: a removable node goes only once it has been unneeded
//! (or unready and unneeded) for its group's time; the timer is kept while the node stays unneeded and dropped
//! as soon as it is not. A zeroOrMaxNodeScaling group goes whole, so it waits until all of its nodes may go.

use crate::autoscaler::scaledown::plan::planner::{Held, Removable, Unremovable};
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::model::FastMap;
use crate::model::Node;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// When each unneeded node was first found unneeded (by name).
#[derive(Debug, Default)]
pub struct UnneededTimers {
    /// A fast hasher: a 100,000-node cluster has some 70,000 unneeded nodes, each looked up and kept every
    /// loop.
    since: FastMap<String, SystemTime>,
}

/// Whether the unneeded and stability timers run as kept, or count as run out (`simulate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timers {
    Kept,
    Elapsed,
}

/// The removable nodes after their timers: those whose time has passed, and those that wait, with why.
pub struct Timed<'p> {
    pub ready: Vec<&'p Removable>,
    pub waiting: Vec<Held<'p>>,
}

impl UnneededTimers {
    /// Every timer starts again (the loop saw an unhealthy cluster).
    pub fn clear(&mut self) {
        self.since.clear();
    }

    /// The nodes unneeded in the previous loop.
    pub fn nodes(&self) -> HashSet<String> {
        self.since.keys().cloned().collect()
    }

    /// A node whose deletion started: its timer is done.
    pub fn remove(&mut self, node: &str) {
        self.since.remove(node);
    }

    /// Runs the timers over this loop's removable nodes ([`Timers::Elapsed`] treats every timer as run out, as
    /// `simulate` does): the timers of nodes no longer removable are dropped.
    pub fn run<'p>(
        &mut self,
        removable: &'p [Removable],
        nodes: &[Arc<Node>],
        groups: &[GroupInfo],
        timers: Timers,
        now: SystemTime,
    ) -> Timed<'p> {
        let mut since = FastMap::with_capacity_and_hasher(removable.len(), Default::default());
        let mut timed = Timed {
            ready: Vec::new(),
            waiting: Vec::new(),
        };
        for r in removable {
            let node = &nodes[r.node];
            let first = *self.since.get(&node.name).unwrap_or(&now);
            since.insert(node.name.clone(), first);
            let options = &groups[r.group].options;
            let (needed, reason, what) = if node.ready {
                (
                    options.unneeded,
                    Unremovable::NotUnneededLongEnough,
                    "unneeded",
                )
            } else {
                let why = Unremovable::NotUnreadyLongEnough;
                (options.unready, why, "unready and unneeded")
            };
            let waited = now.duration_since(first).unwrap_or_default();
            if timers == Timers::Kept && waited < needed {
                let detail = format!(
                    "{what} for {} of {}",
                    humantime::format_duration(Duration::from_secs(waited.as_secs())),
                    humantime::format_duration(needed)
                );
                timed.waiting.push(Held {
                    removable: r,
                    reason,
                    detail,
                });
            } else {
                timed.ready.push(r);
            }
        }
        self.since = since;
        whole_groups_wait(timed, groups)
    }
}

/// A zeroOrMaxNodeScaling group goes whole: while any of its nodes waits for its timer, the others wait too.
fn whole_groups_wait<'p>(mut timed: Timed<'p>, groups: &[GroupInfo]) -> Timed<'p> {
    let atomic_waiting: HashSet<usize> = (timed.waiting.iter())
        .map(|h| h.removable.group)
        .filter(|&g| groups[g].options.zero_or_max)
        .collect();
    if atomic_waiting.is_empty() {
        return timed;
    }
    let (ready, wait): (Vec<&Removable>, Vec<&Removable>) =
        (timed.ready.into_iter()).partition(|r| !atomic_waiting.contains(&r.group));
    timed.ready = ready;
    for r in wait {
        let detail = format!(
            "{} scales to zero or max: its other nodes are not unneeded long enough",
            groups[r.group].id
        );
        timed.waiting.push(Held {
            removable: r,
            reason: Unremovable::NotUnneededLongEnough,
            detail,
        });
    }
    timed
}
