//! CEL selectors of DeviceClasses and requests: compiled once per distinct expression (as the scheduler's
//! `cel.Cache`), evaluated against a device with Kubernetes' libraries (strings, quantity, semver,
//! `cel.bind`). A compile error, a runtime error or a result that is not a bool is a [`SelectorError`]
//! naming the expression, never a panic.

use super::device_value::{DeviceRef, DeviceValue, NoDeviceValue};
use super::{cel_library, cel_regex};
use crate::model::{FastMap, Name};
use cel::{Context, Env, Program, Value};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock, Mutex};

/// `CELSelectorExpressionMaxLength`: longer expressions are refused, as the API server refuses them.
const MAX_EXPRESSION_LEN: usize = 10 * 1024;

/// What went wrong with one selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    pub expression: Name,
    pub kind: SelectorErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorErrorKind {
    Compile,
    Runtime,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            SelectorErrorKind::Compile => "compile",
            SelectorErrorKind::Runtime => "runtime",
        };
        write!(
            f,
            "selector {:?}: CEL {kind} error: {}",
            self.expression, self.message
        )
    }
}

/// One expression, compiled (or why it does not compile).
#[derive(Debug)]
pub(crate) struct CompiledSelector {
    pub(crate) expression: Name,
    program: Result<Program, NotCompiled>,
}

/// Why an expression does not compile.
#[derive(Debug, thiserror::Error)]
enum NotCompiled {
    #[error("expression is {0} bytes, longer than the limit of {MAX_EXPRESSION_LEN}")]
    TooLong(usize),
    #[error("the CEL parser failed on this expression")]
    ParserFailed,
    /// The parser's own message.
    #[error("{0}")]
    Parse(String),
}

impl CompiledSelector {
    fn new(expression: Name) -> CompiledSelector {
        let program = if expression.len() > MAX_EXPRESSION_LEN {
            Err(NotCompiled::TooLong(expression.len()))
        } else {
            catch_unwind(|| ENV.compile(&expression))
                .map_err(|_| NotCompiled::ParserFailed)
                .and_then(|r| r.map_err(|e| NotCompiled::Parse(e.to_string())))
        };
        CompiledSelector {
            expression,
            program,
        }
    }

    pub(crate) fn compile_error(&self) -> Option<SelectorError> {
        (self.program.as_ref().err()).map(|e| self.error(SelectorErrorKind::Compile, e.to_string()))
    }

    fn error(&self, kind: SelectorErrorKind, message: String) -> SelectorError {
        SelectorError {
            expression: self.expression.clone(),
            kind,
            message,
        }
    }

    /// Whether `device` passes. `device` is the device's CEL value, or why it has none (a version attribute
    /// that is not semver), which fails every selector that gets this far.
    pub(crate) fn matches(
        &self,
        device: &Result<DeviceValue, NoDeviceValue>,
    ) -> Result<bool, SelectorError> {
        let program = (self.program.as_ref())
            .map_err(|e| self.error(SelectorErrorKind::Compile, e.to_string()))?;
        let device =
            (device.as_ref()).map_err(|e| self.error(SelectorErrorKind::Runtime, e.to_string()))?;
        let run = || {
            let mut scope = ROOT.new_inner_scope();
            scope.add_variable_as_val("device", Box::new(DeviceRef(device)));
            program.execute(&scope)
        };
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(Ok(Value::Bool(b))) => Ok(b),
            Ok(Ok(other)) => Err(self.error(
                SelectorErrorKind::Runtime,
                format!("the result {other:?} could not be converted to bool"),
            )),
            Ok(Err(e)) => Err(self.error(
                SelectorErrorKind::Runtime,
                format!(
                    "{e} (consider using CEL optional chaining (.? followed by orValue()) or \
                     guarding the check with has())"
                ),
            )),
            Err(_) => Err(self.error(
                SelectorErrorKind::Runtime,
                "the CEL interpreter failed on this expression".to_string(),
            )),
        }
    }
}

/// Compiled expressions by their text, shared by classes' and claims' selectors.
#[derive(Debug, Default)]
pub(crate) struct CompileCache {
    programs: Mutex<FastMap<Name, Arc<CompiledSelector>>>,
}

/// Expressions a cache carries into the next loop's: claims' selectors come and go, so past this many
/// the next loop starts afresh rather than keep every expression ever seen.
const CARRIED_MAX: usize = 1024;

impl CompileCache {
    /// A cache for the next loop's classes, with what this one compiled (unless it grew past
    /// [`CARRIED_MAX`]).
    pub(crate) fn carried(&self) -> CompileCache {
        let programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        CompileCache {
            programs: Mutex::new(match programs.len() <= CARRIED_MAX {
                true => programs.clone(),
                false => FastMap::default(),
            }),
        }
    }

    pub(crate) fn get(&self, expression: &Name) -> Arc<CompiledSelector> {
        let mut programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = programs.get(expression) {
            return found.clone();
        }
        let compiled = Arc::new(CompiledSelector::new(expression.clone()));
        programs.insert(expression.clone(), compiled.clone());
        compiled
    }
}

/// The environment: the standard library, `matches()` with its patterns compiled once, the strings
/// extension (`lowerAscii`, `upperAscii`, ...) and `cel.bind`, as Kubernetes' base environment has them.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    env.add_extension(cel_regex::library)
        .expect("matches() registers on the standard library without cel's regex feature");
    env.add_extension(cel::extensions::strings)
        .expect("the strings extension registers on the standard library");
    env.add_macro(cel_bind_macro())
        .expect("cel.bind registers on the standard library");
    Arc::new(env)
});

/// The root context every evaluation's scope borrows: Kubernetes' quantity and semver functions.
static ROOT: LazyLock<Context<'static, 'static>> = LazyLock::new(|| {
    let mut ctx = Context::with_env(ENV.clone());
    cel_library::register(&mut ctx).expect("the quantity and semver functions register");
    ctx
});

/// `cel.bind(var, init, result)` (cel-go's ext.Bindings): a comprehension over no elements whose
/// accumulator is `var`, as cel-go expands it.
fn cel_bind_macro() -> cel::parser::Macro {
    use cel::common::ast::{ComprehensionExpr, Expr, ListExpr, LiteralValue};
    cel::parser::Macro::receiver("bind", 3, |helper, target, args| {
        // Only `cel.bind(..)`: any other receiver is left alone.
        if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
            return Ok(None);
        }
        let var = match &args[0].expr {
            Expr::Ident(name) => name.clone(),
            _ => {
                return Err(helper.new_error(
                    args[0].id,
                    "cel.bind() variable name must be a simple identifier",
                ));
            }
        };
        let (Some(result), Some(init)) = (args.pop(), args.pop()) else {
            return Ok(None);
        };
        let _ = target.take();
        let iter_range = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
        let loop_cond = helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into())));
        let loop_step = helper.next_expr(Expr::Ident(var.clone()));
        Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
            ComprehensionExpr {
                iter_range,
                iter_var: "#unused".to_string(),
                iter_var2: None,
                accu_var: var,
                accu_init: init,
                loop_cond,
                loop_step,
                result,
            },
        )))))
    })
}
