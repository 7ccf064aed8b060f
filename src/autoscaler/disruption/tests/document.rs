//! The document read: every field of an entry as Karpenter writes it, and each mistake refused whole with the
//! entry and the field it is in.

use super::super::budget::Reason::*;
use super::super::budget::{Nodes, NodesError, Reason, Reasons};
use super::super::config::{DisruptionConfig, DisruptionConfigError, EntryName, Problem};
use std::time::Duration;
use std::time::SystemTime;

const H: Duration = Duration::from_secs(3600);

const EXAMPLE: &str = r#"
nodeGroups:
  - match: "^general$"          # the first entry that matches applies
    budgets:
      - nodes: "20%"
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
        duration: 8h
        timeZone: Europe/Berlin
        reasons: [Underutilized, Empty]
    expireAfter: 720h
    terminationGracePeriod: 2h
  - match: "^gpu-"
    expireAfter: Never
  - match: ""
    budgets:
      - nodes: 3
"#;

fn at(text: &str) -> SystemTime {
    SystemTime::from(text.parse::<jiff::Timestamp>().unwrap())
}

/// The error's message for `text`, which must be refused.
fn refused(text: &str) -> String {
    DisruptionConfig::parse(text).unwrap_err().to_string()
}

/// A document of one entry, `match: "^general$"`, with `budget` as its one budget.
fn with_budget(budget: &str) -> String {
    format!("nodeGroups:\n  - match: \"^general$\"\n    budgets:\n      - {budget}\n")
}

#[test]
fn reads_the_example_of_the_issue() {
    let config = DisruptionConfig::parse(EXAMPLE).unwrap();
    let general = config.policy_for("general").unwrap();
    assert_eq!(general.expire_after(), Some(720 * H));
    assert_eq!(general.termination_grace_period(), Some(2 * H));
    let [always, office] = general.budgets() else {
        panic!("two budgets")
    };
    assert_eq!(always.nodes, Nodes::Percent(20));
    assert!(always.schedule.is_none() && always.reasons == Reasons::ALL);
    assert_eq!(office.nodes, Nodes::Count(0));
    assert_eq!(office.reasons, Reasons::of(&[Underutilized, Empty]));
    let schedule = office.schedule.as_ref().unwrap();
    assert_eq!(
        (schedule.cron(), schedule.duration(), schedule.time_zone()),
        ("0 9 * * mon-fri", 8 * H, "Europe/Berlin")
    );
    // Monday at 10:00 in Berlin: nothing may be consolidated; drift has its 20%.
    let evaluated = general.evaluate(at("2024-06-10T08:00:00Z"));
    assert_eq!(
        evaluated
            .allowance(Underutilized, 4, 0)
            .describe("general")
            .to_string(),
        "general: 0 allowed from 09:00 to 17:00 Europe/Berlin"
    );
    assert_eq!(
        evaluated
            .allowance(Drifted, 4, 1)
            .describe("general")
            .to_string(),
        "general: Drifted, 1 of 1 allowed in use (20% of 4 nodes)"
    );
}

#[test]
fn the_first_entry_that_matches_applies() {
    let config = DisruptionConfig::parse(EXAMPLE).unwrap();
    let gpu = config.policy_for("gpu-a100").unwrap();
    assert!(gpu.budgets().is_empty() && gpu.expire_after().is_none());
    // `^general$` matches the whole name only; the catch-all `""` takes the rest.
    let other = config.policy_for("general-2").unwrap();
    assert_eq!(other.budgets()[0].nodes, Nodes::Count(3));
    assert!(
        config
            .policy_for("general")
            .unwrap()
            .expire_after()
            .is_some()
    );
    // Unanchored, a match finds the pattern anywhere in the name.
    let config = DisruptionConfig::parse("nodeGroups: [{match: spot}]").unwrap();
    assert!(config.policy_for("eu-spot-large").is_some());
    assert!(config.policy_for("on-demand").is_none());
}

#[test]
fn an_empty_document_says_nothing() {
    for text in [
        "",
        "# nothing yet\n",
        "nodeGroups: []",
        "nodeGroups:",
        "---\n",
    ] {
        let config = DisruptionConfig::parse(text).unwrap();
        assert!(config.is_empty(), "{text:?}");
        assert!(config.policy_for("general").is_none());
    }
}

