//! The status for people (`simulate --format table`): the node groups and their decisions first, then a
//! section for each kind of decision that was made, what could not be helped and why, the errors, and the
//! loop's times. A section with nothing to say is left out.

use super::report::{GroupStatus, Status};
use super::reservations::{CapacityBufferStatus, HeadroomStatus};
use super::scale_down::{DeletionStatus, KeptNode, ScaleDown, ScaleDownStatus};
use super::scale_up::{FargatePod, NoScaleUp, ScaleUp};
use std::collections::BTreeMap;
use std::fmt::Write;

impl Status {
    /// The same facts, for people: node groups first, then Fargate, then what cannot be helped and why.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        if !self.cluster_health.healthy {
            let _ = writeln!(out, "Cluster unhealthy: {}\n", self.cluster_health.reason);
        }
        self.groups_table(&mut out);
        if !self.leaving.is_empty() {
            let _ = writeln!(out, "\nLeaving nodes");
            for l in &self.leaving {
                let _ = writeln!(out, "  {}", l.describe());
            }
        }
        scale_down_table(&self.scale_down.nodes, &mut out);
        deletions_table(&self.scale_down.deletions, &mut out);
        kept_table(&self.scale_down.unremovable, &mut out);
        disruptions_table(&self.scale_down, &mut out);
        self.consolidation_table(&mut out);
        headroom_table(&self.headroom, &self.capacity_buffers, &mut out);
        if !self.capacity_quotas.is_empty() {
            let _ = writeln!(out, "\nCapacity quotas");
            for q in &self.capacity_quotas {
                let _ = writeln!(out, "  {}", q.describe());
            }
        }
        if !self.provisioning_requests.is_empty() {
            let _ = writeln!(out, "\nProvisioning requests");
            for r in &self.provisioning_requests {
                let _ = writeln!(out, "  {}", r.describe());
            }
        }
        if !self.placed.is_empty() {
            let _ = writeln!(
                out,
                "\n{} pending pod(s) fit on existing or upcoming nodes: no new node needed",
                self.placed.len()
            );
        }
        if self.skipped_pods > 0 {
            let _ = writeln!(
                out,
                "\n{} pending pod(s) not tried: pending pod batching timeout exceeded, left for the next loop",
                self.skipped_pods
            );
        }
        fargate_table(&self.fargate, &mut out);
        no_scale_up_table(&self.no_scale_up, &mut out);
        for error in &self.errors {
            let _ = writeln!(out, "\nerror: {error}");
        }
        let consolidation = if self.scale_down.not_consolidated.is_empty()
            && self.scale_down.consolidation.is_empty()
        {
            String::new()
        } else {
            format!(", consolidation {:.1} ms", self.times.consolidation_ms)
        };
        let _ = writeln!(
            out,
            "\ndecided in {:.1} ms (estimator {:.1} ms, scale-down {:.1} ms{consolidation})",
            self.times.elapsed_ms, self.times.estimate_ms, self.times.scale_down_ms
        );
        out
    }

    /// Each node group: sizes and what the loop decided for it, with the pods and zones of its scale-up.
    fn groups_table(&self, out: &mut String) {
        let decisions: BTreeMap<&str, &ScaleUp> = (self.scale_up.iter())
            .map(|s| (s.node_group.as_str(), s))
            .collect();
        let width = (self.node_groups.iter())
            .map(|g| g.id.len())
            .max()
            .unwrap_or(0)
            .max(10);
        let _ = writeln!(
            out,
            "{:<width$}  {:>6}  {:>4}  {:>4}  {:>8}  DECISION",
            "NODE GROUP", "TARGET", "MIN", "MAX", "UPCOMING"
        );
        for group in &self.node_groups {
            let decision = match (decisions.get(group.id.as_str()), &group.skipped) {
                (Some(s), _) => {
                    let mut text = format!(
                        "+{} node(s) for {} pod(s): {}",
                        s.delta,
                        s.pods.len(),
                        s.reason
                    );
                    if let Some(error) = &s.error {
                        let _ = write!(text, " (FAILED: {error})");
                    }
                    text
                }
                (None, Some(why)) => format!("skipped: {why}"),
                (None, None) => "no change".into(),
            };
            let _ = writeln!(
                out,
                "{:<width$}  {:>6}  {:>4}  {:>4}  {:>8}  {decision}",
                group.id, group.target_size, group.min_size, group.max_size, group.upcoming
            );
            if let Some(reserved) = reserved_line(group) {
                let _ = writeln!(out, "{:<width$}  {reserved}", "");
            }
            if let Some(w) = &group.schedule {
                let (min, max, until, window) = (w.min_size, w.max_size, &w.until, &w.window);
                let note = w
                    .note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{:<width$}  schedule: min {min} max {max} until {until} by {window}{note}",
                    ""
                );
            }
            if let Some(s) = decisions.get(group.id.as_str()) {
                let _ = writeln!(
                    out,
                    "{:<width$}  pods: {}",
                    "",
                    abbreviate(s.pods.iter(), 4)
                );
                if !s.zones.is_empty() {
                    let zones: Vec<String> =
                        s.zones.iter().map(|(z, n)| format!("{z} {n}")).collect();
                    let _ = writeln!(out, "{:<width$}  zones: {}", "", zones.join(", "));
                }
            }
        }
    }

    /// Consolidation for people: each replacement with what moves and what it saves, those in progress, and
    /// why the other nodes stay (reasons that hold for most nodes counted, not listed).
    fn consolidation_table(&self, out: &mut String) {
        if !self.scale_down.consolidation.is_empty() {
            let _ = writeln!(out, "\nConsolidation");
            for c in &self.scale_down.consolidation {
                let _ = writeln!(
                    out,
                    "  {}, saves ${:.4}/h{}",
                    c.describe(),
                    c.saving_per_hour,
                    c.failure()
                );
                let _ = writeln!(
                    out,
                    "    moves: {}",
                    abbreviate(c.pods.iter().map(String::as_str), 4)
                );
            }
        }
        if !self.scale_down.replacements.is_empty() {
            let _ = writeln!(out, "\nReplacements");
            for r in &self.scale_down.replacements {
                let _ = writeln!(
                    out,
                    "  {} -> {} ({}): {} {}",
                    r.nodes.join(", "),
                    r.node_group,
                    r.kind,
                    r.state,
                    r.detail
                );
            }
        }
        if !self.scale_down.not_consolidated.is_empty() {
            let _ = writeln!(out, "\nNot consolidated");
            let common = [
                "NotAutoscaled",
                "ScaleDownCandidate",
                "CurrentlyBeingDeleted",
                "NotStableLongEnough",
            ];
            for (reason, n) in kept_nodes(&self.scale_down.not_consolidated, &common, out) {
                let _ = writeln!(out, "  {n} node(s): {reason}");
            }
        }
    }
}

