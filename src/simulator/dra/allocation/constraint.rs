//! `matchAttribute` constraints while the search adds and removes devices (`matchAttributeConstraint`):
//! the first device of the named requests fixes the attribute's value, the others must have the same type
//! and value, and a device without the attribute breaks it.

use crate::model::{AttrValue, Device, MatchAttribute};

pub(crate) struct ConstraintState<'a> {
    constraint: &'a MatchAttribute,
    value: Option<AttrValue>,
    devices: usize,
}

impl<'a> ConstraintState<'a> {
    pub(crate) fn new(constraint: &'a MatchAttribute) -> ConstraintState<'a> {
        ConstraintState {
            constraint,
            value: None,
            devices: 0,
        }
    }

    /// Whether the constraint covers request `request` (sub-request `sub`, empty for `exactly`).
    fn covers(&self, request: &str, sub: &str) -> bool {
        let names = &self.constraint.requests;
        names.is_empty()
            || names.iter().any(|n| {
                **n == *request || (!sub.is_empty() && n.split_once('/') == Some((request, sub)))
            })
    }

    /// Adds a device of `request`: `Some(true)` when added, `Some(false)` when it breaks the constraint,
    /// `None` when the constraint does not cover the request (nothing to undo).
    pub(crate) fn add(&mut self, request: &str, sub: &str, device: &Device) -> Option<bool> {
        if !self.covers(request, sub) {
            return None;
        }
        // Unqualified names are already in the driver's domain in the model, so the lookup by the fully
        // qualified name also finds the bare id of the driver's own attributes.
        let Some(value) = device.attributes.get(&self.constraint.attribute) else {
            return Some(false);
        };
        match &self.value {
            Some(fixed) if fixed != value => return Some(false),
            Some(_) => {}
            None => self.value = Some(value.clone()),
        }
        self.devices += 1;
        Some(true)
    }

    /// Undoes one `add` that returned `Some(true)`.
    pub(crate) fn remove(&mut self) {
        self.devices -= 1;
        if self.devices == 0 {
            self.value = None;
        }
    }
}
