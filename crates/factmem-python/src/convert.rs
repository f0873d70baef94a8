//! Values across the boundary: facts as tuples (the Python half makes dataclasses of
//! them), instants as Unix microseconds, and the argument checks that name their
//! parameter.

use dispatch_runtime::reexports::{
    FactId, Filter, Metadata, ScoredFact, SessionFact, Tag, Timestamp,
};
use pyo3::IntoPyObject;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

use crate::errors::{self, Kind};

/// A fact as the Python half reads it, in this order: `id`, `subject`, `relation`,
/// `object`, `statement`, `tags`, `confidence`, `source`, `valid_from`, `valid_to`,
/// `recorded_at`, and `(superseded_by, metadata)` (instants in Unix microseconds,
/// metadata as a JSON object's text, `None` without: tuples cross up to twelve items).
/// The texts are borrowed from the fact: Python's strings are made from them directly,
/// with no Rust copy first (a search's results cross in about a microsecond each).
pub(crate) type FactTuple<'a> = (
    String,
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
    Vec<&'static str>,
    f64,
    &'a str,
    i64,
    Option<i64>,
    Option<i64>,
    (Option<String>, Option<String>),
);

/// `fact` as a [`FactTuple`].
pub(crate) fn fact_tuple(fact: &SessionFact) -> FactTuple<'_> {
    (
        fact.id().to_string(),
        fact.subject(),
        fact.relation(),
        fact.object(),
        fact.statement(),
        fact.tags()
            .as_slice()
            .iter()
            .map(|tag| tag.as_str())
            .collect(),
        fact.confidence(),
        fact.source_task_id(),
        fact.valid_from().unix_micros(),
        fact.valid_to().map(Timestamp::unix_micros),
        fact.recorded_at().map(Timestamp::unix_micros),
        (
            fact.superseded_by().map(|id| id.to_string()),
            (!fact.metadata().is_empty()).then(|| fact.metadata().to_json().to_string()),
        ),
    )
}

/// `fact` as a Python tuple ([`FactTuple`]).
pub(crate) fn fact<'py>(py: Python<'py>, fact: &SessionFact) -> PyResult<Bound<'py, PyAny>> {
    Ok(fact_tuple(fact).into_pyobject(py)?.into_any())
}

/// `facts` as a Python list of [`FactTuple`]s.
pub(crate) fn facts<'py>(py: Python<'py>, facts: &[SessionFact]) -> PyResult<Bound<'py, PyAny>> {
    facts
        .iter()
        .map(fact_tuple)
        .collect::<Vec<_>>()
        .into_pyobject(py)
}

/// Scored facts as a Python list of `(score, FactTuple)`.
pub(crate) fn scored<'py>(py: Python<'py>, found: &[ScoredFact]) -> PyResult<Bound<'py, PyAny>> {
    found
        .iter()
        .map(|scored| (scored.score, fact_tuple(&scored.fact)))
        .collect::<Vec<_>>()
        .into_pyobject(py)
}

/// Ids as strings.
pub(crate) fn ids(ids: &[FactId]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

/// The text of a `str` argument; anything else a `TypeError` naming `param`.
pub(crate) fn text(param: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) => Ok(text.to_cow()?.into_owned()),
        Err(_) => Err(errors::wrong_type(param, "str", value)),
    }
}

/// The text of an optional `str` argument (`None` is none).
pub(crate) fn optional_text(param: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() {
        Ok(None)
    } else {
        text(param, value).map(Some)
    }
}

/// A count argument: an `int` (not a `bool`) in `min..=max`, else `TypeError` or
/// `InvalidInput` naming `param`.
pub(crate) fn count(
    py: Python<'_>,
    param: &str,
    value: &Bound<'_, PyAny>,
    min: usize,
    max: usize,
) -> PyResult<usize> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(errors::wrong_type(param, "int", value));
    }
    let out_of_range = || errors::invalid(py, param, &format!("must be from {min} to {max}"));
    let number: i128 = value.extract().map_err(|_| out_of_range())?;
    usize::try_from(number)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(out_of_range)
}

/// A confidence argument: a real number (`int` or `float`, not `bool`) in `0..=1`.
pub(crate) fn confidence(py: Python<'_>, param: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>() {
        return Err(errors::wrong_type(param, "float", value));
    }
    let number: f64 = value
        .extract()
        .map_err(|_| errors::wrong_type(param, "float", value))?;
    if (0.0..=1.0).contains(&number) {
        Ok(number)
    } else {
        Err(errors::invalid(py, param, "must be from 0 to 1"))
    }
}

