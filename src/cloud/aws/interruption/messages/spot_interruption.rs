//! `EC2 Spot Instance Interruption Warning` (source `aws.ec2`): EC2 takes the Spot instance back two
//! minutes after the event's time (`detail.instance-action` says whether it terminates, stops or
//! hibernates it).

use super::envelope::{Envelope, instance_id};
use super::notice::{Notice, Says, Unreadable};
use crate::model::LeavingReason;
use serde::Deserialize;
use std::time::Duration;

pub const DETAIL_TYPE: &str = "EC2 Spot Instance Interruption Warning";

/// The warning comes this long before the instance is taken.
pub const WARNING: Duration = Duration::from_secs(120);

const KIND: LeavingReason = LeavingReason::SpotInterruption;

#[derive(Deserialize)]
struct WarningDetail {
    #[serde(rename = "instance-id")]
    instance_id: String,
    #[serde(rename = "instance-action", default)]
    instance_action: String,
}

pub fn read(event: &Envelope) -> Result<Notice, Unreadable> {
    let detail: WarningDetail = event.detail(KIND)?;
    let id = instance_id(KIND, "detail.instance-id", &detail.instance_id)?;
    let action = match detail.instance_action.as_str() {
        "" => "terminate",
        action => action,
    };
    Ok(Notice {
        kind: KIND,
        instances: vec![id],
        at: event.time(KIND)? + WARNING,
        detail: format!("{DETAIL_TYPE}: instance-action {action}"),
        says: Says::Leaving,
        until: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;
    use std::time::SystemTime;

    /// The example in EC2's user guide ("Spot Instance interruption notices").
    const DOCUMENTED: &str = r#"{
        "version": "0",
        "id": "12345678-1234-1234-1234-123456789012",
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": "2021-02-03T14:05:06Z",
        "region": "us-east-2",
        "resources": ["arn:aws:ec2:us-east-2a:instance/i-1234567890abcdef0"],
        "detail": {"instance-id": "i-1234567890abcdef0", "instance-action": "terminate"}
    }"#;

    #[test]
    fn the_documented_warning_is_read_with_its_deadline() {
        let notice = parse(DOCUMENTED).unwrap();
        let time: SystemTime = "2021-02-03T14:05:06Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .into();
        assert_eq!(notice.kind, LeavingReason::SpotInterruption);
        assert_eq!(notice.instances, ["i-1234567890abcdef0"]);
        assert_eq!(notice.at, time + Duration::from_secs(120));
        assert_eq!(notice.says, Says::Leaving);
        assert!(notice.detail.contains("terminate"), "{}", notice.detail);
    }

    #[test]
    fn a_warning_without_its_instance_is_refused() {
        let text = DOCUMENTED.replace(r#""instance-id": "i-1234567890abcdef0", "#, "");
        let error = parse(&text).unwrap_err();
        assert_eq!(error.kind(), "spotInterruption");
        assert!(error.to_string().contains("instance-id"), "{error}");
        let empty = DOCUMENTED.replace(
            r#""instance-id": "i-1234567890abcdef0""#,
            r#""instance-id": """#,
        );
        assert!(
            parse(&empty)
                .unwrap_err()
                .to_string()
                .contains("instance-id")
        );
    }

    #[test]
    fn a_warning_with_a_bad_time_is_refused() {
        let text = DOCUMENTED.replace("2021-02-03T14:05:06Z", "yesterday");
        let error = parse(&text).unwrap_err();
        assert!(error.to_string().contains("time"), "{error}");
    }
}