fn scale_down_table(scale_down: &[ScaleDown], out: &mut String) {
    if scale_down.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nScale-down");
    for node in scale_down {
        let _ = writeln!(
            out,
            "  {} ({}): {}{}; {}",
            node.node,
            node.node_group,
            node.reason,
            if node.risky { ", risky (PDB)" } else { "" },
            node.detail
        );
        if !node.pods.is_empty() {
            let _ = writeln!(out, "    evicts: {}", abbreviate(node.pods.iter(), 4));
        }
    }
}

fn deletions_table(deletions: &[DeletionStatus], out: &mut String) {
    if deletions.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nDeletions");
    for d in deletions {
        let _ = writeln!(
            out,
            "  {} ({}): {} {}",
            d.node, d.node_group, d.state, d.detail
        );
    }
}

fn kept_table(unremovable: &[KeptNode], out: &mut String) {
    if unremovable.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nNodes kept");
    // Busy nodes and nodes of no group are many and unsurprising: counted, not listed.
    let common = ["NotUnderutilized", "NotAutoscaled"];
    for (reason, n) in kept_nodes(unremovable, &common, out) {
        let what = match reason {
            "NotUnderutilized" => "above the utilization threshold",
            _ => "in no node group",
        };
        let _ = writeln!(out, "  {n} node(s) {what} ({reason})");
    }
}

/// The expired and drifted nodes with what happens to each, and what each group's budgets allow.
fn disruptions_table(down: &ScaleDownStatus, out: &mut String) {
    if !down.disruptions.is_empty() {
        let _ = writeln!(out, "\nDisruptions");
        for d in &down.disruptions {
            let _ = writeln!(
                out,
                "  {} ({}): {}, {}: {}",
                d.node, d.node_group, d.reason, d.action, d.detail
            );
        }
    }
    if !down.disruption_budgets.is_empty() {
        let _ = writeln!(
            out,
            "\nDisruption budgets (allowed before this loop's removals)"
        );
        let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for b in &down.disruption_budgets {
            let allowed = b.allowed.map_or("no limit".to_string(), |a| a.to_string());
            (groups.entry(&b.node_group).or_default()).push(format!("{} {allowed}", b.reason));
        }
        for (group, reasons) in groups {
            let disrupting = (down.disruption_budgets.iter())
                .find(|b| b.node_group == group)
                .map_or(0, |b| b.disrupting);
            let _ = writeln!(
                out,
                "  {group}: {}; {disrupting} disrupting",
                reasons.join(", ")
            );
        }
    }
}

