//! The module as the loop uses it: the document read once, each group's policy found by name, its budgets
//! evaluated once a loop, and each reason's allowance used up as candidates are chosen.

use super::allowance::{Allowance, Binding, Description, Evaluated, Limit};
use super::budget::{Budget, Nodes, NodesError, Reason, Reasons};
use super::config::{DisruptionConfig, DisruptionConfigError, EntryName, Problem};
use super::duration::DurationError;
use super::policy::GroupPolicy;
use super::schedule::{Schedule, ScheduleError, WindowText};
use std::time::{Duration, SystemTime};

const H: Duration = Duration::from_secs(3600);

const DOCUMENT: &str = r#"
nodeGroups:
  - match: "^general$"
    budgets:
      - nodes: "20%"
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
        duration: 8h
        timeZone: Europe/Berlin
        reasons: [Underutilized, Empty]
    expireAfter: 720h
    terminationGracePeriod: 2h
"#;

fn at(text: &str) -> SystemTime {
    SystemTime::from(text.parse::<jiff::Timestamp>().unwrap())
}

/// Chooses candidates, in order, while the allowance lets one more go.
fn choose<'c>(allowance: &Allowance<'_>, candidates: &[&'c str]) -> Vec<&'c str> {
    let mut chosen = Vec::new();
    for &candidate in candidates {
        if !allowance.allows_one_more(chosen.len() as u64) {
            break;
        }
        chosen.push(candidate);
    }
    chosen
}

#[test]
fn a_loop_chooses_within_each_reasons_allowance() {
    let config = DisruptionConfig::parse(DOCUMENT).unwrap();
    // A group no entry matches is disrupted as it is without the document.
    assert!(config.policy_for("batch").is_none());
    let policy: &GroupPolicy = config.policy_for("general").unwrap();
    let candidates = ["n1", "n2", "n3"];

    // Monday, 18:00 in Berlin: only 20% of the group's 10 nodes, and one is already being deleted.
    let evening: Evaluated<'_> = policy.evaluate(at("2024-06-10T16:00:00Z"));
    let underutilized = evening.allowance(Reason::Underutilized, 10, 1);
    assert_eq!(choose(&underutilized, &candidates), ["n1"]);
    let text: Description<'_> = underutilized.describe("general");
    assert_eq!(
        text.to_string(),
        "general: Underutilized, 1 of 2 allowed in use (20% of 10 nodes)"
    );

    // Monday, 10:00 in Berlin: nothing is consolidated, but drift still has its 20%.
    let morning = policy.evaluate(at("2024-06-10T08:00:00Z"));
    let underutilized = morning.allowance(Reason::Underutilized, 10, 0);
    assert!(choose(&underutilized, &candidates).is_empty());
    let Some(Binding {
        index: 1,
        limit: Limit::Window(start, end),
        budget,
        ..
    }) = underutilized.binding
    else {
        panic!("the office-hours budget binds: {underutilized:?}");
    };
    let window: WindowText<'_> = budget
        .schedule
        .as_ref()
        .unwrap()
        .describe_window(start, end);
    assert_eq!(window.to_string(), "from 09:00 to 17:00 Europe/Berlin");
    assert_eq!(
        choose(&morning.allowance(Reason::Drifted, 10, 0), &candidates),
        ["n1", "n2"]
    );

    // Expiry and the drain's deadline.
    let created = at("2024-05-01T00:00:00Z");
    assert!(!policy.expired(created, at("2024-05-30T23:59:59Z")));
    assert!(policy.expired(created, at("2024-05-31T00:00:00Z")));
    assert_eq!(
        policy.drain_deadline(at("2024-06-10T08:00:00Z")),
        Some(at("2024-06-10T10:00:00Z"))
    );
}

#[test]
fn a_policy_can_be_built_without_a_document() {
    let budget = Budget {
        nodes: Nodes::Count(1),
        schedule: Some(Schedule::new("@daily", 6 * H, Some("America/New_York")).unwrap()),
        reasons: Reasons::of(&[Reason::Drifted]),
    };
    let policy = GroupPolicy::new(vec![budget], None, None);
    let evaluated = policy.evaluate(at("2024-06-10T05:00:00Z")); // 01:00 in New York
    assert_eq!(
        evaluated.allowance(Reason::Drifted, 50, 0).remaining,
        Some(1)
    );
    assert_eq!(evaluated.allowance(Reason::Empty, 50, 0).remaining, None);
}

#[test]
fn a_wrong_document_says_which_entry_and_field_and_why() {
    let refused = |text: &str| DisruptionConfig::parse(text).unwrap_err();
    let field_problem = |error: DisruptionConfigError| match error {
        DisruptionConfigError::Invalid {
            entry: EntryName { index, .. },
            field,
            problem,
        } => (index, field, problem),
        other => panic!("{other}"),
    };
    let (index, field, problem) = field_problem(refused(
        "nodeGroups: [{match: a}, {match: b, budgets: [{nodes: \"120%\"}]}]",
    ));
    assert_eq!((index, field.as_str()), (1, "budgets[0].nodes"));
    assert!(matches!(
        problem,
        Problem::Nodes(NodesError::OverHundred(_))
    ));
    let (_, field, problem) = field_problem(refused("nodeGroups: [{match: a, expireAfter: 2d}]"));
    assert_eq!(field, "expireAfter");
    assert!(matches!(
        problem,
        Problem::Duration(DurationError::Syntax(_))
    ));
    let (_, field, problem) = field_problem(refused(
        "nodeGroups: [{match: a, budgets: [{nodes: \"1\", schedule: \"@daily\", duration: 1h, timeZone: CEST}]}]",
    ));
    assert_eq!(field, "budgets[0].timeZone");
    assert!(matches!(problem, Problem::Schedule(ScheduleError::Zone(_))));
}