#[test]
fn an_entry_without_budgets_limits_nothing() {
    let config =
        DisruptionConfig::parse("nodeGroups: [{match: general, expireAfter: 24h}]").unwrap();
    let policy = config.policy_for("general").unwrap();
    let evaluated = policy.evaluate(at("2024-06-10T08:00:00Z"));
    for reason in Reason::ALL {
        assert_eq!(evaluated.allowance(reason, 10, 0).allowed, None, "{reason}");
    }
    assert_eq!(policy.expire_after(), Some(24 * H));
    let empty = DisruptionConfig::parse("nodeGroups: [{match: general, budgets: []}]").unwrap();
    assert!(empty.policy_for("general").unwrap().budgets().is_empty());
}

#[test]
fn empty_reasons_are_all_reasons() {
    let config = DisruptionConfig::parse(&with_budget("{nodes: \"1\", reasons: []}")).unwrap();
    assert_eq!(
        config.policy_for("general").unwrap().budgets()[0].reasons,
        Reasons::ALL
    );
}

#[test]
fn refuses_bad_cron_naming_the_entry_and_field() {
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"0 0 9 * * mon\", duration: 8h}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].schedule: "0 0 9 * * mon" is not a cron schedule (minute hour day-of-month month day-of-week): Invalid pattern: Pattern must have 5 fields when seconds are disallowed."#
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"0 9 * * tue-mon\", duration: 8h}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].schedule: "0 9 * * tue-mon" is not a cron schedule (minute hour day-of-month month day-of-week): Component error: Range out of bounds."#
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"0 0 30 2 *\", duration: 8h}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].schedule: "0 0 30 2 *" never fires"#
    );
}

#[test]
fn refuses_an_unknown_time_zone_and_a_zone_without_schedule() {
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"@daily\", duration: 8h, timeZone: Mars/Olympus_Mons}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].timeZone: "Mars/Olympus_Mons" is not an IANA time zone, as Europe/Berlin or America/New_York"#
    );
    assert_eq!(
        refused(&with_budget("{nodes: \"0\", timeZone: Europe/Berlin}")),
        r#"nodeGroups[0] (match "^general$"): budgets[0].timeZone: timeZone without schedule: the zone is the one the schedule is read in"#
    );
}

#[test]
fn refuses_a_schedule_without_duration_and_a_duration_without_schedule() {
    assert_eq!(
        refused(&with_budget("{nodes: \"0\", schedule: \"@daily\"}")),
        r#"nodeGroups[0] (match "^general$"): budgets[0]: schedule without duration: each firing opens a window of `duration`"#
    );
    assert_eq!(
        refused(&with_budget("{nodes: \"0\", duration: 8h}")),
        r#"nodeGroups[0] (match "^general$"): budgets[0]: duration without schedule: the window opens when `schedule` fires"#
    );
}

