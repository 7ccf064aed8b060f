//! The capacity folder on its own: where a Capacity Block group stands as its block goes by, what the gate
//! does to scale-up, when its nodes leave, and which nodes scale-down keeps for their reservation.

use crate::autoscaler::capacity::blocks::{FULL_UNAVAILABLE, Standing, endings, gate, standing};
use crate::autoscaler::capacity::reserved::reserved_nodes;
use crate::autoscaler::clusterstate::backoff::{BackoffSettings, GroupBackoff};
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::model::{
    CapacityType, GroupOptions, Node, NodeGroup, NodeGroupState, NodeGroupStatus, Reservation,
    ReservationType,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const MIN: Duration = Duration::from_secs(60);

/// The tests' own clock: every instant is minutes after it.
fn t(minutes: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + minutes * 60)
}

/// A block of 4 instances from minute 60 to minute 600, `available` of them free.
fn block(available: u32) -> Reservation {
    Reservation {
        id: "cr-0b10c".into(),
        kind: ReservationType::CapacityBlock,
        start: Some(t(60)),
        end: Some(t(600)),
        total: 4,
        available,
    }
}

fn odcr(total: u32, available: u32) -> Reservation {
    Reservation {
        id: "cr-0dc4".into(),
        kind: ReservationType::Odcr,
        start: None,
        end: None,
        total,
        available,
    }
}

fn state(kind: Option<CapacityType>, reservations: Vec<Reservation>) -> NodeGroupState {
    NodeGroupState {
        status: NodeGroupStatus::Active,
        image: None,
        capacity_rebalance: false,
        node_repair: None,
        capacity_type: kind,
        reservations,
    }
}

fn facts(id: &str, target: i32, state: NodeGroupState) -> GroupFacts {
    GroupFacts {
        group: NodeGroup {
            id: id.into(),
            min_size: 0,
            max_size: 8,
        },
        target,
        instances: Vec::new(),
        template: None,
        template_slices: Vec::new(),
        zones: Vec::new(),
        state: Some(state),
        options: GroupOptions::default(),
        problem: None,
    }
}

fn group(f: &GroupFacts) -> Group {
    Group {
        id: f.group.id.clone(),
        min_size: f.group.min_size,
        max_size: f.group.max_size,
        target_size: f.target,
        template: None,
        zones: Vec::new(),
        skip: None,
        node_price: None,
        zero_or_max: false,
        prepaid: 0,
        full: false,
    }
}

fn gated(facts: &[GroupFacts], config: Option<&DisruptionConfig>, now: SystemTime) -> Vec<Group> {
    let mut groups: Vec<Group> = facts.iter().map(group).collect();
    let mut backoff = GroupBackoff::new(BackoffSettings::default());
    gate(facts, config, &mut groups, &mut backoff, now);
    groups
}

#[test]
fn a_block_group_stands_before_inside_ending_and_after_its_window() {
    let s = state(Some(CapacityType::CapacityBlock), vec![block(3)]);
    let lead = 10 * MIN;
    let at = |m| standing(&s, lead, t(m)).unwrap();
    assert!(matches!(at(59), Standing::NotYet { opens, .. } if opens == t(60)));
    assert!(matches!(at(60), Standing::Open { available: 3, .. }));
    // The window closes 40 minutes before the end (560); the drain starts 10 minutes before that.
    assert!(matches!(at(549), Standing::Open { .. }));
    let ending = at(550);
    assert!(
        matches!(ending, Standing::Ending { drain_from, scale_in, .. } if drain_from == t(550) && scale_in == t(560)),
        "{ending:?}"
    );
    assert!(matches!(at(599), Standing::Ending { .. }));
    assert!(matches!(at(600), Standing::Closed { .. }));
    // Not a Capacity Block group, or one whose provider serves no block: as any group.
    assert_eq!(
        standing(
            &state(Some(CapacityType::CapacityBlock), vec![]),
            lead,
            t(0)
        ),
        None
    );
    assert_eq!(
        standing(
            &state(Some(CapacityType::OnDemand), vec![block(3)]),
            lead,
            t(100)
        ),
        None
    );
}

#[test]
fn outside_its_window_a_block_group_is_skipped_saying_when_it_opens_or_that_it_closed() {
    let f = [facts(
        "gpu",
        0,
        state(Some(CapacityType::CapacityBlock), vec![block(4)]),
    )];
    let before = gated(&f, None, t(0));
    let why = before[0].skip.as_deref().unwrap();
    assert!(why.contains("cr-0b10c is not open yet"), "{why}");
    assert!(
        why.contains(&humantime::format_rfc3339_seconds(t(60)).to_string()),
        "{why}"
    );
    let inside = gated(&f, None, t(100));
    assert_eq!(inside[0].skip, None);
    assert_eq!(
        (inside[0].prepaid, inside[0].max_size),
        (4, 4),
        "it grows into its 4 instances"
    );
    let ending = gated(&f, None, t(555));
    assert!(
        ending[0]
            .skip
            .as_deref()
            .unwrap()
            .contains("nothing is scaled up")
    );
    let after = gated(&f, None, t(700));
    let why = after[0].skip.as_deref().unwrap();
    assert!(
        why.contains("window closed") && why.contains("EKS scales the group in"),
        "{why}"
    );
}

