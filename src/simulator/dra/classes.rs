//! DeviceClasses by name, with their selectors compiled once, and the selector sets of the asks that name
//! them: a class's selectors then the ask's own, interned so that a device remembers its verdict per set.
//! Built again only when the classes change, and then with the expressions compiled before kept.

use crate::model::{Device, DeviceAsk, DeviceClass, FastMap, Name};
use crate::simulator::dra::cel::device_value::{DeviceValue, NoDeviceValue};
use crate::simulator::dra::cel::selector::{CompileCache, CompiledSelector, SelectorError};
use std::sync::{Arc, Mutex};

/// An ask's selectors by its class and its own expressions.
type SetKey = (Name, Vec<Name>);

/// The cluster's DeviceClasses, ready to select devices.
#[derive(Debug, Default)]
pub struct DeviceClasses {
    classes: FastMap<Name, (Arc<DeviceClass>, Vec<Arc<CompiledSelector>>)>,
    /// The classes as given: what a later loop's must equal to keep these.
    sources: Vec<Arc<DeviceClass>>,
    cache: CompileCache,
    sets: Mutex<FastMap<SetKey, Arc<SelectorSet>>>,
}

/// A selector failed on a device: in the class's selectors or the request's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SelectorFailure {
    pub(crate) error: SelectorError,
    pub(crate) in_class: bool,
}

/// Everything a device must pass for one ask (class selectors first, as the allocator evaluates them).
#[derive(Debug)]
pub(crate) struct SelectorSet {
    pub(crate) class: Name,
    class_selectors: Vec<Arc<CompiledSelector>>,
    request_selectors: Vec<Arc<CompiledSelector>>,
}

impl SelectorSet {
    /// All must be true; the first false or failing one decides.
    pub(crate) fn matches(
        &self,
        device: &Result<DeviceValue, NoDeviceValue>,
    ) -> Result<bool, SelectorFailure> {
        for (selectors, in_class) in [
            (&self.class_selectors, true),
            (&self.request_selectors, false),
        ] {
            for selector in selectors {
                match selector.matches(device) {
                    Ok(true) => {}
                    Ok(false) => return Ok(false),
                    Err(error) => return Err(SelectorFailure { error, in_class }),
                }
            }
        }
        Ok(true)
    }

    /// Whether `other` selects by the same expressions (what a device's cached verdict may be reused for).
    pub(crate) fn same_as(&self, other: &SelectorSet) -> bool {
        let same = |a: &[Arc<CompiledSelector>], b: &[Arc<CompiledSelector>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.expression == y.expression)
        };
        std::ptr::eq(self, other)
            || (same(&self.class_selectors, &other.class_selectors)
                && same(&self.request_selectors, &other.request_selectors))
    }
}

impl DeviceClasses {
    pub fn new(classes: &[Arc<DeviceClass>]) -> DeviceClasses {
        DeviceClasses::reusing(classes, None)
    }

    /// The classes, with the expressions `last` (an earlier loop's classes) compiled taken from it.
    pub fn reusing(classes: &[Arc<DeviceClass>], last: Option<&DeviceClasses>) -> DeviceClasses {
        let cache = last.map(|l| l.cache.carried()).unwrap_or_default();
        let sources = classes.to_vec();
        let classes = (classes.iter())
            .map(|class| {
                let compiled = class.selectors.iter().map(|s| cache.get(s)).collect();
                (class.name.clone(), (class.clone(), compiled))
            })
            .collect();
        DeviceClasses {
            classes,
            sources,
            cache,
            sets: Mutex::default(),
        }
    }

    /// Whether these were made from `classes` (the same objects, or equal ones): then they serve as they
    /// are, selector sets and all.
    pub fn made_from(&self, classes: &[Arc<DeviceClass>]) -> bool {
        self.sources.len() == classes.len()
            && (self.sources.iter().zip(classes)).all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<DeviceClass>> {
        self.classes.get(name).map(|(class, _)| class)
    }

    /// Selectors of classes that do not compile, by class: a class that can select nothing.
    pub fn compile_errors(&self) -> Vec<(Name, SelectorError)> {
        let mut errors: Vec<(Name, SelectorError)> = (self.classes.iter())
            .flat_map(|(name, (_, compiled))| {
                compiled
                    .iter()
                    .filter_map(move |c| c.compile_error().map(|error| (name.clone(), error)))
            })
            .collect();
        errors.sort_by(|a, b| a.0.cmp(&b.0));
        errors
    }

    /// Whether `device` of `driver` passes the selectors of `ask`'s class and its own (false when the class
    /// does not exist or a selector fails on it): CEL alone, for an allocator written elsewhere that has
    /// no CEL of its own (the plain one the simulated cluster's scheduler and the tests use).
    pub fn selects(&self, ask: &DeviceAsk, driver: &str, device: &Device) -> bool {
        let Some(set) = self.selector_set(&ask.class, &ask.selectors) else {
            return false;
        };
        set.matches(&DeviceValue::new(driver, device)) == Ok(true)
    }

    /// The selectors of an ask of `class` with its own `selectors`; `None` when no such class exists.
    pub(crate) fn selector_set(
        &self,
        class: &Name,
        selectors: &[Name],
    ) -> Option<Arc<SelectorSet>> {
        let (_, class_selectors) = self.classes.get(class)?;
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        let key = (class.clone(), selectors.to_vec());
        if let Some(found) = sets.get(&key) {
            return Some(found.clone());
        }
        let set = Arc::new(SelectorSet {
            class: class.clone(),
            class_selectors: class_selectors.clone(),
            request_selectors: selectors.iter().map(|s| self.cache.get(s)).collect(),
        });
        sets.insert(key, set.clone());
        Some(set)
    }
}
