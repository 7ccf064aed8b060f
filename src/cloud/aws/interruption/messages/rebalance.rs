//! `EC2 Instance Rebalance Recommendation` (source `aws.ec2`): the Spot instance is at elevated risk of
//! interruption; EC2 says so at the event's time, usually well before any warning.

use super::envelope::{Envelope, instance_id};
use super::notice::{Notice, Says, Unreadable};
use crate::model::LeavingReason;
use serde::Deserialize;

pub const DETAIL_TYPE: &str = "EC2 Instance Rebalance Recommendation";

const KIND: LeavingReason = LeavingReason::Rebalance;

#[derive(Deserialize)]
struct RebalanceDetail {
    #[serde(rename = "instance-id")]
    instance_id: String,
}

pub fn read(event: &Envelope) -> Result<Notice, Unreadable> {
    let detail: RebalanceDetail = event.detail(KIND)?;
    Ok(Notice {
        kind: KIND,
        instances: vec![instance_id(
            KIND,
            "detail.instance-id",
            &detail.instance_id,
        )?],
        at: event.time(KIND)?,
        detail: DETAIL_TYPE.to_string(),
        says: Says::Leaving,
        until: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;
    use std::time::SystemTime;

    /// The example in EC2's user guide ("EC2 instance rebalance recommendations").
    const DOCUMENTED: &str = r#"{
        "version": "0",
        "id": "12345678-1234-1234-1234-123456789012",
        "detail-type": "EC2 Instance Rebalance Recommendation",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": "yyyy-mm-ddThh:mm:ssZ",
        "region": "us-east-2",
        "resources": ["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
        "detail": {"instance-id": "i-1234567890abcdef0"}
    }"#;

    #[test]
    fn the_documented_recommendation_is_read_at_its_time() {
        let text = DOCUMENTED.replace("yyyy-mm-ddThh:mm:ssZ", "2021-03-04T10:00:00Z");
        let notice = parse(&text).unwrap();
        let time: SystemTime = "2021-03-04T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .into();
        assert_eq!(notice.kind, LeavingReason::Rebalance);
        assert_eq!(notice.instances, ["i-1234567890abcdef0"]);
        assert_eq!(notice.at, time);
        assert_eq!(notice.says, Says::Leaving);
    }

    #[test]
    fn the_guides_placeholder_time_is_no_time() {
        let error = parse(DOCUMENTED).unwrap_err();
        assert_eq!(error.kind(), "rebalance");
        assert!(error.to_string().contains("yyyy-mm-dd"), "{error}");
    }
}
