//! Durations as Karpenter writes them (`720h`, `8h30m`, `90s`): whole numbers of hours, minutes and seconds,
//! Karpenter's pattern `^([0-9]+(s|m|h))+$`. A tiny strict parser rather than humantime, which also takes
//! `2 days`, `1.5h` and `30min`: a disruption document should read the same here as in a NodePool, and a
//! typo should be refused, not read as something else.

use std::time::Duration;

/// The longest duration taken: a hundred years. Longer is surely a typo (expiry that long is `Never`), and
/// the bound keeps a creation time plus the duration, and a window's end, inside every calendar jiff and
/// `SystemTime` can hold.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error(
        "{0:?} is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"
    )]
    Syntax(String),
    #[error("{0:?} is longer than 100 years")]
    TooLong(String),
}

/// Parses `720h`, `8h30m`, `90s`, `1h0m0s`. Units may repeat and come in any order, as Karpenter's pattern
/// and Go's `time.ParseDuration` allow; there are no fractions, no days and no spaces.
pub(crate) fn parse(text: &str) -> Result<Duration, DurationError> {
    let syntax = || DurationError::Syntax(text.to_string());
    let too_long = || DurationError::TooLong(text.to_string());
    if text.is_empty() {
        return Err(syntax());
    }
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for c in text.chars() {
        if let Some(digit) = c.to_digit(10) {
            let n = number.unwrap_or(0);
            number = Some(
                n.checked_mul(10)
                    .and_then(|n| n.checked_add(u64::from(digit)))
                    .ok_or_else(too_long)?,
            );
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(syntax()),
        };
        let n = number.take().ok_or_else(syntax)?;
        total = n
            .checked_mul(unit)
            .and_then(|seconds| total.checked_add(seconds))
            .ok_or_else(too_long)?;
    }
    if number.is_some() {
        return Err(syntax()); // a number without its unit, as `30`
    }
    let duration = Duration::from_secs(total);
    if duration > LONGEST {
        return Err(too_long());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3600;

    #[test]
    fn reads_karpenters_durations() {
        for (text, seconds) in [
            ("720h", 720 * H),
            ("8h30m", 8 * H + 30 * 60),
            ("90s", 90),
            ("30m", 30 * 60),
            ("1h0m0s", H), // as Kubernetes prints a metav1.Duration
            ("0s", 0),
            ("30m1h", H + 30 * 60), // any order, as Go's time.ParseDuration
            ("876000h", 876_000 * H),
        ] {
            assert_eq!(parse(text), Ok(Duration::from_secs(seconds)), "{text}");
        }
    }

    #[test]
    fn refuses_anything_else_naming_the_text() {
        for text in [
            "", "30", "h", "1.5h", "1d", "2 days", "8h 30m", "-1h", "30min", "1ms", "Never", " 1h",
        ] {
            assert_eq!(
                parse(text),
                Err(DurationError::Syntax(text.into())),
                "{text:?}"
            );
        }
        assert_eq!(
            parse("30").unwrap_err().to_string(),
            r#""30" is not a duration: write whole hours, minutes and seconds, as 720h, 8h30m or 90s"#
        );
    }

    #[test]
    fn refuses_more_than_a_hundred_years_and_numbers_that_overflow() {
        for text in ["876001h", "99999999999999999999h", "9999999999999999h"] {
            assert_eq!(
                parse(text),
                Err(DurationError::TooLong(text.into())),
                "{text}"
            );
        }
        assert_eq!(
            parse("876001h").unwrap_err().to_string(),
            r#""876001h" is longer than 100 years"#
        );
    }
}
