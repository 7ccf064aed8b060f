//! Scheduled sizes as the loop uses them: read from the document, applied to the groups at the loop's
//! instant, told in the report, and the nodes over a lowered max chosen in order.

use super::in_force::SizesInForce;
use super::over_max::{GroupNodes, OverMax, ScheduledFate};
use crate::autoscaler::clusterstate::state::MAX_SIZE_REACHED;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::status::{GroupStatus, ScaleUp};
use crate::model::{Controller, GroupOptions, Node, NodeGroup, Pod, PodList, Resources};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// `batch` to zero on weekday nights in Berlin; `general` grown to 5 from 08:30 for the 9 o'clock peak, and
/// asked for beyond its own max in the afternoon.
const DOCUMENT: &str = r#"
nodeGroups:
  - match: "^batch$"
    schedules:
      - {schedule: "0 19 * * mon-fri", duration: 13h, timeZone: Europe/Berlin, minSize: 0, maxSize: 0}
  - match: "^general$"
    schedules:
      - {schedule: "30 8 * * mon-fri", duration: 2h, timeZone: Europe/Berlin, minSize: 5}
      - {schedule: "0 14 * * *", duration: 1h, timeZone: Europe/Berlin, minSize: 1, maxSize: 12}
"#;

fn at(text: &str) -> SystemTime {
    SystemTime::from(text.parse::<jiff::Timestamp>().unwrap())
}

fn facts(id: &str, min: i32, max: i32, target: i32) -> GroupFacts {
    GroupFacts {
        group: NodeGroup {
            id: id.into(),
            min_size: min,
            max_size: max,
        },
        target,
        instances: Vec::new(),
        template: None,
        template_slices: Vec::new(),
        zones: Vec::new(),
        state: None,
        options: GroupOptions::default(),
        problem: None,
    }
}

fn group(f: &GroupFacts, skip: Option<&str>) -> Group {
    Group {
        id: f.group.id.clone(),
        min_size: f.group.min_size,
        max_size: f.group.max_size,
        target_size: f.target,
        template: None,
        zones: Vec::new(),
        skip: skip.map(str::to_string),
        node_price: None,
        zero_or_max: false,
        prepaid: 0,
        full: false,
    }
}

/// `batch` (own 0 to 10, at 3) and `general` (own 2 to 10, at 2), the document applied at `now`.
fn applied(now: &str) -> (Vec<GroupFacts>, SizesInForce) {
    let config = DisruptionConfig::parse(DOCUMENT).unwrap();
    let mut all = vec![facts("batch", 0, 10, 3), facts("general", 2, 10, 2)];
    let sizes = SizesInForce::apply(Some(&config), &mut all, at(now));
    (all, sizes)
}

fn sizes_of(f: &[GroupFacts]) -> Vec<(i32, i32)> {
    f.iter()
        .map(|f| (f.group.min_size, f.group.max_size))
        .collect()
}

#[test]
fn the_window_in_force_replaces_the_groups_sizes_at_the_loops_instant() {
    // Monday 2026-11-30 20:00 in Berlin: batch's night.
    let (night, sizes) = applied("2026-11-30T19:00:00Z");
    assert_eq!(sizes_of(&night), [(0, 0), (2, 10)]);
    let batch = sizes.each().next().unwrap().1;
    assert_eq!(batch.until, at("2026-12-01T07:00:00Z"));
    assert_eq!(
        batch.held_at_max(),
        "batch is held at maxSize 0 by schedules[0] until 2026-12-01T07:00:00Z"
    );
    // Tuesday 08:45 in Berlin: batch's own sizes back, general's peak.
    let (peak, _) = applied("2026-12-01T07:45:00Z");
    assert_eq!(sizes_of(&peak), [(0, 10), (5, 10)]);
    // Tuesday noon: nobody's window.
    let (noon, sizes) = applied("2026-12-01T11:00:00Z");
    assert_eq!(sizes_of(&noon), [(0, 10), (2, 10)]);
    assert_eq!(sizes.each().count(), 0);
    // Without a document nothing changes.
    let mut all = vec![facts("batch", 0, 10, 3)];
    let none = SizesInForce::apply(None, &mut all, at("2026-11-30T19:00:00Z"));
    assert_eq!((sizes_of(&all), none.each().count()), (vec![(0, 10)], 0));
}

