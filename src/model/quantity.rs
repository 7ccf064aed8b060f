//! Kubernetes' `resource.Quantity` read exactly: what pods request, what devices offer, what CEL selectors
//! compare. Comparisons are by value (`1Gi` equals `1024Mi`).

/// A parsed quantity, in thousandths of its unit (millicores for CPU, millibytes for memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    millis: i128,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid quantity {0:?}: expected a number with an optional suffix such as 500m, 2, 1.5Gi or 1e3"
)]
pub struct QuantityError(pub String);

impl Quantity {
    /// A quantity of `millis` thousandths of its unit.
    pub fn from_millis(millis: i128) -> Quantity {
        Quantity { millis }
    }

    /// Thousandths of the unit, rounded up as Kubernetes' `MilliValue` does.
    pub fn millis(self) -> i128 {
        self.millis
    }

    /// Whole units, rounded up as Kubernetes' `Value` does.
    pub fn value(self) -> i128 {
        self.millis.div_euclid(1000) + i128::from(self.millis.rem_euclid(1000) != 0)
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;

    /// Parses Kubernetes' quantity grammar: a signed decimal number, then a binary-SI suffix (Ki..Ei),
    /// a decimal-SI suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (e3, E-2).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || QuantityError(text.to_string());
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(err());
        }
        // The number as mantissa * 10^exp10, then the suffix as 2^exp2 or 10^exp10.
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return Err(err());
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| err())?
        };
        let mut exp10 = -(fraction.len() as i32);
        let mut exp2 = 0u32;
        match suffix {
            "" => {}
            "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
                exp2 = 10 * (1 + "KMGTPE".find(&suffix[..1]).ok_or_else(err)? as u32);
            }
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            _ if suffix.starts_with(['e', 'E']) => {
                let exponent: i32 = suffix[1..].parse().map_err(|_| err())?;
                if suffix.len() < 2 || exponent.abs() > 30 {
                    return Err(err());
                }
                exp10 += exponent;
            }
            _ => return Err(err()),
        }
        let scaled = mantissa
            .checked_mul(1i128.checked_shl(exp2).ok_or_else(err)?)
            .ok_or_else(err)?;
        let exp10 = exp10 + 3; // to thousandths
        let millis = if exp10 >= 0 {
            scaled
                .checked_mul(10i128.checked_pow(exp10 as u32).ok_or_else(err)?)
                .ok_or_else(err)?
        } else {
            let divisor = 10i128.checked_pow(exp10.unsigned_abs()).ok_or_else(err)?;
            scaled / divisor + i128::from(scaled % divisor != 0)
        };
        Ok(Quantity {
            millis: if negative { -millis } else { millis },
        })
    }
}

#[cfg(test)]
mod parse_tests {
    use super::Quantity;

    fn millis(text: &str) -> i128 {
        text.parse::<Quantity>().unwrap().millis()
    }

    #[test]
    fn parses_every_suffix_family() {
        assert_eq!(millis("500m"), 500);
        assert_eq!(millis("2"), 2000);
        assert_eq!(millis("1.5"), 1500);
        assert_eq!(millis("0.1"), 100);
        assert_eq!(millis("1Ki"), 1024 * 1000);
        assert_eq!(millis("64Gi"), (64i128 << 30) * 1000);
        assert_eq!(millis("1.5Gi"), (3i128 << 29) * 1000);
        assert_eq!(millis("1k"), 1_000_000);
        assert_eq!(millis("1M"), 1_000_000_000);
        assert_eq!(millis("1e3"), 1_000_000);
        assert_eq!(millis("1E-3"), 1);
        assert_eq!(millis("100u"), 1, "rounded up");
        assert_eq!(millis("-1"), -1000);
        assert_eq!(millis("+.5"), 500);
    }

    #[test]
    fn value_rounds_up() {
        assert_eq!("1500m".parse::<Quantity>().unwrap().value(), 2);
        assert_eq!("110".parse::<Quantity>().unwrap().value(), 110);
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        for bad in [
            "", "m", "1.2.3", "1Gb", "1 Gi", "1e", "abc", "--1", "1ee3", ".", "1Zi",
        ] {
            assert!(
                bad.parse::<Quantity>().is_err(),
                "{bad:?} should be rejected"
            );
        }
    }
}
