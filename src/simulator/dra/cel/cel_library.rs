//! Kubernetes' CEL libraries for quantities and semantic versions (apiserver `pkg/cel/library/quantity.go`
//! and `semverlib.go`), as DRA selectors call them: `quantity("20Gi").compareTo(...)`,
//! `semver("550.0.0").isLessThan(...)`. Both are opaque values: `==` is semantic (`1Gi == 1024Mi`, build
//! metadata ignored), and there is no `<` on them, as in Kubernetes.

use crate::model::Quantity;
use cel::extractors::{Arguments, This};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};
use std::cmp::Ordering;
use std::sync::Arc;

/// A `kubernetes.Quantity` in CEL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CelQuantity(pub Quantity);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// A `kubernetes.Semver` in CEL: equal when equal in precedence (build metadata ignored, as blang/semver's
/// `EQ`).
#[derive(Clone, Debug)]
pub(crate) struct CelSemver(pub semver::Version);

impl PartialEq for CelSemver {
    fn eq(&self, other: &Self) -> bool {
        self.0.cmp_precedence(&other.0).is_eq()
    }
}

impl Eq for CelSemver {}

impl Opaque for CelSemver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

/// How a version is read: strictly (semver 2.0.0, as blang/semver's `Parse`), or normalized first (a
/// leading `v` dropped, missing minor and patch added, leading zeros dropped), as `semver(s, true)` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SemverReading {
    Strict,
    Normalized,
}

/// A text that is not a semantic version (after normalizing, when asked).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid semver {text:?}: {reason}")]
pub(crate) struct InvalidSemver {
    pub(crate) text: String,
    pub(crate) reason: String,
}

/// A version attribute or `semver()` argument, read as `reading` says.
pub(crate) fn parse_semver(text: &str, reading: SemverReading) -> Result<CelSemver, InvalidSemver> {
    let normalized;
    let text = match reading {
        SemverReading::Normalized => {
            normalized = normalize_semver(text);
            normalized.as_str()
        }
        SemverReading::Strict => text,
    };
    semver::Version::parse(text)
        .map(CelSemver)
        .map_err(|e| InvalidSemver {
            text: text.to_string(),
            reason: e.to_string(),
        })
}

fn normalize_semver(text: &str) -> String {
    let text = text.strip_prefix('v').unwrap_or(text);
    let cut = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(cut);
    let mut parts: Vec<String> = core
        .split('.')
        .map(|p| {
            let trimmed = p.trim_start_matches('0');
            if trimmed.is_empty() && !p.is_empty() {
                "0".to_string()
            } else {
                trimmed.to_string()
            }
        })
        .collect();
    while parts.len() < 3 {
        parts.push("0".to_string());
    }
    format!("{}{rest}", parts.join("."))
}

fn as_quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<CelQuantity>().map(|q| q.0),
        _ => None,
    }
}

fn as_semver(value: &Value) -> Option<&CelSemver> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<CelSemver>(),
        _ => None,
    }
}

/// The order of two quantities or two versions; anything else has no such overload.
fn order(ftx: &FunctionContext, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    if let (Some(x), Some(y)) = (as_quantity(a), as_quantity(b)) {
        return Ok(x.cmp(&y));
    }
    if let (Some(x), Some(y)) = (as_semver(a), as_semver(b)) {
        return Ok(x.0.cmp_precedence(&y.0));
    }
    Err(ftx.error(format!(
        "no such overload: {} on {} and {}",
        ftx.name,
        type_name(a),
        type_name(b)
    )))
}

fn type_name(value: &Value) -> String {
    match value {
        Value::Opaque(o) => o.runtime_type_name().to_string(),
        Value::Int(_) => "int".to_string(),
        Value::UInt(_) => "uint".to_string(),
        Value::Float(_) => "double".to_string(),
        Value::String(_) => "string".to_string(),
        Value::Bool(_) => "bool".to_string(),
        Value::List(_) => "list".to_string(),
        Value::Map(_) => "map".to_string(),
        _ => "value".to_string(),
    }
}

