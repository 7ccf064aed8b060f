//! A disruption budget, as Karpenter's NodePool writes one: how many of a group's nodes may be disrupted at
//! once (`nodes`, a count or a percent), for which reasons, and when (a schedule; always when it has none).
//! Budgets only ever restrict: an inactive budget, or one that names other reasons, limits nothing.

use super::schedule::Schedule;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Why a node is disrupted: Karpenter's `DisruptionReason`s and `Expired`, which Karpenter does not budget
/// (its expiry is forceful) and we do, for those who want expiry kept out of office hours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
pub enum Reason {
    /// A node with no pods to move (cluster-autoscaler's empty node).
    Empty,
    /// A node whose pods fit elsewhere (scale-down of an unneeded node, consolidation).
    Underutilized,
    /// A node that no longer matches its group's launch template or image.
    Drifted,
    /// A node older than its group's `expireAfter`.
    Expired,
    /// A Spot node EC2 recommends rebalancing, whose group does not replace it itself.
    Rebalance,
    /// A node the node monitoring agent says is unhealthy, whose group's auto repair is off (Karpenter's
    /// node repair reason).
    Unhealthy,
    /// A node over its group's scheduled max size (`schedules:` in the disruption configuration).
    Scheduled,
}

impl Reason {
    pub const ALL: [Reason; 7] = [
        Reason::Empty,
        Reason::Underutilized,
        Reason::Drifted,
        Reason::Expired,
        Reason::Rebalance,
        Reason::Unhealthy,
        Reason::Scheduled,
    ];