#[test]
fn a_window_beyond_the_providers_sizes_is_held_within_them_and_says_so() {
    // Tuesday 14:30 in Berlin: general's afternoon window asks for 1 to 12 of a group of 2 to 10.
    let (afternoon, sizes) = applied("2026-12-01T13:30:00Z");
    assert_eq!(sizes_of(&afternoon), [(0, 10), (2, 10)]);
    let general = sizes.each().next().unwrap().1;
    assert_eq!(general.own, (2, 10));
    assert_eq!(
        general.clamped.as_deref(),
        Some(
            "the window asks for minSize 1 and maxSize 12, beyond the provider's own minSize 2 and \
             maxSize 10: held at 2 to 10"
        )
    );
    let mut statuses: Vec<GroupStatus> = (afternoon.iter())
        .map(|f| GroupStatus {
            id: f.group.id.clone(),
            min_size: f.group.min_size,
            max_size: f.group.max_size,
            ..GroupStatus::default()
        })
        .collect();
    sizes.report(&mut statuses);
    assert_eq!(statuses[0].schedule, None);
    let shown = statuses[1].schedule.as_ref().unwrap();
    assert_eq!(
        (shown.min_size, shown.max_size, shown.until.as_str()),
        (2, 10, "2026-12-01T14:00:00Z")
    );
    assert_eq!(
        shown.window,
        r#"schedules[1]: "0 14 * * *" for 1h in Europe/Berlin"#
    );
    assert!(shown.note.as_deref().unwrap().contains("maxSize 12"));
}

#[test]
fn the_report_keeps_the_providers_sizes_beside_the_windows() {
    let (night, sizes) = applied("2026-11-30T19:00:00Z");
    let mut statuses: Vec<GroupStatus> = (night.iter())
        .map(|f| GroupStatus {
            id: f.group.id.clone(),
            min_size: f.group.min_size,
            max_size: f.group.max_size,
            ..GroupStatus::default()
        })
        .collect();
    sizes.report(&mut statuses);
    assert_eq!((statuses[0].min_size, statuses[0].max_size), (0, 10));
    let shown = serde_json::to_value(statuses[0].schedule.as_ref().unwrap()).unwrap();
    assert_eq!(
        shown,
        serde_json::json!({
            "minSize": 0, "maxSize": 0, "until": "2026-12-01T07:00:00Z",
            "window": "schedules[0]: \"0 19 * * mon-fri\" for 13h in Europe/Berlin"
        })
    );
    assert_eq!(statuses[1].schedule, None);
}

#[test]
fn scale_up_skips_a_group_held_at_its_scheduled_max_naming_the_window() {
    let (night, sizes) = applied("2026-11-30T19:00:00Z");
    let mut groups = vec![
        group(&night[0], Some(MAX_SIZE_REACHED)),
        group(&night[1], None),
    ];
    sizes.hold(&mut groups);
    assert_eq!(
        groups[0].skip.as_deref(),
        Some("batch is held at maxSize 0 by schedules[0] until 2026-12-01T07:00:00Z")
    );
    assert_eq!(groups[1].skip, None);
    // A group backed off keeps that reason.
    let mut groups = vec![group(&night[0], Some("backed off: stockout"))];
    sizes.hold(&mut groups);
    assert_eq!(groups[0].skip.as_deref(), Some("backed off: stockout"));
}

#[test]
fn a_raised_min_is_asked_for_at_once_beyond_what_scale_up_asked() {
    let (peak, sizes) = applied("2026-12-01T07:45:00Z");
    let groups: Vec<Group> = peak.iter().map(|f| group(f, None)).collect();
    let raised = sizes.raise_to_min(&groups, &[]);
    assert_eq!(raised.len(), 1);
    assert_eq!(
        (raised[0].node_group.as_str(), raised[0].delta),
        ("general", 3)
    );
    assert_eq!(
        raised[0].reason,
        "general is held at minSize 5 by schedules[0] until 2026-12-01T09:30:00Z: raised from 2 ahead \
         of the pods (as cluster-autoscaler's --enforce-node-group-min-size)"
    );
    // Scale-up asked for two already: one more.
    let planned = ScaleUp {
        node_group: "general".into(),
        delta: 2,
        pods: Default::default(),
        reason: String::new(),
        zones: Default::default(),
        error: None,
        replaces: Vec::new(),
        provisioning_request: None,
    };
    let raised = sizes.raise_to_min(&groups, std::slice::from_ref(&planned));
    assert_eq!(raised[0].delta, 1);
    // A group scale-up skips is not raised.
    let skipped: Vec<Group> = peak.iter().map(|f| group(f, Some("backed off"))).collect();
    assert!(sizes.raise_to_min(&skipped, &[]).is_empty());
}

