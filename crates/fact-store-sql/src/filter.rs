//! A [`Filter`] as SQL: one boolean expression over the facts row aliased `f`, in the
//! dialect of SQLite or PostgreSQL, with its parameters ([`compile`]).
//!
//! The expression holds for a row exactly when [`Filter::matches`] holds for the fact the
//! row stores; the conformance suite's `filters` module checks that on every backend
//! against brute force. What keeps the two equal:
//!
//! - every condition is two-valued: a `NULL` (an absent `valid_to`, no metadata) never
//!   reaches `NOT`, which would keep it `NULL` and drop the row from `ne` and `nin`,
//!   which hold for an absent field;
//! - strings compare by their bytes: SQLite's default `BINARY` collation, PostgreSQL's
//!   `COLLATE "C"` for orderings; `contains` is `instr` / `strpos`, case-sensitive;
//! - numbers compare as `f64`: SQLite keeps each metadata value in `fact_meta` as Rust
//!   bound it (a `REAL`, never parsed from JSON text), PostgreSQL casts its `jsonb`
//!   numbers to `float8`, which is exact for a number Rust wrote;
//! - a value of another type than the operand fails every operator but `ne` and `nin`
//!   (a metadata value's type is tested before it is compared).
//!
//! Metadata is where the two databases differ most:
//!
//! - SQLite: `fact_meta (seq, key, kind, value)`, one row per key of a version
//!   (`kind` 0 text, 1 number, 2 boolean), written beside the fact; a condition is an
//!   `EXISTS` on its primary key, and [`driving`] gives a `list` the index
//!   `fact_meta (key, kind, value)` to start from;
//! - PostgreSQL: the `jsonb` column; an equality is a containment (`@>`), which its GIN
//!   index answers, the other operators read the key's value.

use fact_model::{Condition, Filter, FilterField, Operand, Operator};
use serde_json::{Map, Value};

/// The database a filter is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: `?N` parameters, `fact_meta` for metadata.
    Sqlite,
    /// PostgreSQL: `$N` parameters, the `jsonb` column for metadata.
    Postgres,
}

/// A parameter of a compiled filter, bound by the backend.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// Text.
    Text(String),
    /// A double.
    Real(f64),
    /// An integer (instants in microseconds).
    Int(i64),
    /// A boolean (SQLite binds 0 or 1).
    Bool(bool),
    /// A JSON document (PostgreSQL's containment operand, bound as `jsonb`).
    Json(Value),
}

/// A filter compiled to SQL: an expression and its parameters, numbered from the `first`
/// given to [`compile`].
#[derive(Debug, Clone, PartialEq)]
pub struct SqlFilter {
    /// The boolean expression, over the facts row aliased `f`.
    pub sql: String,
    /// The values of its parameters, in order.
    pub params: Vec<SqlValue>,
}

/// `filter` as a boolean expression over the facts row aliased `f`, its parameters
/// numbered from `first` (`?first` or `$first`, then up).
pub fn compile(filter: &Filter, dialect: Dialect, first: usize) -> SqlFilter {
    let mut out = Compiler {
        dialect,
        first,
        params: Vec::new(),
    };
    let sql = out.filter(filter);
    SqlFilter {
        sql,
        params: out.params,
    }
}

/// For SQLite, a condition implied by `filter` that an index answers: the versions
/// holding the value of one of its metadata equalities (`eq` or `in` on a key that must
/// hold), as `f.seq IN (SELECT … FROM fact_meta …)`. `None` when the filter requires no
/// metadata equality, or for PostgreSQL, whose planner finds the GIN index through the
/// containment of [`compile`] itself. AND it with the compiled filter: it never changes
/// which rows match, only how the database finds them.
pub fn driving(filter: &Filter, dialect: Dialect, first: usize) -> Option<SqlFilter> {
    if dialect != Dialect::Sqlite {
        return None;
    }
    let condition = filter.conjuncts().into_iter().find(|c| {
        matches!(c.field(), FilterField::Metadata(_))
            && matches!(c.op(), Operator::Eq | Operator::In)
    })?;
    let FilterField::Metadata(key) = condition.field() else {
        return None;
    };
    let mut out = Compiler {
        dialect,
        first,
        params: Vec::new(),
    };
    let key = out.param(SqlValue::Text(key.clone()));
    let tests: Vec<String> = condition
        .operands()
        .iter()
        .map(|operand| out.sqlite_value_test(Operator::Eq, operand))
        .collect();
    let sql = format!(
        "f.seq IN (SELECT m.seq FROM fact_meta AS m WHERE m.key = {key} AND {})",
        any_of(&tests)
    );
    Some(SqlFilter {
        sql,
        params: out.params,
    })
}

