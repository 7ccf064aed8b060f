//! `AWS Health Event` (source `aws.health`) of service EC2 in category `scheduledChange`: a retirement,
//! reboot or maintenance of the instances among `detail.affectedEntities` (and `resources`; other entities,
//! a volume or a Dedicated Host, are skipped) that starts at `detail.startTime`, which AWS Health writes as
//! RFC 2822 (RFC 3339 is read too).

use super::envelope::{Envelope, is_instance_id, rfc2822_or_3339};
use super::notice::{Notice, Says, Unreadable};
use crate::model::LeavingReason;
use serde::Deserialize;
use std::time::SystemTime;

pub const DETAIL_TYPE: &str = "AWS Health Event";

const KIND: LeavingReason = LeavingReason::ScheduledEvent;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HealthDetail {
    service: String,
    event_type_category: String,
    #[serde(default)]
    event_type_code: String,
    start_time: String,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    affected_entities: Vec<AffectedEntity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AffectedEntity {
    entity_value: String,
}

pub fn read(event: &Envelope) -> Result<Notice, Unreadable> {
    let detail: HealthDetail = event.detail(KIND)?;
    if detail.service != "EC2" {
        let problem = format!("{:?}: only EC2's events name instances", detail.service);
        return Err(Unreadable::field(KIND, "detail.service", problem));
    }
    if detail.event_type_category != "scheduledChange" {
        let problem = format!(
            "{:?}: only a scheduledChange takes instances away",
            detail.event_type_category
        );
        return Err(Unreadable::field(KIND, "detail.eventTypeCategory", problem));
    }
    let at = time(&detail.start_time, "detail.startTime")?;
    let end = detail
        .end_time
        .as_deref()
        .map(|end| time(end, "detail.endTime"))
        .transpose()?;
    if let Some(end) = end
        && end < at
    {
        let problem = format!(
            "{:?} is before startTime",
            detail.end_time.unwrap_or_default()
        );
        return Err(Unreadable::field(KIND, "detail.endTime", problem));
    }
    let entities = detail
        .affected_entities
        .iter()
        .map(|e| e.entity_value.as_str());
    // An event may name other things beside its instances (a volume, a Dedicated Host, their ARNs): every
    // instance id is taken, as Karpenter takes every instance entity, and the rest skipped.
    let resources = event.resources.iter().map(String::as_str);
    let mut instances: Vec<String> = Vec::new();
    for id in entities.chain(resources).filter(|id| is_instance_id(id)) {
        if !instances.iter().any(|known| known == id) {
            instances.push(id.to_string());
        }
    }
    if instances.is_empty() {
        let problem = "names no instance (no entityValue nor resource is an EC2 instance id)";
        return Err(Unreadable::field(KIND, "detail.affectedEntities", problem));
    }
    Ok(Notice {
        kind: KIND,
        instances,
        at,
        detail: format!("{DETAIL_TYPE}: {}", detail.event_type_code),
        says: Says::Leaving,
        until: end.filter(|_| comes_back(&detail.event_type_code)),
    })
}

/// Whether the instances come back from the event: a reboot (`AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED`,
/// `AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED`) or a maintenance (`AWS_EC2_SYSTEM_MAINTENANCE_EVENT`)
/// leaves them running, while a retirement or a stop (`AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED`,
/// `AWS_EC2_INSTANCE_STOP_SCHEDULED`) takes them out of their group.
fn comes_back(event_type_code: &str) -> bool {
    event_type_code.contains("REBOOT") || event_type_code.contains("MAINTENANCE")
}

/// A time as AWS Health writes it (RFC 2822, or RFC 3339), or why not.
fn time(text: &str, field: &'static str) -> Result<SystemTime, Unreadable> {
    rfc2822_or_3339(text).ok_or_else(|| {
        let problem = format!("{text:?} is neither an RFC 2822 nor an RFC 3339 time");
        Unreadable::field(KIND, field, problem)
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse;
    use super::*;

    /// An EC2 scheduled change in the shape of AWS Health's user guide ("Monitoring AWS Health events with
    /// Amazon EventBridge") and Karpenter's test messages.
    const DOCUMENTED: &str = r#"{
        "version": "0",
        "id": "7fb65329-1628-4cf3-a740-95fg457h1402",
        "detail-type": "AWS Health Event",
        "source": "aws.health",
        "account": "123456789012",
        "time": "2021-06-05T06:27:57Z",
        "region": "us-east-1",
        "resources": ["i-abcd1111"],
        "detail": {
            "eventArn": "arn:aws:health:us-east-1::event/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
            "service": "EC2",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": "scheduledChange",
            "startTime": "Sat, 05 Jun 2021 15:10:09 GMT",
            "eventDescription": [{"language": "en_US", "latestDescription": "retirement"}],
            "affectedEntities": [{"entityValue": "i-abcd1111", "tags": {"stage": "prod"}},
                                 {"entityValue": "i-abcd2222"}]
        }
    }"#;

    fn time(text: &str) -> SystemTime {
        text.parse::<jiff::Timestamp>().unwrap().into()
    }

    #[test]
    fn the_documented_event_is_read_at_its_start_time() {
        let notice = parse(DOCUMENTED).unwrap();
        assert_eq!(notice.kind, LeavingReason::ScheduledEvent);
        assert_eq!(notice.instances, ["i-abcd1111", "i-abcd2222"]);
        assert_eq!(notice.at, time("2021-06-05T15:10:09Z"));
        assert_eq!(notice.says, Says::Leaving);
        assert!(notice.detail.contains("RETIREMENT"), "{}", notice.detail);
    }

    #[test]
    fn a_start_time_in_rfc_3339_is_read_too() {
        let text = DOCUMENTED.replace("Sat, 05 Jun 2021 15:10:09 GMT", "2021-06-05T15:10:09+02:00");
        assert_eq!(parse(&text).unwrap().at, time("2021-06-05T13:10:09Z"));
        // The day of the week is not checked: 5 June 2021 was a Saturday.
        let sunday = DOCUMENTED.replace("Sat, 05 Jun", "Sun, 05 Jun");
        assert_eq!(parse(&sunday).unwrap().at, time("2021-06-05T15:10:09Z"));
        let bad = DOCUMENTED.replace("Sat, 05 Jun 2021 15:10:09 GMT", "soon");
        let error = parse(&bad).unwrap_err();
        assert!(error.to_string().contains("startTime"), "{error}");
    }

    #[test]
    fn other_services_and_categories_are_refused() {
        let issue = DOCUMENTED.replace("scheduledChange", "issue");
        assert!(
            parse(&issue)
                .unwrap_err()
                .to_string()
                .contains("eventTypeCategory")
        );
        let rds = DOCUMENTED.replace(r#""service": "EC2""#, r#""service": "RDS""#);
        let error = parse(&rds).unwrap_err();
        assert_eq!(error.kind(), "scheduledEvent");
        assert!(error.to_string().contains("RDS"), "{error}");
    }

    #[test]
    fn an_event_naming_no_instance_is_refused() {
        let text = DOCUMENTED
            .replace(r#""resources": ["i-abcd1111"]"#, r#""resources": []"#)
            .replace(
                r#"[{"entityValue": "i-abcd1111", "tags": {"stage": "prod"}},
                                 {"entityValue": "i-abcd2222"}]"#,
                "[]",
            );
        let error = parse(&text).unwrap_err();
        assert!(error.to_string().contains("no instance"), "{error}");
    }

    #[test]
    fn what_is_not_an_instance_is_skipped_and_the_instances_taken() {
        // A scheduled change naming a volume and a Dedicated Host beside two instances, and the host's ARN.
        let text = DOCUMENTED
            .replace(
                r#""resources": ["i-abcd1111"]"#,
                r#""resources": ["arn:aws:ec2:us-east-1:123456789012:dedicated-host/h-0123456789abcdef0",
                                 "i-0123456789abcdef0"]"#,
            )
            .replace(
                r#"{"entityValue": "i-abcd2222"}"#,
                r#"{"entityValue": "vol-0123456789abcdef0"}, {"entityValue": "h-0123456789abcdef0"},
                   {"entityValue": "i-abcd2222"}"#,
            );
        let notice = parse(&text).unwrap();
        assert_eq!(
            notice.instances,
            ["i-abcd1111", "i-abcd2222", "i-0123456789abcdef0"]
        );
        // Nothing but a volume: no instance, refused.
        let volume = DOCUMENTED
            .replace(r#""resources": ["i-abcd1111"]"#, r#""resources": []"#)
            .replace(
                r#"[{"entityValue": "i-abcd1111", "tags": {"stage": "prod"}},
                                 {"entityValue": "i-abcd2222"}]"#,
                r#"[{"entityValue": "vol-0123456789abcdef0"}]"#,
            );
        let error = parse(&volume).unwrap_err();
        assert!(error.to_string().contains("no instance"), "{error}");
    }

    #[test]
    fn a_reboot_or_maintenance_ends_at_its_end_time_a_retirement_never() {
        let reboot = DOCUMENTED
            .replace(
                "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
                "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
            )
            .replace(
                r#""startTime": "Sat, 05 Jun 2021 15:10:09 GMT","#,
                r#""startTime": "Sat, 05 Jun 2021 15:10:09 GMT",
                   "endTime": "Sat, 05 Jun 2021 17:10:09 GMT","#,
            );
        let notice = parse(&reboot).unwrap();
        assert_eq!(notice.until, Some(time("2021-06-05T17:10:09Z")));
        let maintenance = reboot.replace(
            "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
            "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED",
        );
        assert_eq!(
            parse(&maintenance).unwrap().until,
            Some(time("2021-06-05T17:10:09Z"))
        );
        // A retirement takes the instance out of its group: it ends when the instance has left.
        let retirement = reboot.replace(
            "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
            "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
        );
        assert_eq!(parse(&retirement).unwrap().until, None);
        // A reboot with no endTime: until the instance leaves, as a retirement.
        assert_eq!(
            parse(&DOCUMENTED.replace("RETIREMENT", "REBOOT_MAINTENANCE"))
                .unwrap()
                .until,
            None
        );
        let bad = reboot.replace("Sat, 05 Jun 2021 17:10:09 GMT", "later");
        let error = parse(&bad).unwrap_err();
        assert!(error.to_string().contains("detail.endTime"), "{error}");
        let backwards = reboot.replace(
            "Sat, 05 Jun 2021 17:10:09 GMT",
            "Sat, 05 Jun 2021 14:10:09 GMT",
        );
        let error = parse(&backwards).unwrap_err();
        assert!(error.to_string().contains("before startTime"), "{error}");
    }
}