/// `q.add(x)` / `q.sub(x)`: `x` a quantity or an integer (whole units).
fn arithmetic(ftx: &FunctionContext, q: &Value, x: &Value, sign: i128) -> ResolveResult {
    let q = as_quantity(q).ok_or_else(|| ftx.error("the receiver must be a quantity"))?;
    let x = match x {
        Value::Int(n) => i128::from(*n) * 1000,
        other => as_quantity(other)
            .ok_or_else(|| ftx.error("the argument must be a quantity or an int"))?
            .millis(),
    };
    let sum = q
        .millis()
        .checked_add(sign * x)
        .ok_or_else(|| ftx.error("quantity overflow"))?;
    Ok(quantity_value(Quantity::from_millis(sum)))
}

pub(crate) fn quantity_value(q: Quantity) -> Value {
    Value::Opaque(Arc::new(CelQuantity(q)))
}

pub(crate) fn semver_value(v: CelSemver) -> Value {
    Value::Opaque(Arc::new(v))
}

/// The integer value, if whole and within int64 (Kubernetes' `AsInt64`).
fn whole(q: Quantity) -> Option<i64> {
    (q.millis() % 1000 == 0)
        .then(|| i64::try_from(q.millis() / 1000).ok())
        .flatten()
}

/// `semver(s)` / `semver(s, normalize)` and `isSemver` take one or two arguments.
fn semver_args(
    ftx: &FunctionContext,
    args: &[Value],
) -> Result<(Arc<String>, SemverReading), ExecutionError> {
    match args {
        [Value::String(s)] => Ok((s.clone(), SemverReading::Strict)),
        [Value::String(s), Value::Bool(true)] => Ok((s.clone(), SemverReading::Normalized)),
        [Value::String(s), Value::Bool(false)] => Ok((s.clone(), SemverReading::Strict)),
        _ => Err(ftx.error("expects a string and an optional bool")),
    }
}

/// Registers the functions on the selectors' root context. Each is callable as `f(x)` and `x.f(y)`.
pub(crate) fn register(ctx: &mut Context<'static, 'static>) -> Result<(), cel::DeclarationError> {
    register_constructors(ctx)?;
    register_comparisons(ctx)?;
    register_quantity_methods(ctx)?;
    register_semver_parts(ctx)
}

/// `quantity()`, `isQuantity()`, `semver()`, `isSemver()`.
fn register_constructors(ctx: &mut Context<'static, 'static>) -> Result<(), cel::DeclarationError> {
    ctx.add_function(
        "quantity",
        |ftx: &FunctionContext, s: Arc<String>| -> ResolveResult {
            s.parse::<Quantity>()
                .map(quantity_value)
                .map_err(|e| ftx.error(e))
        },
    )?;
    ctx.add_function("isQuantity", |s: Arc<String>| s.parse::<Quantity>().is_ok())?;
    ctx.add_function(
        "semver",
        |ftx: &FunctionContext, Arguments(args): Arguments| -> ResolveResult {
            let (s, normalize) = semver_args(ftx, &args)?;
            parse_semver(&s, normalize)
                .map(semver_value)
                .map_err(|e| ftx.error(e))
        },
    )?;
    ctx.add_function(
        "isSemver",
        |ftx: &FunctionContext, Arguments(args): Arguments| -> ResolveResult {
            let (s, normalize) = semver_args(ftx, &args)?;
            Ok(Value::Bool(parse_semver(&s, normalize).is_ok()))
        },
    )?;
    Ok(())
}