#[test]
fn refuses_bad_nodes() {
    for (nodes, problem) in [
        (r#""150%""#, r#""150%" is over 100%"#),
        (
            r#""1.5%""#,
            r#""1.5%" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
        (
            r#""-5%""#,
            r#""-5%" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
        (
            "-1",
            r#""-1" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
        (
            "2.5",
            r#""2.5" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
        (
            "five",
            r#""five" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
        (
            "true",
            r#""true" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#,
        ),
    ] {
        assert_eq!(
            refused(&with_budget(&format!("{{nodes: {nodes}}}"))),
            format!(r#"nodeGroups[0] (match "^general$"): budgets[0].nodes: {problem}"#),
            "{nodes}"
        );
    }
    // A bare number is a count, as Karpenter's quoted "5".
    let config = DisruptionConfig::parse(&with_budget("{nodes: 5}")).unwrap();
    assert_eq!(
        config.policy_for("general").unwrap().budgets()[0].nodes,
        Nodes::Count(5)
    );
}

#[test]
fn refuses_unknown_and_repeated_reasons() {
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"1\", reasons: [Empty, Consolidated]}"
        )),
        "nodeGroups[0] (match \"^general$\"): budgets[0].reasons[1]: unknown variant `Consolidated`, expected one of \
         `Empty`, `Underutilized`, `Drifted`, `Expired`, `Rebalance`, `Unhealthy`, `Scheduled` at line 4 column 39"
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"1\", reasons: [Empty, Drifted, Empty]}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].reasons: Empty is listed twice"#
    );
}

#[test]
fn refuses_unknown_keys_anywhere() {
    assert_eq!(
        refused("nodegroups: []"),
        "unknown field `nodegroups`, expected `nodeGroups`"
    );
    assert_eq!(
        refused("nodeGroups:\n  - match: \"^general$\"\n    expiresAfter: 1h\n"),
        "nodeGroups[0] (match \"^general$\"): unknown field `expiresAfter`, expected one of `match`, `budgets`, \
         `expireAfter`, `terminationGracePeriod`, `repair`, `schedules`, `drainLead`, `scaleDownReserved` at line 3 column 5"
    );
    assert_eq!(
        refused(&with_budget("{node: \"1\"}")),
        "nodeGroups[0] (match \"^general$\"): budgets[0]: unknown field `node`, expected one of `nodes`, `schedule`, \
         `duration`, `timeZone`, `reasons` at line 4 column 10"
    );
    // An entry past the first is named by its own index and match.
    assert_eq!(
        refused(
            "nodeGroups:\n  - match: a\n  - match: b\n    budgets: [{nodes: \"1\", timezone: UTC}]\n"
        ),
        "nodeGroups[1] (match \"b\"): budgets[0]: unknown field `timezone`, expected one of `nodes`, `schedule`, \
         `duration`, `timeZone`, `reasons` at line 4 column 28"
    );
}

#[test]
fn refuses_what_is_not_the_document() {
    assert_eq!(
        refused("nodeGroups:\n  - budgets: []\n"),
        "nodeGroups[0]: missing field `match` at line 2 column 5"
    );
    assert_eq!(
        refused("nodeGroups: {general: {}}"),
        "nodeGroups: invalid type: map, expected a sequence at line 1 column 13"
    );
    assert_eq!(
        refused("- match: general"),
        "invalid type: sequence, expected struct Document"
    );
    assert_eq!(
        refused(
            "nodeGroups:\n  - match: a\n    budgets:\n      - nodes: \"1\"\n        schedule: @daily\n"
        ),
        "found character that cannot start any token at line 5 column 19, while scanning for the next token"
    );
}

#[test]
fn refuses_an_invalid_regular_expression() {
    assert_eq!(
        refused("nodeGroups: [{match: \"gen(eral\"}]"),
        "nodeGroups[0] (match \"gen(eral\"): match: not a regular expression: regex parse error:\n    gen(eral\n       \
         ^\nerror: unclosed group"
    );
}

#[test]
fn refuses_bad_durations() {
    let entry = |field: &str| format!("nodeGroups: [{{match: general, {field}}}]");
    assert_eq!(
        refused(&entry("expireAfter: 30d")),
        r#"nodeGroups[0] (match "general"): expireAfter: "30d" is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"#
    );
    assert_eq!(
        refused(&entry("expireAfter: 0s")),
        r#"nodeGroups[0] (match "general"): expireAfter: 0 would replace every node as soon as it is up: write Never to turn expiry off"#
    );
    assert_eq!(
        refused(&entry("terminationGracePeriod: Never")),
        r#"nodeGroups[0] (match "general"): terminationGracePeriod: Never is for expireAfter: leave terminationGracePeriod out to let a drain wait for as long as it takes"#
    );
    assert_eq!(
        refused(&entry("terminationGracePeriod: 1.5h")),
        r#"nodeGroups[0] (match "general"): terminationGracePeriod: "1.5h" is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"#
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"@daily\", duration: 8 hours}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].duration: "8 hours" is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"#
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"@daily\", duration: 90s}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].duration: "90s" is not whole minutes: a window is hours and minutes, as cron fires on minutes (Karpenter's rule)"#
    );
    assert_eq!(
        refused(&with_budget(
            "{nodes: \"0\", schedule: \"@daily\", duration: 0m}"
        )),
        r#"nodeGroups[0] (match "^general$"): budgets[0].duration: a window of no length is never open"#
    );
    // 0s grace is taken: the drain is forced at once.
    let config = DisruptionConfig::parse(&entry("terminationGracePeriod: 0s")).unwrap();
    assert_eq!(
        config
            .policy_for("general")
            .unwrap()
            .termination_grace_period(),
        Some(Duration::ZERO)
    );
}

#[test]
fn one_wrong_entry_refuses_the_whole_document() {
    let text = format!("{EXAMPLE}  - match: \"^late$\"\n    expireAfter: soon\n");
    assert_eq!(
        refused(&text),
        r#"nodeGroups[3] (match "^late$"): expireAfter: "soon" is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"#
    );
}

#[test]
fn errors_are_typed() {
    let error = DisruptionConfig::parse(&with_budget("{nodes: \"101%\"}")).unwrap_err();
    let DisruptionConfigError::Invalid {
        entry,
        field,
        problem,
    } = error
    else {
        panic!("{error}")
    };
    assert_eq!(
        entry,
        EntryName {
            index: 0,
            pattern: Some("^general$".into())
        }
    );
    assert_eq!(field, "budgets[0].nodes");
    assert!(matches!(
        problem,
        Problem::Nodes(NodesError::OverHundred(_))
    ));
}