#[test]
fn a_full_block_is_an_unavailable_offering_and_an_open_odcr_is_prepaid_room() {
    let f = [
        facts(
            "gpu",
            4,
            state(Some(CapacityType::CapacityBlock), vec![block(0)]),
        ),
        facts(
            "general",
            2,
            state(Some(CapacityType::OnDemand), vec![odcr(5, 3)]),
        ),
        facts("plain", 2, state(None, vec![])),
    ];
    let mut groups: Vec<Group> = f.iter().map(group).collect();
    let mut backoff = GroupBackoff::new(BackoffSettings::default());
    gate(&f, None, &mut groups, &mut backoff, t(100));
    let why = groups[0].skip.as_deref().unwrap();
    assert!(
        why.contains("capacity block cr-0b10c has no available instance"),
        "{why}"
    );
    assert!(
        backoff
            .unavailable_now("gpu", t(100) + FULL_UNAVAILABLE - MIN)
            .is_some()
    );
    assert!(
        backoff
            .unavailable_now("gpu", t(100) + FULL_UNAVAILABLE)
            .is_none()
    );
    // An ODCR's free instances are prepaid room; its group's max stays its own (it may launch On-Demand).
    assert_eq!(
        (groups[1].prepaid, groups[1].max_size, &groups[1].skip),
        (3, 8, &None)
    );
    assert_eq!(
        (groups[2].prepaid, groups[2].max_size, &groups[2].skip),
        (0, 8, &None)
    );
}

#[test]
fn a_block_groups_nodes_leave_drain_lead_before_eks_scales_it_in() {
    let f = [
        facts(
            "gpu",
            2,
            state(Some(CapacityType::CapacityBlock), vec![block(2)]),
        ),
        facts("general", 2, state(None, vec![])),
    ];
    // Default lead, 10 minutes: from minute 550.
    assert_eq!(endings(&f, None, t(549)), [None, None]);
    let ending = endings(&f, None, t(550));
    let said = ending[0].as_ref().unwrap();
    assert_eq!(said.scale_in, t(560));
    assert!(said.detail.contains("drainLead 10m"), "{}", said.detail);
    assert_eq!(ending[1], None);
    // The group's entry says 30 minutes: from minute 530.
    let config =
        DisruptionConfig::parse("nodeGroups:\n  - {match: '^gpu$', drainLead: 30m}\n").unwrap();
    assert!(endings(&f, Some(&config), t(530))[0].is_some());
    assert!(endings(&f, Some(&config), t(529))[0].is_none());
    let groups = gated(&f, Some(&config), t(530));
    assert!(
        groups[0].skip.is_some(),
        "nothing is scaled up once its nodes drain"
    );
}

fn node(name: &str, created: u64) -> Arc<Node> {
    Arc::new(Node {
        name: name.into(),
        created: Some(t(created)),
        ..Node::default()
    })
}

#[test]
fn reserved_nodes_are_a_blocks_all_and_an_odcrs_oldest_in_use_unless_the_entry_lets_them_go() {
    let f = [
        facts(
            "gpu",
            2,
            state(Some(CapacityType::CapacityBlock), vec![block(2)]),
        ),
        facts(
            "general",
            3,
            state(Some(CapacityType::OnDemand), vec![odcr(4, 2)]),
        ),
    ];
    let nodes = [
        node("gpu-a", 70),
        node("gpu-b", 80),
        node("gen-new", 90),
        node("gen-old", 10),
        node("gen-mid", 20),
    ];
    let node_group = [Some(0), Some(0), Some(1), Some(1), Some(1)];
    let kept = reserved_nodes(&f, (&nodes, &node_group), None, t(100));
    let mut names: Vec<&str> = kept.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["gen-mid", "gen-old", "gpu-a", "gpu-b"]);
    assert!(kept["gpu-a"].contains("capacity block cr-0b10c"));
    // Before the block starts and after it ends, nothing of it is paid for.
    let before = reserved_nodes(&f, (&nodes, &node_group), None, t(0));
    assert!(!before.contains_key("gpu-a") && before.contains_key("gen-old"));
    let config =
        DisruptionConfig::parse("nodeGroups:\n  - {match: '^gpu$', scaleDownReserved: true}\n")
            .unwrap();
    let let_go = reserved_nodes(&f, (&nodes, &node_group), Some(&config), t(100));
    assert!(!let_go.contains_key("gpu-a") && let_go.contains_key("gen-mid"));
}