/// `compareTo`, `isLessThan`, `isGreaterThan`, on quantities and versions alike.
fn register_comparisons(ctx: &mut Context<'static, 'static>) -> Result<(), cel::DeclarationError> {
    ctx.add_function(
        "compareTo",
        |ftx: &FunctionContext, This(a): This<Value>, b: Value| -> ResolveResult {
            Ok(Value::Int(order(ftx, &a, &b)? as i64))
        },
    )?;
    ctx.add_function(
        "isLessThan",
        |ftx: &FunctionContext, This(a): This<Value>, b: Value| -> ResolveResult {
            Ok(Value::Bool(order(ftx, &a, &b)?.is_lt()))
        },
    )?;
    ctx.add_function(
        "isGreaterThan",
        |ftx: &FunctionContext, This(a): This<Value>, b: Value| -> ResolveResult {
            Ok(Value::Bool(order(ftx, &a, &b)?.is_gt()))
        },
    )?;
    Ok(())
}

/// A quantity's `add`, `sub`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`.
fn register_quantity_methods(
    ctx: &mut Context<'static, 'static>,
) -> Result<(), cel::DeclarationError> {
    ctx.add_function(
        "add",
        |ftx: &FunctionContext, This(q): This<Value>, x: Value| arithmetic(ftx, &q, &x, 1),
    )?;
    ctx.add_function(
        "sub",
        |ftx: &FunctionContext, This(q): This<Value>, x: Value| arithmetic(ftx, &q, &x, -1),
    )?;
    ctx.add_function(
        "sign",
        |ftx: &FunctionContext, This(q): This<Value>| -> ResolveResult {
            let q = as_quantity(&q).ok_or_else(|| ftx.error("sign() needs a quantity"))?;
            Ok(Value::Int(q.millis().signum() as i64))
        },
    )?;
    ctx.add_function(
        "isInteger",
        |ftx: &FunctionContext, This(q): This<Value>| -> ResolveResult {
            let q = as_quantity(&q).ok_or_else(|| ftx.error("isInteger() needs a quantity"))?;
            Ok(Value::Bool(whole(q).is_some()))
        },
    )?;
    ctx.add_function(
        "asInteger",
        |ftx: &FunctionContext, This(q): This<Value>| -> ResolveResult {
            let q = as_quantity(&q).ok_or_else(|| ftx.error("asInteger() needs a quantity"))?;
            whole(q)
                .map(Value::Int)
                .ok_or_else(|| ftx.error("cannot convert value to integer"))
        },
    )?;
    ctx.add_function(
        "asApproximateFloat",
        |ftx: &FunctionContext, This(q): This<Value>| -> ResolveResult {
            let q = as_quantity(&q)
                .ok_or_else(|| ftx.error("asApproximateFloat() needs a quantity"))?;
            Ok(Value::Float(q.millis() as f64 / 1000.0))
        },
    )?;
    Ok(())
}

/// A version's `major`, `minor`, `patch`.
fn register_semver_parts(ctx: &mut Context<'static, 'static>) -> Result<(), cel::DeclarationError> {
    for (name, part) in [("major", 0usize), ("minor", 1), ("patch", 2)] {
        ctx.add_function(
            name,
            move |ftx: &FunctionContext, This(v): This<Value>| -> ResolveResult {
                let v = as_semver(&v).ok_or_else(|| ftx.error("needs a semver"))?;
                let n = [v.0.major, v.0.minor, v.0.patch][part];
                i64::try_from(n)
                    .map(Value::Int)
                    .map_err(|_| ftx.error("version part out of range"))
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_as_kubernetes_does() {
        assert_eq!(normalize_semver("v1.2"), "1.2.0");
        assert_eq!(normalize_semver("01.002.3-rc.1"), "1.2.3-rc.1");
        assert_eq!(normalize_semver("1"), "1.0.0");
        assert!(
            parse_semver("1.2", SemverReading::Strict).is_err(),
            "strict without normalize"
        );
        assert!(parse_semver("v1.2", SemverReading::Normalized).is_ok());
    }

    #[test]
    fn versions_equal_in_precedence_are_equal() {
        let a = parse_semver("1.2.3+build.1", SemverReading::Strict).unwrap();
        let b = parse_semver("1.2.3+build.2", SemverReading::Strict).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, parse_semver("1.2.4", SemverReading::Strict).unwrap());
    }
}
