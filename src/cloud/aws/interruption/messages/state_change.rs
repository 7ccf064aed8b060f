//! `EC2 Instance State-change Notification` (source `aws.ec2`): an instance stopping, stopped, shutting down
//! or terminated is leaving, whoever stopped it; `pending` and `running` are read and say nothing.

use super::envelope::{Envelope, instance_id};
use super::notice::{Notice, Says, Unreadable};
use crate::model::LeavingReason;
use serde::Deserialize;

pub const DETAIL_TYPE: &str = "EC2 Instance State-change Notification";

const KIND: LeavingReason = LeavingReason::InstanceStopped;

/// The states that take the instance away, as Karpenter reads them.
const LEAVING: [&str; 4] = ["stopping", "stopped", "shutting-down", "terminated"];

/// The states that say nothing.
const STAYING: [&str; 2] = ["pending", "running"];

#[derive(Deserialize)]
struct StateChangeDetail {
    #[serde(rename = "instance-id")]
    instance_id: String,
    state: String,
}

pub fn read(event: &Envelope) -> Result<Notice, Unreadable> {
    let detail: StateChangeDetail = event.detail(KIND)?;
    let state = detail.state.as_str();
    let says = if LEAVING.contains(&state) {
        Says::Leaving
    } else if STAYING.contains(&state) {
        Says::Nothing
    } else {
        let problem = format!("{state:?} is no EC2 instance state");
        return Err(Unreadable::field(KIND, "detail.state", problem));
    };
    Ok(Notice {
        kind: KIND,
        instances: vec![instance_id(
            KIND,
            "detail.instance-id",
            &detail.instance_id,
        )?],
        at: event.time(KIND)?,
        detail: format!("{DETAIL_TYPE}: {state}"),
        says,
        until: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;

    /// The example in EventBridge's user guide ("Amazon EC2 instance state-change events").
    const DOCUMENTED: &str = r#"{
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "EC2 Instance State-change Notification",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": "2015-11-11T21:29:54Z",
        "region": "us-east-1",
        "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],
        "detail": {"instance-id": "i-abcd1111", "state": "pending"}
    }"#;

    #[test]
    fn stopping_and_terminated_are_leaving_pending_and_running_say_nothing() {
        for state in LEAVING {
            let notice = parse(&DOCUMENTED.replace("pending", state)).unwrap();
            assert_eq!(notice.says, Says::Leaving, "{state}");
            assert_eq!(notice.kind, LeavingReason::InstanceStopped);
            assert_eq!(notice.instances, ["i-abcd1111"]);
            assert!(notice.detail.ends_with(state), "{}", notice.detail);
        }
        for state in STAYING {
            let notice = parse(&DOCUMENTED.replace("pending", state)).unwrap();
            assert_eq!(notice.says, Says::Nothing, "{state}");
        }
    }

    #[test]
    fn an_unknown_state_is_refused() {
        let error = parse(&DOCUMENTED.replace("pending", "exploded")).unwrap_err();
        assert_eq!(error.kind(), "instanceStopped");
        assert!(error.to_string().contains("exploded"), "{error}");
    }
}
