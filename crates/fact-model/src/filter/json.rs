//! The JSON shape of a filter: reading it ([`Filter::from_json`]), with the JSON Pointer
//! of the first problem.

use serde_json::Value;

use super::ast::{Filter, FilterError, MAX_FILTER_DEPTH, MAX_FILTER_ITEMS, Operator};
use super::check::{Path, condition, parse_field};
use crate::metadata::json_kind;

impl Filter {
    /// Reads and checks a filter in the JSON shape of `docs/protocol.md`:
    ///
    /// - `{"and": [F, …]}`, `{"or": [F, …]}`, `{"not": F}`;
    /// - `{"FIELD": {"OP": VALUE, …}}`, several operators all holding;
    /// - `{"FIELD": VALUE}`, short for `{"FIELD": {"eq": VALUE}}`;
    /// - an object with several keys: all of them hold (JSON objects are unordered: the
    ///   parts are taken in key order; write `and` to keep an order).
    ///
    /// # Errors
    ///
    /// [`FilterError`] naming the JSON Pointer of the first unknown field, unknown
    /// operator, wrong type or shape, or a filter beyond [`MAX_FILTER_DEPTH`] or
    /// [`MAX_FILTER_ITEMS`].
    pub fn from_json(value: &Value) -> Result<Filter, FilterError> {
        let mut reader = JsonReader { items: 0 };
        reader.filter(value, &Path::root(), 0)
    }
}

struct JsonReader {
    items: usize,
}

impl JsonReader {
    fn count(&mut self, path: &Path) -> Result<(), FilterError> {
        self.items += 1;
        if self.items > MAX_FILTER_ITEMS {
            return Err(path.error(format!(
                "the filter holds more than {MAX_FILTER_ITEMS} conditions and values"
            )));
        }
        Ok(())
    }

    fn filter(&mut self, value: &Value, path: &Path, depth: usize) -> Result<Filter, FilterError> {
        if depth > MAX_FILTER_DEPTH {
            return Err(path.error(format!(
                "filters nest at most {MAX_FILTER_DEPTH} levels deep"
            )));
        }
        let Value::Object(map) = value else {
            return Err(path.error(format!(
                "expected an object (a condition, `and`, `or` or `not`), found {}",
                json_kind(value)
            )));
        };
        let mut parts = Vec::with_capacity(map.len());
        for (key, value) in map {
            let here = path.join(key);
            parts.push(match key.as_str() {
                "and" | "or" => {
                    let Value::Array(list) = value else {
                        return Err(here.error(format!(
                            "`{key}` takes a list of filters, found {}",
                            json_kind(value)
                        )));
                    };
                    let list = list
                        .iter()
                        .enumerate()
                        .map(|(n, item)| self.filter(item, &here.join(n), depth + 1))
                        .collect::<Result<Vec<_>, _>>()?;
                    if key == "and" {
                        Filter::And(list)
                    } else {
                        Filter::Or(list)
                    }
                }
                "not" => Filter::Not(Box::new(self.filter(value, &here, depth + 1)?)),
                field => self.field(field, value, &here)?,
            });
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or_else(Filter::all)
        } else {
            Filter::And(parts)
        })
    }

    fn field(&mut self, name: &str, value: &Value, path: &Path) -> Result<Filter, FilterError> {
        let field = parse_field(name).map_err(|reason| path.error(reason))?;
        let Value::Object(ops) = value else {
            self.count(path)?;
            return Ok(Filter::Condition(condition(
                field,
                Operator::Eq,
                value,
                path,
            )?));
        };
        let mut conditions = Vec::with_capacity(ops.len());
        for (name, operand) in ops {
            let here = path.join(name);
            self.count(&here)?;
            let op = Operator::parse(name).ok_or_else(|| {
                here.error(format!(
                    "unknown operator `{name}` (allowed: {})",
                    Operator::ALL.map(Operator::name).join(", ")
                ))
            })?;
            if let Value::Array(list) = operand {
                self.items += list.len();
                self.count(&here)?;
            }
            conditions.push(Filter::Condition(condition(
                field.clone(),
                op,
                operand,
                &here,
            )?));
        }
        Ok(if conditions.len() == 1 {
            conditions.pop().unwrap_or_else(Filter::all)
        } else {
            Filter::And(conditions)
        })
    }
}

/// A filter serializes as its canonical JSON shape ([`Filter::to_json`]).
impl serde::Serialize for Filter {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// A filter deserializes from the JSON shape, checked as [`Filter::from_json`] checks it;
/// the error names the JSON Pointer inside the filter.
impl<'de> serde::Deserialize<'de> for Filter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Filter::from_json(&value).map_err(serde::de::Error::custom)
    }
}