fn node(name: &str, created_min: u64) -> Arc<Node> {
    Arc::new(Node {
        name: name.into(),
        created: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(created_min * 60)),
        ..Node::default()
    })
}

fn pod(name: &str, node: &str, controller: Option<&str>) -> Arc<Pod> {
    let mut pod = Pod::pending("default", name, Resources::default());
    pod.node_name = Some(node.into());
    pod.controller = controller.map(|kind| {
        Arc::new(Controller {
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        })
    });
    Arc::new(pod)
}

#[test]
fn the_emptiest_then_the_newest_go_and_a_node_that_would_lose_a_pod_waits() {
    let (night, sizes) = applied("2026-11-30T19:00:00Z");
    assert_eq!(night[0].group.max_size, 0);
    // b0: two pods, old; b1: one pod, old; b2: one pod, new; b3: a bare pod; g0: general's.
    let nodes = vec![
        node("b0", 1),
        node("b1", 1),
        node("b2", 5),
        node("b3", 9),
        node("g0", 1),
    ];
    let pods = vec![
        pod("a", "b0", Some("ReplicaSet")),
        pod("b", "b0", Some("ReplicaSet")),
        pod("c", "b1", Some("ReplicaSet")),
        pod("d", "b2", Some("ReplicaSet")),
        pod("bare", "b3", None),
        pod("exporter-b1", "b1", Some("DaemonSet")),
    ];
    let on_node = vec![vec![0, 1], vec![2, 5], vec![3], vec![4], vec![]];
    let node_group = [Some(0), Some(0), Some(0), Some(0), Some(1)];
    let seen = |excluded: &HashSet<String>, staying: &[i64]| {
        let input = GroupNodes {
            nodes: &nodes,
            node_group: &node_group,
            on_node: &on_node,
            pods: PodList::new(&pods, &[]),
            excluded,
            staying,
        };
        sizes.over_max(&input)
    };
    let none = HashSet::new();
    let chosen = seen(&none, &[4, 2]);
    let ranks: Vec<Option<usize>> = chosen.iter().map(|c| c.as_ref().map(|o| o.rank)).collect();
    // b2 and b1 each move one pod (the DaemonSet's stays): the newer first; b0 then; b3 last.
    assert_eq!(ranks, [Some(2), Some(1), Some(0), Some(3), None]);
    let goes = "over its scheduled maxSize: batch is held at maxSize 0 by schedules[0] until \
                2026-12-01T07:00:00Z";
    assert_eq!(
        chosen[2],
        Some(OverMax {
            rank: 0,
            fate: ScheduledFate::Goes(goes.into())
        })
    );
    assert_eq!(
        chosen[3].as_ref().unwrap().fate,
        ScheduledFate::Waits(
            "default/bare has no controller to make it again elsewhere: a node is never removed for a \
             schedule while that would lose a pod"
                .into()
        )
    );
    // Only as many as the group has over its max; a node on its way out is neither counted nor chosen.
    let leaving = HashSet::from(["b2".to_string()]);
    let chosen = seen(&leaving, &[1, 2]);
    let picked: Vec<usize> = (0..5).filter(|&n| chosen[n].is_some()).collect();
    assert_eq!(picked, [1]);
    assert!(seen(&none, &[0, 2]).iter().all(Option::is_none));
}

#[test]
fn a_window_that_cannot_be_evaluated_keeps_the_groups_sizes_and_is_a_problem() {
    let config = DisruptionConfig::parse(DOCUMENT).unwrap();
    let mut all = vec![facts("batch", 0, 10, 3)];
    // At the calendar's first instant no earlier firing can be found.
    let mut sizes = SizesInForce::apply(Some(&config), &mut all, jiff::Timestamp::MIN.into());
    assert_eq!(sizes_of(&all), [(0, 10)]);
    assert_eq!(sizes.each().count(), 0);
    let problems = sizes.take_problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("scheduled sizes of batch: a window could not be evaluated at "),
        "{problems:?}"
    );
    assert!(
        problems[0].ends_with("; it keeps its own sizes this loop"),
        "{problems:?}"
    );
    assert!(sizes.take_problems().is_empty(), "told once");
}
