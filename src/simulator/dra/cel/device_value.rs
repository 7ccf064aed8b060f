//! The `device` variable of DRA selectors (dynamic-resource-allocation `cel/compile.go`): `driver`,
//! `attributes` and `capacity` as maps of domain to map of id to value, where a domain the device does not
//! have reads as an empty map (so `device.attributes["other.io"].size() == 0` holds, and only a missing id
//! inside a domain is a "no such key" error). Built once per device and borrowed by each evaluation.

use super::cel_library::{
    InvalidSemver, SemverReading, parse_semver, quantity_value, semver_value,
};
use crate::model::{AttrValue, Device, Name};
use cel::ExecutionError;
use cel::Value;
use cel::common::traits::Indexer;
use cel::common::types::{CelString, MAP_TYPE, Type};
use cel::common::value::{CowVal, Val};
use std::collections::HashMap;

/// `device.attributes` or `device.capacity`.
#[derive(Debug)]
struct DomainMap {
    domains: HashMap<String, Box<dyn Val>>,
    empty: Box<dyn Val>,
}

/// Why a device has no CEL value, which fails every selector that gets as far as reading it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoDeviceValue {
    /// A field CEL cannot hold (the conversion's error, as it prints itself).
    #[error("cannot represent a device field in CEL: {0}")]
    Unrepresentable(String),
    /// A version attribute that is not strict semver, as Kubernetes fails converting it.
    #[error("attribute {attribute} of device {device:?}: {source}")]
    Version {
        attribute: String,
        device: Name,
        source: InvalidSemver,
    },
}

fn boxed(value: Value) -> Result<Box<dyn Val>, NoDeviceValue> {
    value
        .try_into()
        .map_err(|e| NoDeviceValue::Unrepresentable(format!("{e:?}")))
}

impl DomainMap {
    fn new(domains: HashMap<String, HashMap<String, Value>>) -> Result<DomainMap, NoDeviceValue> {
        let mut built = HashMap::with_capacity(domains.len());
        for (domain, inner) in domains {
            built.insert(domain, boxed(Value::Map(inner.into()))?);
        }
        Ok(DomainMap {
            domains: built,
            empty: boxed(Value::Map(HashMap::<String, Value>::new().into()))?,
        })
    }

    fn deep_clone(&self) -> DomainMap {
        DomainMap {
            domains: (self.domains.iter())
                .map(|(k, v)| (k.clone(), v.clone_as_boxed()))
                .collect(),
            empty: self.empty.clone_as_boxed(),
        }
    }
}

impl Val for DomainMap {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(self.deep_clone())
    }
}

impl Indexer for DomainMap {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let key =
            idx.downcast_ref::<CelString>()
                .ok_or_else(|| ExecutionError::UnexpectedType {
                    got: format!("{:?}", idx.get_type()),
                    want: "string".into(),
                })?;
        let found = self.domains.get(key.inner()).unwrap_or(&self.empty);
        Ok(CowVal::Borrowed(found.as_ref()))
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// One device as selectors see it.
#[derive(Debug)]
pub(crate) struct DeviceValue {
    driver: Box<dyn Val>,
    attributes: DomainMap,
    capacity: DomainMap,
}

impl DeviceValue {
    /// The device of `driver`'s slice. A version attribute that is not strict semver makes every selector on
    /// this device fail, as Kubernetes fails converting it.
    pub(crate) fn new(driver: &str, device: &Device) -> Result<DeviceValue, NoDeviceValue> {
        let mut attributes: HashMap<String, HashMap<String, Value>> = HashMap::new();
        for (name, value) in &device.attributes {
            let value = match value {
                AttrValue::Int(n) => Value::Int(*n),
                AttrValue::Bool(b) => Value::Bool(*b),
                AttrValue::Str(s) => Value::from(s.as_ref()),
                AttrValue::Version(v) => {
                    let version = parse_semver(v, SemverReading::Strict).map_err(|source| {
                        NoDeviceValue::Version {
                            attribute: format!("{}/{}", name.domain, name.id),
                            device: device.name.clone(),
                            source,
                        }
                    })?;
                    semver_value(version)
                }
            };
            (attributes.entry(name.domain.to_string()).or_default())
                .insert(name.id.to_string(), value);
        }
        let mut capacity: HashMap<String, HashMap<String, Value>> = HashMap::new();
        for (name, q) in &device.capacity {
            (capacity.entry(name.domain.to_string()).or_default())
                .insert(name.id.to_string(), quantity_value(*q));
        }
        Ok(DeviceValue {
            driver: boxed(Value::from(driver))?,
            attributes: DomainMap::new(attributes)?,
            capacity: DomainMap::new(capacity)?,
        })
    }
}

impl Val for DeviceValue {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(DeviceValue {
            driver: self.driver.clone_as_boxed(),
            attributes: self.attributes.deep_clone(),
            capacity: self.capacity.deep_clone(),
        })
    }
}

impl Indexer for DeviceValue {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let key = idx.downcast_ref::<CelString>().map(|s| s.inner());
        match key {
            Some("driver") => Ok(CowVal::Borrowed(self.driver.as_ref())),
            Some("attributes") => Ok(CowVal::Borrowed(&self.attributes)),
            Some("capacity") => Ok(CowVal::Borrowed(&self.capacity)),
            Some(other) => Err(ExecutionError::no_such_key(other)),
            None => Err(ExecutionError::UnexpectedType {
                got: format!("{:?}", idx.get_type()),
                want: "string".into(),
            }),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// Binds a device built once into an evaluation's scope without copying it.
#[derive(Debug)]
pub(crate) struct DeviceRef<'a>(pub &'a DeviceValue);

impl Val for DeviceRef<'_> {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self.0)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(DeviceRef(self.0))
    }
}