    /// How the report names a disruption of this reason (`expired`, `drifted`, ...).
    pub fn word(self) -> &'static str {
        match self {
            Reason::Empty => "empty",
            Reason::Underutilized => "underutilized",
            Reason::Drifted => "drifted",
            Reason::Expired => "expired",
            Reason::Rebalance => "rebalance",
            Reason::Unhealthy => "unhealthy",
            Reason::Scheduled => "scheduled",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Empty => "Empty",
            Reason::Underutilized => "Underutilized",
            Reason::Drifted => "Drifted",
            Reason::Expired => "Expired",
            Reason::Rebalance => "Rebalance",
            Reason::Unhealthy => "Unhealthy",
            Reason::Scheduled => "Scheduled",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reasons a budget applies to, as a set of bits: testing one costs nothing in the per-reason loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reasons(u8);

impl Reasons {
    /// Every reason: a budget whose `reasons` are left out or empty. (Karpenter would apply an explicitly
    /// empty list to no reason at all; a budget that applies to nothing is surely not what was meant.)
    pub const ALL: Reasons = Reasons(0b111_1111);

    /// The reasons listed; every reason when none is.
    pub fn of(listed: &[Reason]) -> Reasons {
        match listed {
            [] => Reasons::ALL,
            _ => Reasons(listed.iter().fold(0, |bits, r| bits | r.bit())),
        }
    }

    pub fn contains(self, reason: Reason) -> bool {
        self.0 & reason.bit() != 0
    }
}

/// How many nodes a budget lets be disrupted at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    Count(u64),
    /// A percent of the group's nodes, 0 to 100, rounded up as Karpenter (and a PDB's maxUnavailable) does:
    /// 5% of 10 nodes is 1.
    Percent(u32),
}

impl Nodes {
    /// The nodes this allows in a group of `total`.
    pub fn of(self, total: u64) -> u64 {
        match self {
            Nodes::Count(n) => n,
            Nodes::Percent(p) => {
                // In integers, so that 10% of 30 is 3 and not 3.0000000000000004 rounded up to 4.
                let scaled = u128::from(p) * u128::from(total);
                u64::try_from(scaled.div_ceil(100)).expect("at most total")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodesError {
    #[error(
        "{0:?} is neither a count nor a percent: write a whole number of nodes, as \"5\", or a whole percent, as \"20%\""
    )]
    Syntax(String),
    #[error("{0:?} is over 100%")]
    OverHundred(String),
    #[error("{0:?} is too large a count")]
    TooLarge(String),
}

impl FromStr for Nodes {
    type Err = NodesError;

    /// Karpenter's `^((100|[0-9]{1,2})%|[0-9]+)$`: digits only, so no sign, fraction or space.
    fn from_str(text: &str) -> Result<Nodes, NodesError> {
        let (digits, percent) = match text.strip_suffix('%') {
            Some(digits) => (digits, true),
            None => (text, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(NodesError::Syntax(text.to_string()));
        }
        let value = digits.parse::<u64>();
        if !percent {
            return value
                .map(Nodes::Count)
                .map_err(|_| NodesError::TooLarge(text.to_string()));
        }
        match value.map(u32::try_from) {
            Ok(Ok(p)) if p <= 100 => Ok(Nodes::Percent(p)),
            _ => Err(NodesError::OverHundred(text.to_string())),
        }
    }
}

impl fmt::Display for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nodes::Count(n) => write!(f, "{n}"),
            Nodes::Percent(p) => write!(f, "{p}%"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Budget {
    pub nodes: Nodes,
    /// When the budget applies; always when `None`.
    pub schedule: Option<Schedule>,
    pub reasons: Reasons,
}

impl Budget {
    /// A budget that always applies, to every reason.
    pub fn always(nodes: Nodes) -> Budget {
        Budget {
            nodes,
            schedule: None,
            reasons: Reasons::ALL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_counts_and_percents_as_karpenter_writes_them() {
        for (text, nodes) in [
            ("0", Nodes::Count(0)),
            ("5", Nodes::Count(5)),
            ("250", Nodes::Count(250)),
            ("0%", Nodes::Percent(0)),
            ("20%", Nodes::Percent(20)),
            ("100%", Nodes::Percent(100)),
        ] {
            assert_eq!(text.parse::<Nodes>(), Ok(nodes), "{text}");
            assert_eq!(nodes.to_string(), text);
        }
    }

    #[test]
    fn refuses_fractions_signs_and_more_than_all() {
        for text in [
            "", "%", "1.5%", "-5%", "-1", "+1", "1.5", " 5", "5 %", "ten", "20%%",
        ] {
            assert_eq!(
                text.parse::<Nodes>(),
                Err(NodesError::Syntax(text.into())),
                "{text:?}"
            );
        }
        assert_eq!(
            "1.5%".parse::<Nodes>().unwrap_err().to_string(),
            r#""1.5%" is neither a count nor a percent: write a whole number of nodes, as "5", or a whole percent, as "20%""#
        );
        for text in ["101%", "150%", "99999999999%", "99999999999999999999%"] {
            assert_eq!(
                text.parse::<Nodes>(),
                Err(NodesError::OverHundred(text.into()))
            );
        }
        assert_eq!(
            "150%".parse::<Nodes>().unwrap_err().to_string(),
            r#""150%" is over 100%"#
        );
        assert_eq!(
            "99999999999999999999"
                .parse::<Nodes>()
                .unwrap_err()
                .to_string(),
            r#""99999999999999999999" is too large a count"#
        );
    }

    #[test]
    fn percents_round_up() {
        for (percent, total, allowed) in [
            (20, 4, 1),  // 0.8
            (5, 10, 1),  // 0.5, Karpenter's own example
            (10, 30, 3), // exactly 3: no float error rounded up to 4
            (10, 0, 0),
            (10, 1, 1),
            (0, 100, 0),
            (100, 7, 7),
            (33, 10, 4), // 3.3
        ] {
            assert_eq!(
                Nodes::Percent(percent).of(total),
                allowed,
                "{percent}% of {total}"
            );
        }
        assert_eq!(Nodes::Count(3).of(0), 3);
        assert_eq!(Nodes::Percent(100).of(u64::MAX), u64::MAX);
    }

    #[test]
    fn reasons_left_out_are_all_reasons() {
        assert_eq!(Reasons::of(&[]), Reasons::ALL);
        let some = Reasons::of(&[Reason::Underutilized, Reason::Empty]);
        assert!(some.contains(Reason::Empty) && some.contains(Reason::Underutilized));
        assert!(!some.contains(Reason::Drifted) && !some.contains(Reason::Expired));
        assert!(Reason::ALL.iter().all(|&r| Reasons::ALL.contains(r)));
    }

    #[test]
    fn reasons_are_named_as_karpenter_names_them() {
        for reason in Reason::ALL {
            let yaml = serde_norway::to_string(&reason).unwrap();
            assert_eq!(yaml.trim(), reason.as_str());
            assert_eq!(serde_norway::from_str::<Reason>(&yaml).unwrap(), reason);
        }
    }

    proptest! {
        #[test]
        fn a_percent_is_the_ceiling_and_grows_with_the_group(percent in 0u32..=100, total in 0u64..100_000) {
            let allowed = Nodes::Percent(percent).of(total);
            prop_assert_eq!(allowed, (f64::from(percent) * total as f64 / 100.0 - 1e-9).ceil().max(0.0) as u64);
            prop_assert!(allowed <= total);
            prop_assert!(Nodes::Percent(percent).of(total + 1) >= allowed);
        }
    }
}