fn headroom_table(headroom: &[HeadroomStatus], buffers: &[CapacityBufferStatus], out: &mut String) {
    if !headroom.is_empty() {
        let _ = writeln!(out, "\nHeadroom");
        for h in headroom {
            let _ = writeln!(out, "  {}", h.describe());
        }
    }
    if !buffers.is_empty() {
        let _ = writeln!(out, "\nCapacity buffers");
        for b in buffers {
            let _ = writeln!(out, "  {}", b.describe());
            reasons_table(&b.unmet_reasons, out);
        }
    }
}

fn fargate_table(fargate: &[FargatePod], out: &mut String) {
    if fargate.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nFargate");
    for pod in fargate {
        let mut line = if pod.profile.is_empty() {
            format!("  {}: no profile takes it", pod.pod)
        } else {
            format!(
                "  {}: profile {}, {}, ${:.4}/h",
                pod.pod, pod.profile, pod.capacity_provisioned, pod.hourly_price
            )
        };
        if !pod.incompatibilities.is_empty() {
            let _ = write!(
                line,
                "; cannot run on Fargate: {}",
                pod.incompatibilities.join(", ")
            );
        }
        if let Some(note) = &pod.note {
            let _ = write!(line, "; {note}");
        }
        let _ = writeln!(out, "{line}");
    }
}

fn no_scale_up_table(no_scale_up: &[NoScaleUp], out: &mut String) {
    if no_scale_up.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nPods no node group can help");
    for pod in no_scale_up {
        let _ = writeln!(out, "  {}", pod.pod);
        reasons_table(&pod.reasons, out);
    }
}

/// Each node that stays, with why; those whose reason is `common` are counted by reason instead (returned).
fn kept_nodes<'a>(
    nodes: &'a [KeptNode],
    common: &[&str],
    out: &mut String,
) -> BTreeMap<&'a str, usize> {
    let mut counted: BTreeMap<&str, usize> = BTreeMap::new();
    for node in nodes {
        if common.contains(&node.reason.as_str()) {
            *counted.entry(node.reason.as_str()).or_default() += 1;
            continue;
        }
        let group = node.node_group.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "  {} ({group}): {}: {}",
            node.node, node.reason, node.detail
        );
    }
    counted
}

/// Why, by node group (`all` for reasons that hold for every group).
fn reasons_table(reasons: &BTreeMap<String, String>, out: &mut String) {
    for (group, why) in reasons {
        let group = if group.is_empty() { "all" } else { group };
        let _ = writeln!(out, "    {group}: {why}");
    }
}

/// `a, b, c and 7 more`.
fn abbreviate<'a>(pods: impl ExactSizeIterator<Item = &'a str>, show: usize) -> String {
    let total = pods.len();
    let mut text = pods.take(show).collect::<Vec<_>>().join(", ");
    if total > show {
        let _ = write!(text, " and {} more", total - show);
    }
    text
}

/// A group's capacity paid for ahead, on one line under it: its capacity type when it is a Capacity Block
/// group, and each reservation with its window and free instances; `None` for a group with neither.
fn reserved_line(group: &GroupStatus) -> Option<String> {
    let block = group.capacity_type.as_deref() == Some("CAPACITY_BLOCK");
    if !block && group.reservations.is_empty() {
        return None;
    }
    let each: Vec<String> = (group.reservations.iter())
        .map(|r| {
            let window = match (&r.start, &r.end) {
                (Some(start), Some(end)) => format!(" {start} to {end}"),
                (Some(start), None) => format!(" from {start}"),
                (None, Some(end)) => format!(" until {end}"),
                (None, None) => String::new(),
            };
            format!(
                "{} {}{window}, {} of {} available",
                r.id, r.kind, r.available, r.total
            )
        })
        .collect();
    let kind = if block { "CAPACITY_BLOCK " } else { "" };
    let reservations = if each.is_empty() {
        "no reservation said".to_string()
    } else {
        each.join("; ")
    };
    Some(format!("reserved: {kind}{reservations}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pod, PodNames, Resources};

    #[test]
    fn pod_names_keep_each_name_whole_across_appends() {
        let mut list = PodNames::with_capacity(2);
        list.push(&Pod::pending("default", "web-0", Resources::default()));
        list.push(&Pod::pending("batch", "job-1", Resources::default()));
        list.append(["kube-system/x"].into_iter().collect());
        list.append(PodNames::default());
        assert_eq!(
            list.iter().collect::<Vec<_>>(),
            ["default/web-0", "batch/job-1", "kube-system/x"]
        );
        assert_eq!(list.len(), 3);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"["default/web-0","batch/job-1","kube-system/x"]"#
        );
        assert_eq!(
            abbreviate(list.iter(), 2),
            "default/web-0, batch/job-1 and 1 more"
        );
        assert_eq!(PodNames::default().iter().count(), 0);
    }
}