/// An optional instant given as Unix microseconds (the Python half converts aware
/// datetimes), checked against the years the store keeps (0000 to 9999).
pub(crate) fn instant(
    py: Python<'_>,
    param: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<Timestamp>> {
    if value.is_none() {
        return Ok(None);
    }
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(errors::wrong_type(param, "datetime", value));
    }
    let micros: i64 = value
        .extract()
        .map_err(|_| errors::invalid(py, param, "out of range"))?;
    Timestamp::from_unix_micros(micros)
        .map(Some)
        .map_err(|error| errors::invalid(py, param, &error.to_string()))
}

/// A category argument: one of the fact tags, by name.
pub(crate) fn category(py: Python<'_>, param: &str, value: &Bound<'_, PyAny>) -> PyResult<Tag> {
    let name = text(param, value)?;
    name.trim()
        .parse()
        .map_err(|error: <Tag as std::str::FromStr>::Err| {
            errors::invalid(py, param, &error.to_string())
        })
}

/// A filter argument: `None`, or a `str` holding the JSON shape (the Python half writes a
/// `dict` as JSON) or the readable form; a filter that does not read is
/// `InvalidInput` with code `invalid_filter`, naming where.
pub(crate) fn filter(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Option<Filter>> {
    let Some(text) = optional_text("filter", value)? else {
        return Ok(None);
    };
    let parsed = if text.trim_start().starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| errors::invalid(py, "filter", &format!("not JSON: {e}")))?;
        Filter::from_json(&json)
    } else {
        Filter::parse_where(&text)
    };
    parsed.map(Some).map_err(|e| {
        errors::raise(
            py,
            Kind::InvalidInput,
            e.code(),
            &format!("filter: {e}"),
            &[],
        )
    })
}

/// A `recency_half_life` argument: `None`, whole seconds as an `int` (the Python half
/// converts a `timedelta`), or text as `facts` takes it (`30d`, `12h`, `2w`).
pub(crate) fn half_life(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<std::time::Duration>> {
    const PARAM: &str = "recency_half_life";
    if value.is_none() {
        return Ok(None);
    }
    if value.is_instance_of::<PyString>() {
        let text = text(PARAM, value)?;
        return dispatch_runtime::reexports::parse_duration(&text)
            .map(Some)
            .map_err(|e| errors::invalid(py, PARAM, &e));
    }
    let secs = count(py, PARAM, value, 1, usize::MAX)?;
    Ok(Some(std::time::Duration::from_secs(
        u64::try_from(secs).unwrap_or(u64::MAX),
    )))
}

/// The `as_of` and `filter` arguments of a read, as the service takes them.
pub(crate) fn read(
    py: Python<'_>,
    as_of: &Bound<'_, PyAny>,
    filter: &Bound<'_, PyAny>,
) -> PyResult<dispatch_runtime::ReadOptions> {
    Ok(
        dispatch_runtime::ReadOptions::as_of(instant(py, "as_of", as_of)?)
            .with_filter(self::filter(py, filter)?),
    )
}

/// A metadata argument: `None`, or a JSON object's text (the Python half writes the
/// `dict`); metadata that does not read is `InvalidInput` with code `invalid_metadata`.
pub(crate) fn metadata(
    py: Python<'_>,
    param: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<Metadata>> {
    let Some(text) = optional_text(param, value)? else {
        return Ok(None);
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| errors::invalid(py, param, &format!("not JSON: {e}")))?;
    Metadata::from_json(&json).map(Some).map_err(|e| {
        errors::raise(
            py,
            Kind::InvalidInput,
            e.code(),
            &format!("{param}: {e}"),
            &[],
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use dispatch_runtime::reexports::SourceRole;

    #[test]
    fn a_fact_crosses_with_every_field() {
        let fact = SessionFact::builder("user", "prefers_editor", "helix")
            .statement("User prefers helix")
            .tag(Tag::Preference)
            .confidence(0.5)
            .source("python", SourceRole::User)
            .valid_from(Timestamp::from_unix_micros(1_000_000).unwrap())
            .build()
            .unwrap();
        let tuple = fact_tuple(&fact);
        assert_eq!(tuple.0, fact.id().to_string());
        assert_eq!(tuple.4, Some("User prefers helix"));
        assert_eq!(tuple.5, vec!["preference"]);
        assert_eq!((tuple.6, tuple.8, tuple.9), (0.5, 1_000_000, None));
    }
}
