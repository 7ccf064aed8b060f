//! What one message on the interruption queue says once read, and why a message could not be read.

use crate::model::LeavingReason;
use std::time::SystemTime;

/// One message, read: these EC2 instances are leaving for this reason at this time, or (an instance
/// pending or running again) nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Which of the four kinds the message is.
    pub kind: LeavingReason,
    /// EC2 instance ids (`i-...`), at least one.
    pub instances: Vec<String>,
    /// When the instances go (the warning's deadline, the scheduled change's start) or, for a rebalance
    /// recommendation or a state change, when EC2 said so.
    pub at: SystemTime,
    /// What the message said, in words.
    pub detail: String,
    pub says: Says,
    /// When what it says ends, for an event the instances come back from (a scheduled reboot or
    /// maintenance whose `endTime` is given); `None`: until the instances leave their node group.
    pub until: Option<SystemTime>,
}

/// Whether a message says its instances are leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Says {
    Leaving,
    /// A state change to `pending` or `running`: read, and it clears nothing (a Spot instance that was
    /// warned is not saved by running a little longer).
    Nothing,
}

/// Why a message could not be read. It is logged with why, deleted and counted ignored; nothing acts on it.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not an EventBridge event (version, detail-type, source, time, detail): {0}")]
    NotAnEvent(serde_json::Error),
    #[error(
        "detail-type {detail_type:?} from source {from:?}, version {version:?}, is none of the four the \
         queue is for (Spot interruption warning, rebalance recommendation, AWS Health scheduled change, \
         state change; version \"0\")"
    )]
    UnknownKind {
        version: String,
        detail_type: String,
        from: String,
    },
    /// A message of a known kind with a field missing or wrong.
    #[error("{kind}: {field}: {problem}")]
    Field {
        kind: LeavingReason,
        field: &'static str,
        problem: String,
    },
}

impl Unreadable {
    /// The message's kind as the metrics name it: its kind when that much was read, else `unknown`.
    pub fn kind(&self) -> &'static str {
        match self {
            Unreadable::Field { kind, .. } => kind.as_str(),
            _ => "unknown",
        }
    }

    pub(super) fn field(kind: LeavingReason, field: &'static str, problem: impl ToString) -> Self {
        Unreadable::Field {
            kind,
            field,
            problem: problem.to_string(),
        }
    }
}
