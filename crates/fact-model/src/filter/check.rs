//! What both forms of a filter share when reading one: the field a name names, and the
//! checks that type a condition's operands by its field.

use std::fmt;

use serde_json::Value;

use super::ast::{Condition, FieldKind, FilterError, FilterField, Operand, Operator};
use crate::metadata::json_kind;
use crate::{MetaValue, Tag, Timestamp};

/// A JSON Pointer being built while reading.
#[derive(Clone)]
pub(super) struct Path(pub(super) String);

impl Path {
    pub(super) fn root() -> Path {
        Path(String::new())
    }

    pub(super) fn join(&self, token: impl fmt::Display) -> Path {
        let token = token.to_string().replace('~', "~0").replace('/', "~1");
        Path(format!("{}/{token}", self.0))
    }

    pub(super) fn error(&self, reason: impl Into<String>) -> FilterError {
        FilterError::new(self.0.clone(), reason)
    }
}

/// The field `name` names, or why not.
pub(super) fn parse_field(name: &str) -> Result<FilterField, String> {
    FilterField::parse(name).ok_or_else(|| {
        if name.starts_with("metadata.") {
            format!("`{name}`: a metadata key is 1 to 64 bytes of [A-Za-z0-9_.-]")
        } else {
            format!(
                "unknown field `{}` (allowed: {}, metadata.KEY)",
                crate::clip(name, 80),
                FilterField::NAMED.map(|f| f.name().into_owned()).join(", ")
            )
        }
    })
}

/// Checks `field op value` and types its operand.
pub(super) fn condition(
    field: FilterField,
    op: Operator,
    value: &Value,
    path: &Path,
) -> Result<Condition, FilterError> {
    let kind = field.kind();
    let field_name = field.name().into_owned();
    let refuse = |reason: String| path.error(reason);
    let allowed = match kind {
        FieldKind::Tag => matches!(
            op,
            Operator::Eq | Operator::Ne | Operator::In | Operator::Nin | Operator::Exists
        ),
        FieldKind::Number | FieldKind::Time => op != Operator::Contains,
        FieldKind::Text | FieldKind::Meta => true,
    };
    if !allowed {
        return Err(refuse(format!(
            "`{}` does not apply to `{field_name}`",
            op.name()
        )));
    }
    let mut built = Condition {
        field,
        op,
        operands: Vec::new(),
        exists: true,
    };
    match op {
        Operator::Exists => {
            let Value::Bool(flag) = value else {
                return Err(refuse(format!(
                    "`exists` takes true or false, found {}",
                    json_kind(value)
                )));
            };
            built.exists = *flag;
        }
        Operator::In | Operator::Nin => {
            let Value::Array(list) = value else {
                return Err(refuse(format!(
                    "`{}` takes a list, found {}",
                    op.name(),
                    json_kind(value)
                )));
            };
            built.operands = list
                .iter()
                .enumerate()
                .map(|(n, item)| operand(kind, op, &field_name, item, &path.join(n)))
                .collect::<Result<_, _>>()?;
        }
        _ => built.operands = vec![operand(kind, op, &field_name, value, path)?],
    }
    Ok(built)
}

/// Types one operand of `op` on a field of `kind`.
fn operand(
    kind: FieldKind,
    op: Operator,
    field: &str,
    value: &Value,
    path: &Path,
) -> Result<Operand, FilterError> {
    let wrong = |expected: &str| {
        path.error(format!(
            "`{field}` `{}` takes {expected}, found {}",
            op.name(),
            json_kind(value)
        ))
    };
    if op == Operator::Contains {
        return match value {
            Value::String(text) => Ok(Operand::Text(text.clone())),
            _ => Err(wrong("a string")),
        };
    }
    match kind {
        FieldKind::Text => match value {
            Value::String(text) => Ok(Operand::Text(text.clone())),
            _ => Err(wrong("a string")),
        },
        FieldKind::Tag => match value {
            Value::String(name) => name
                .parse::<Tag>()
                .map(Operand::Tag)
                .map_err(|e| path.error(e.to_string())),
            _ => Err(wrong("a category name")),
        },
        FieldKind::Number => match value.as_f64() {
            Some(number) if value.is_number() => Ok(Operand::Number(number)),
            _ => Err(wrong("a number")),
        },
        FieldKind::Time => match value {
            Value::String(text) => text
                .parse::<Timestamp>()
                .map(Operand::Time)
                .map_err(|e| path.error(format!("`{field}` takes an RFC 3339 time: {e}"))),
            _ => Err(wrong("an RFC 3339 time")),
        },
        FieldKind::Meta => {
            let meta = MetaValue::from_json("filter", value).map_err(|_| {
                path.error(format!(
                    "`{field}` `{}` takes a string, a number or a boolean, found {}",
                    op.name(),
                    json_kind(value)
                ))
            })?;
            match meta {
                MetaValue::Bool(_) if op.is_ordering() => Err(wrong("a number or a string")),
                MetaValue::String(text) => Ok(Operand::Text(text)),
                MetaValue::Number(number) => Ok(Operand::Number(number)),
                MetaValue::Bool(flag) => Ok(Operand::Bool(flag)),
            }
        }
    }
}
