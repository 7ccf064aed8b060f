//! A message's body -> what it says: EventBridge's envelope first, then the kind its version, source and
//! detail-type name (as Karpenter picks its parser by the three).

use super::envelope::Envelope;
use super::notice::{Notice, Unreadable};
use super::{rebalance, scheduled_change, spot_interruption, state_change};

/// Reads one message's body.
pub fn parse(body: &str) -> Result<Notice, Unreadable> {
    let value: serde_json::Value = serde_json::from_str(body).map_err(Unreadable::NotJson)?;
    let event: Envelope = serde_json::from_value(value).map_err(Unreadable::NotAnEvent)?;
    let version = event.version.as_str();
    match (version, event.source.as_str(), event.detail_type.as_str()) {
        ("0", "aws.ec2", spot_interruption::DETAIL_TYPE) => spot_interruption::read(&event),
        ("0", "aws.ec2", rebalance::DETAIL_TYPE) => rebalance::read(&event),
        ("0", "aws.ec2", state_change::DETAIL_TYPE) => state_change::read(&event),
        ("0", "aws.health", scheduled_change::DETAIL_TYPE) => scheduled_change::read(&event),
        _ => Err(Unreadable::UnknownKind {
            version: event.version,
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
        let other = r#"{"version": "0", "detail-type": "EC2 AMI State Change", "source": "aws.ec2",
                        "time": "2024-01-01T00:00:00Z", "detail": {}}"#;
        let error = parse(other).unwrap_err();
        assert!(
            error.to_string().contains("EC2 AMI State Change"),
            "{error}"
        );
        assert_eq!(error.kind(), "unknown");
        // The right detail-type from another source is not the event it names.
        let spoofed = r#"{"version": "0", "detail-type": "EC2 Spot Instance Interruption Warning",
                          "source": "my.app", "time": "2024-01-01T00:00:00Z",
                          "detail": {"instance-id": "i-0123456789abcdef0"}}"#;
        assert!(matches!(
            parse(spoofed),
            Err(Unreadable::UnknownKind { .. })
        ));
        // A version other than EventBridge's "0" is a shape the parsers do not know; none is no event.
        let warning = r#"{"version": "0", "detail-type": "EC2 Spot Instance Interruption Warning",
                          "source": "aws.ec2", "time": "2024-01-01T00:00:00Z",
                          "detail": {"instance-id": "i-0123456789abcdef0"}}"#;
        assert!(parse(warning).is_ok());
        let error = parse(&warning.replace(r#""version": "0""#, r#""version": "1""#)).unwrap_err();
        assert!(matches!(error, Unreadable::UnknownKind { .. }), "{error}");
        assert!(error.to_string().contains(r#"version "1""#), "{error}");
        let unversioned = warning.replace(r#""version": "0", "#, "");
        assert!(matches!(
            parse(&unversioned),
            Err(Unreadable::NotAnEvent(_))
        ));
    }
}
