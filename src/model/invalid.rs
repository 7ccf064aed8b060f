//! Why a value read from outside (an object's field, a flag's text) breaks a rule: the one validation error
//! every reader returns, so that a message always names the field and what it must be.

use std::fmt;

/// A field that breaks a rule. `field` is the path as the user wrote it (`spec.limits.cpu`, `--flag`), empty
/// when the whole value is meant; `rule` says what the value must be or what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Invalid {
    pub field: String,
    pub rule: String,
}

impl Invalid {
    /// `field` breaks `rule`.
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> Invalid {
        Invalid {
            field: field.into(),
            rule: rule.into(),
        }
    }

    /// The whole value breaks `rule` (no field to name).
    pub fn value(rule: impl Into<String>) -> Invalid {
        Invalid::new("", rule)
    }

    /// The same rule, found inside `outer`: the field's path gets `outer` in front (`spec` + `limits` ->
    /// `spec.limits`), so a reader several levels down still names the whole path.
    pub fn within(self, outer: &str) -> Invalid {
        let field = match (outer.is_empty(), self.field.is_empty()) {
            (true, _) => self.field,
            (false, true) => outer.to_string(),
            (false, false) if self.field.starts_with('[') => format!("{outer}{}", self.field),
            (false, false) => format!("{outer}.{}", self.field),
        };
        Invalid { field, ..self }
    }

    /// The same rule, found under a named part (`device "gpu-0"`) that the message sets apart with a colon:
    /// `device "gpu-0": capacity "memory": ...`, as the readers of wire formats say it.
    pub fn under(self, outer: &str) -> Invalid {
        let field = match (outer.is_empty(), self.field.is_empty()) {
            (true, _) => self.field,
            (false, true) => outer.to_string(),
            (false, false) => format!("{outer}: {}", self.field),
        };
        Invalid { field, ..self }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.rule)
        } else {
            write!(f, "{}: {}", self.field, self.rule)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Invalid;

    #[test]
    fn the_message_names_the_whole_path() {
        let inner = Invalid::new("cpu", "must be a quantity");
        assert_eq!(inner.to_string(), "cpu: must be a quantity");
        let outer = inner.within("limits").within("spec");
        assert_eq!(outer.to_string(), "spec.limits.cpu: must be a quantity");
        assert_eq!(
            Invalid::new("[2]", "empty").within("items").to_string(),
            "items[2]: empty"
        );
        assert_eq!(Invalid::value("not a map").to_string(), "not a map");
        assert_eq!(
            Invalid::value("not a map").within("spec").to_string(),
            "spec: not a map"
        );
        assert_eq!(
            Invalid::new("capacity \"m\"", "bad")
                .under("device \"d\"")
                .to_string(),
            "device \"d\": capacity \"m\": bad"
        );
    }
}
