//! The module as the loop uses it: the document read once, each group's policy found by name, its budgets
//! evaluated once a loop, and each reason's allowance used up as candidates are chosen.

use super::super::allowance::{Allowance, Binding, Description, Evaluated, Limit};
use super::super::budget::{Budget, Nodes, NodesError, Reason, Reasons};
use super::super::config::{DisruptionConfig, DisruptionConfigError, EntryName, Problem};
use super::super::duration::DurationError;
use super::super::policy::GroupPolicy;
use super::super::schedule::{Schedule, ScheduleError, WindowText};
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

/// A document of one entry for `batch` whose `schedules` is `windows`.
fn with_schedules(windows: &str) -> String {
    format!("nodeGroups:\n  - match: \"^batch$\"\n    schedules:\n{windows}")
}

fn refused(text: &str) -> String {
    DisruptionConfig::parse(text).unwrap_err().to_string()
}

#[test]
fn reads_scheduled_sizes_in_the_order_written() {
    let text = with_schedules(
        "      - {schedule: \"0 19 * * mon-fri\", duration: 13h, timeZone: Europe/Berlin, minSize: 0, maxSize: 0}\n      \
         - {schedule: \"30 8 * * mon-fri\", duration: 2h, minSize: 5}\n",
    );
    let config = DisruptionConfig::parse(&text).unwrap();
    let schedules = config.policy_for("batch").unwrap().schedules();
    let read: Vec<_> = (schedules.iter())
        .map(|s| {
            let w = &s.window;
            (
                w.cron(),
                w.duration(),
                w.time_zone(),
                s.min_size,
                s.max_size,
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            (
                "0 19 * * mon-fri",
                13 * H,
                "Europe/Berlin",
                Some(0),
                Some(0)
            ),
            ("30 8 * * mon-fri", 2 * H, "UTC", Some(5), None),
        ]
    );
}

#[test]
fn a_wrong_scheduled_size_is_refused_naming_its_field() {
    let ok = "      - {schedule: \"@daily\", duration: 1h, maxSize: 1}\n";
    for (window, expected) in [
        (
            "{schedule: \"@daily\", duration: 1h, minSize: 3, maxSize: 1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1]: minSize 3 is more than maxSize 1",
        ),
        (
            "{schedule: \"@daily\", duration: 1h, minSize: -1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].minSize: -1 must not be negative",
        ),
        (
            "{schedule: \"@daily\", duration: 1h, maxSize: -2}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].maxSize: -2 must not be negative",
        ),
        (
            "{schedule: \"@daily\", duration: 1h}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1]: a window that sets neither minSize nor maxSize \
             changes nothing",
        ),
        (
            "{schedule: \"0 25 * * *\", duration: 1h, minSize: 1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].schedule: \"0 25 * * *\" is not a cron schedule",
        ),
        (
            "{schedule: \"@daily\", duration: 1h, timeZone: Europe/Berln, minSize: 1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].timeZone: \"Europe/Berln\" is not an IANA time zone",
        ),
        (
            "{schedule: \"@daily\", duration: 1 hour, minSize: 1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].duration: \"1 hour\" is not a duration",
        ),
        (
            "{schedule: \"@daily\", duration: 0m, minSize: 1}",
            "nodeGroups[0] (match \"^batch$\"): schedules[1].duration: a window of no length is never open",
        ),
    ] {
        let text = with_schedules(&format!("{ok}      - {window}\n"));
        let error = refused(&text);
        assert!(error.starts_with(expected), "{window}: {error}");
    }
    // A field schedules do not have is named too.
    let error = refused(&with_schedules(
        "      - {schedule: \"@daily\", duration: 1h, minimum: 1}\n",
    ));
    assert!(error.contains("unknown field `minimum`"), "{error}");
}