/// The expression that holds when any of `tests` holds (`FALSE` for none).
fn any_of(tests: &[String]) -> String {
    if tests.is_empty() {
        "FALSE".to_owned()
    } else {
        format!("({})", tests.join(" OR "))
    }
}

/// The expression that holds when all of `tests` hold (`TRUE` for none).
fn all_of(tests: &[String]) -> String {
    if tests.is_empty() {
        "TRUE".to_owned()
    } else {
        format!("({})", tests.join(" AND "))
    }
}

/// The SQL of an ordering or equality operator.
fn comparison(op: Operator) -> &'static str {
    match op {
        Operator::Gt => ">",
        Operator::Gte => ">=",
        Operator::Lt => "<",
        Operator::Lte => "<=",
        _ => "=",
    }
}

struct Compiler {
    dialect: Dialect,
    first: usize,
    params: Vec<SqlValue>,
}

impl Compiler {
    /// Adds a parameter; returns its placeholder (PostgreSQL's typed by a cast).
    fn param(&mut self, value: SqlValue) -> String {
        let n = self.first + self.params.len();
        let cast = match &value {
            SqlValue::Text(_) => "::text",
            SqlValue::Real(_) => "::float8",
            SqlValue::Int(_) => "::int8",
            SqlValue::Bool(_) => "::boolean",
            SqlValue::Json(_) => "::jsonb",
        };
        self.params.push(value);
        match self.dialect {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}{cast}"),
        }
    }

    fn filter(&mut self, filter: &Filter) -> String {
        match filter {
            Filter::And(list) => {
                let parts: Vec<String> = list.iter().map(|f| self.filter(f)).collect();
                all_of(&parts)
            }
            Filter::Or(list) => {
                let parts: Vec<String> = list.iter().map(|f| self.filter(f)).collect();
                any_of(&parts)
            }
            Filter::Not(inner) => format!("(NOT {})", self.filter(inner)),
            Filter::Condition(condition) => self.condition(condition),
        }
    }

    /// One condition, never `NULL`: `ne` and `nin` are `NOT` of a two-valued `eq` / `in`.
    fn condition(&mut self, condition: &Condition) -> String {
        match condition.op() {
            Operator::Ne => format!("(NOT {})", self.positive(condition, Operator::Eq)),
            Operator::Nin => format!("(NOT {})", self.positive(condition, Operator::In)),
            op => self.positive(condition, op),
        }
    }

    /// A condition with `op` (never `ne` or `nin`), two-valued.
    fn positive(&mut self, condition: &Condition, op: Operator) -> String {
        let operands = condition.operands();
        if op == Operator::Exists {
            return self.exists(condition.field(), condition.exists());
        }
        // `eq` is `in` of one value.
        let values = match op {
            Operator::In | Operator::Eq => operands,
            _ => operands.get(..1).unwrap_or_default(),
        };
        let op = if op == Operator::In { Operator::Eq } else { op };
        match condition.field() {
            FilterField::Subject => self.text_column("f.subject", op, values),
            FilterField::Relation => self.text_column("f.relation", op, values),
            FilterField::Object => self.text_column("f.object", op, values),
            FilterField::Source => self.text_column("f.source_task_id", op, values),
            FilterField::Category => self.category(op, values),
            FilterField::Confidence => self.column("f.confidence", op, values),
            FilterField::ValidFrom => self.column("f.valid_from", op, values),
            FilterField::ValidTo => self.column("f.valid_to", op, values),
            FilterField::RecordedAt => self.column("f.recorded_at", op, values),
            FilterField::Metadata(key) => match self.dialect {
                Dialect::Sqlite => self.sqlite_metadata(key, op, values),
                Dialect::Postgres => self.postgres_metadata(key, op, values),
            },
        }
    }

    fn exists(&mut self, field: &FilterField, exists: bool) -> String {
        let present = match field {
            FilterField::ValidTo => "f.valid_to IS NOT NULL".to_owned(),
            FilterField::RecordedAt => "f.recorded_at IS NOT NULL".to_owned(),
            FilterField::Metadata(key) => {
                let key = self.param(SqlValue::Text(key.clone()));
                match self.dialect {
                    Dialect::Sqlite => format!(
                        "EXISTS (SELECT 1 FROM fact_meta AS m WHERE m.seq = f.seq AND m.key = {key})"
                    ),
                    Dialect::Postgres => format!("(f.metadata -> {key}) IS NOT NULL"),
                }
            }
            // Every other field is always there.
            _ => "TRUE".to_owned(),
        };
        if exists {
            format!("({present})")
        } else {
            format!("(NOT ({present}))")
        }
    }

    /// A text column against text operands (`eq` over several values is `in`).
    fn text_column(&mut self, column: &str, op: Operator, values: &[Operand]) -> String {
        let tests: Vec<String> = values
            .iter()
            .map(|value| match value {
                Operand::Text(text) => {
                    let p = self.param(SqlValue::Text(text.clone()));
                    self.text_test(column, op, &p)
                }
                _ => "FALSE".to_owned(),
            })
            .collect();
        any_of(&tests)
    }

    /// `text op p` by bytes, or `contains`.
    fn text_test(&self, text: &str, op: Operator, p: &str) -> String {
        match (op, self.dialect) {
            (Operator::Contains, Dialect::Sqlite) => format!("instr({text}, {p}) > 0"),
            (Operator::Contains, Dialect::Postgres) => format!("strpos({text}, {p}) > 0"),
            (Operator::Eq, _) | (_, Dialect::Sqlite) => {
                format!("{text} {} {p}", comparison(op))
            }
            (_, Dialect::Postgres) => format!("{text} COLLATE \"C\" {} {p}", comparison(op)),
        }
    }

    /// A number or time column; a `NULL` (an absent time) compares false.
    fn column(&mut self, column: &str, op: Operator, values: &[Operand]) -> String {
        if op == Operator::Contains {
            return "FALSE".to_owned();
        }
        let tests: Vec<String> = values
            .iter()
            .map(|value| {
                let value = match value {
                    Operand::Number(number) => SqlValue::Real(*number),
                    Operand::Time(at) => SqlValue::Int(at.unix_micros()),
                    _ => return "FALSE".to_owned(),
                };
                let p = self.param(value);
                format!("COALESCE({column} {} {p}, FALSE)", comparison(op))
            })
            .collect();
        any_of(&tests)
    }

    /// Tags are stored joined by `,`: a tag is held when `,tag,` is in `,tags,`.
    fn category(&mut self, op: Operator, values: &[Operand]) -> String {
        if op != Operator::Eq {
            return "FALSE".to_owned();
        }
        let tests: Vec<String> = values
            .iter()
            .map(|value| match value {
                Operand::Tag(tag) => {
                    let p = self.param(SqlValue::Text(format!(",{},", tag.as_str())));
                    let joined = "',' || f.tags || ','";
                    match self.dialect {
                        Dialect::Sqlite => format!("instr({joined}, {p}) > 0"),
                        Dialect::Postgres => format!("strpos({joined}, {p}) > 0"),
                    }
                }
                _ => "FALSE".to_owned(),
            })
            .collect();
        any_of(&tests)
    }

    /// SQLite: a `fact_meta` row of the version under `key` passes one of the tests.
    fn sqlite_metadata(&mut self, key: &str, op: Operator, values: &[Operand]) -> String {
        let key = self.param(SqlValue::Text(key.to_owned()));
        let tests: Vec<String> = values
            .iter()
            .map(|value| self.sqlite_value_test(op, value))
            .collect();
        format!(
            "EXISTS (SELECT 1 FROM fact_meta AS m WHERE m.seq = f.seq AND m.key = {key} AND {})",
            any_of(&tests)
        )
    }

    /// SQLite: `fact_meta` row `m`'s value, of the operand's kind, against it.
    fn sqlite_value_test(&mut self, op: Operator, value: &Operand) -> String {
        let (kind, value) = match value {
            Operand::Text(text) => (0, SqlValue::Text(text.clone())),
            Operand::Number(number) => (1, SqlValue::Real(*number)),
            Operand::Bool(flag) => (2, SqlValue::Bool(*flag)),
            Operand::Time(_) | Operand::Tag(_) => return "FALSE".to_owned(),
        };
        if op == Operator::Contains && kind != 0 {
            return "FALSE".to_owned();
        }
        let p = self.param(value);
        format!(
            "(m.kind = {kind} AND {})",
            self.text_test("m.value", op, &p)
        )
    }

    /// PostgreSQL: the `jsonb` column's value under `key`; equality by containment.
    fn postgres_metadata(&mut self, key: &str, op: Operator, values: &[Operand]) -> String {
        let tests: Vec<String> = values
            .iter()
            .map(|value| self.postgres_value_test(key, op, value))
            .collect();
        any_of(&tests)
    }

    fn postgres_value_test(&mut self, key: &str, op: Operator, value: &Operand) -> String {
        let (json_type, json, cast) = match value {
            Operand::Text(text) => ("string", Value::String(text.clone()), ""),
            Operand::Number(number) => (
                "number",
                fact_model::MetaValue::Number(*number).to_json(),
                "::float8",
            ),
            Operand::Bool(flag) => ("boolean", Value::Bool(*flag), "::boolean"),
            Operand::Time(_) | Operand::Tag(_) => return "FALSE".to_owned(),
        };
        if op == Operator::Eq {
            let mut object = Map::new();
            object.insert(key.to_owned(), json);
            let p = self.param(SqlValue::Json(Value::Object(object)));
            return format!("COALESCE(f.metadata @> {p}, FALSE)");
        }
        if op == Operator::Contains && json_type != "string" {
            return "FALSE".to_owned();
        }
        let k = self.param(SqlValue::Text(key.to_owned()));
        let operand = match value {
            Operand::Text(text) => SqlValue::Text(text.clone()),
            Operand::Number(number) => SqlValue::Real(*number),
            Operand::Bool(flag) => SqlValue::Bool(*flag),
            Operand::Time(_) | Operand::Tag(_) => return "FALSE".to_owned(),
        };
        let p = self.param(operand);
        let read = format!("(f.metadata ->> {k}){cast}");
        let test = if json_type == "string" {
            self.text_test(&read, op, &p)
        } else {
            format!("{read} {} {p}", comparison(op))
        };
        format!(
            "(CASE WHEN jsonb_typeof(f.metadata -> {k}) = '{json_type}' THEN {test} ELSE FALSE END)"
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn sql(text: &str, dialect: Dialect) -> SqlFilter {
        compile(&Filter::parse_where(text).unwrap(), dialect, 3)
    }

    #[test]
    fn parameters_are_numbered_from_first_in_each_dialect() {
        let sqlite = sql(r#"subject = "a" and confidence > 0.5"#, Dialect::Sqlite);
        assert_eq!(
            sqlite.sql,
            "((f.subject = ?3) AND (COALESCE(f.confidence > ?4, FALSE)))"
        );
        assert_eq!(
            sqlite.params,
            [SqlValue::Text("a".into()), SqlValue::Real(0.5)]
        );
        let postgres = sql(r#"subject > "a""#, Dialect::Postgres);
        assert_eq!(postgres.sql, "(f.subject COLLATE \"C\" > $3::text)");
    }

    #[test]
    fn ne_and_nin_negate_a_two_valued_condition() {
        let ne = sql("valid_to != 2026-01-01T00:00:00Z", Dialect::Sqlite);
        assert_eq!(ne.sql, "(NOT (COALESCE(f.valid_to = ?3, FALSE)))");
        let nin = sql("category not in (decision, error)", Dialect::Postgres);
        assert!(nin.sql.starts_with("(NOT (strpos("), "{}", nin.sql);
        assert_eq!(nin.params.len(), 2);
    }

    #[test]
    fn metadata_equality_is_a_containment_on_postgres_and_a_fact_meta_row_on_sqlite() {
        let postgres = sql(r#"metadata.project = "rlm""#, Dialect::Postgres);
        assert_eq!(postgres.sql, "(COALESCE(f.metadata @> $3::jsonb, FALSE))");
        assert_eq!(
            postgres.params,
            [SqlValue::Json(serde_json::json!({"project": "rlm"}))]
        );
        let sqlite = sql("metadata.n >= 3", Dialect::Sqlite);
        assert!(
            sqlite.sql.contains("m.kind = 1 AND m.value >= ?4"),
            "{}",
            sqlite.sql
        );
        let filter =
            Filter::parse_where(r#"metadata.project in ("a", "b") and subject = "x""#).unwrap();
        let drive = driving(&filter, Dialect::Sqlite, 7).unwrap();
        assert!(
            drive
                .sql
                .starts_with("f.seq IN (SELECT m.seq FROM fact_meta AS m WHERE m.key = ?7")
        );
        assert_eq!(drive.params.len(), 3);
        assert_eq!(driving(&filter, Dialect::Postgres, 7), None);
        let or = Filter::parse_where(r#"metadata.project = "a" or subject = "x""#).unwrap();
        assert_eq!(driving(&or, Dialect::Sqlite, 1), None);
    }

    #[test]
    fn empty_lists_and_combinations_have_their_identities() {
        assert_eq!(compile(&Filter::all(), Dialect::Sqlite, 1).sql, "TRUE");
        assert_eq!(
            compile(&Filter::Or(Vec::new()), Dialect::Sqlite, 1).sql,
            "FALSE"
        );
        assert_eq!(sql("object in ()", Dialect::Sqlite).sql, "FALSE");
    }
}
