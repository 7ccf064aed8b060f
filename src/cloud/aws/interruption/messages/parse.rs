//! A message's body -> what it says: EventBridge's envelope first, then the kind its source and
//! detail-type name.

use super::envelope::Envelope;
use super::notice::{Notice, Unreadable};
use super::{rebalance, scheduled_change, spot_interruption, state_change};

/// Reads one message's body.
pub fn parse(body: &str) -> Result<Notice, Unreadable> {
    let value: serde_json::Value = serde_json::from_str(body).map_err(Unreadable::NotJson)?;
    let event: Envelope = serde_json::from_value(value).map_err(Unreadable::NotAnEvent)?;
    match (event.source.as_str(), event.detail_type.as_str()) {
        ("aws.ec2", spot_interruption::DETAIL_TYPE) => spot_interruption::read(&event),
        ("aws.ec2", rebalance::DETAIL_TYPE) => rebalance::read(&event),
        ("aws.ec2", state_change::DETAIL_TYPE) => state_change::read(&event),
        ("aws.health", scheduled_change::DETAIL_TYPE) => scheduled_change::read(&event),
        _ => Err(Unreadable::UnknownKind {
            detail_type: event.detail_type,
            from: event.source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_an_event_of_the_four_kinds_is_refused_with_why() {
        let not_json = parse("hello").unwrap_err();
        assert!(matches!(not_json, Unreadable::NotJson(_)), "{not_json}");
        assert_eq!(not_json.kind(), "unknown");
        let not_event = parse(r#"{"Records": []}"#).unwrap_err();
        assert!(
            matches!(not_event, Unreadable::NotAnEvent(_)),
            "{not_event}"
        );
        let other = r#"{"detail-type": "EC2 AMI State Change", "source": "aws.ec2",
                        "time": "2024-01-01T00:00:00Z", "detail": {}}"#;
        let error = parse(other).unwrap_err();
        assert!(
            error.to_string().contains("EC2 AMI State Change"),
            "{error}"
        );
        assert_eq!(error.kind(), "unknown");
        // The right detail-type from another source is not the event it names.
        let spoofed = r#"{"detail-type": "EC2 Spot Instance Interruption Warning", "source": "my.app",
                          "time": "2024-01-01T00:00:00Z", "detail": {"instance-id": "i-1"}}"#;
        assert!(matches!(
            parse(spoofed),
            Err(Unreadable::UnknownKind { .. })
        ));
    }
}
