//! Prepared statements: the ones of a connection ([`Statements`], kept for the session)
//! and a transaction's view of them ([`Db`]), and the key a long text is unique by.

use std::collections::HashMap;

use fact_store_sql::filter::SqlValue;
use postgres::types::ToSql;
use postgres::{Row, Statement, Transaction};

use crate::error::DbResult;

/// Prepared statements of one connection, by their SQL (the server keeps them for the
/// session, across transactions).
pub(crate) type Statements = HashMap<String, Statement>;

/// The most statements a connection keeps prepared.
const MAX_STATEMENTS: usize = 512;

/// A compiled filter's parameters as PostgreSQL binds them.
pub(crate) fn bind(values: &[SqlValue]) -> Vec<Box<dyn ToSql + Sync>> {
    values
        .iter()
        .map(|value| -> Box<dyn ToSql + Sync> {
            match value {
                SqlValue::Text(text) => Box::new(text.clone()),
                SqlValue::Real(number) => Box::new(*number),
                SqlValue::Int(number) => Box::new(*number),
                SqlValue::Bool(flag) => Box::new(*flag),
                SqlValue::Json(json) => Box::new(json.clone()),
            }
        })
        .collect()
}

/// Prepares `sql` once per connection.
pub(crate) fn prepared(
    tx: &mut Transaction<'_>,
    statements: &mut Statements,
    sql: &str,
) -> DbResult<Statement> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    // Filters make statements of many shapes: a connection keeps a bounded number, and
    // prepares again what it dropped.
    if statements.len() >= MAX_STATEMENTS {
        statements.clear();
    }
    let statement = tx.prepare(sql)?;
    statements.insert(sql.to_owned(), statement.clone());
    Ok(statement)
}

/// Statements in one open transaction, prepared once per connection.
pub(crate) struct Db<'t, 'a> {
    tx: &'t mut Transaction<'a>,
    statements: &'t mut Statements,
}

impl<'t, 'a> Db<'t, 'a> {
    /// Statements of `tx`, prepared into (and taken from) `statements`.
    pub(crate) fn new(tx: &'t mut Transaction<'a>, statements: &'t mut Statements) -> Self {
        Db { tx, statements }
    }

    /// The rows of a query.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> DbResult<Vec<Row>> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.query(&statement, params)?)
    }

    /// The row of a query that gives at most one.
    pub(crate) fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> DbResult<Option<Row>> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.query_opt(&statement, params)?)
    }

    /// Runs a statement; the number of rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<u64> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.execute(&statement, params)?)
    }
}

/// The key a text is unique by in its scope (a message term, an alias): its BLAKE3
/// digest, since a B-tree entry cannot hold a long text.
pub(crate) fn text_key(text: &str) -> Vec<u8> {
    blake3::hash(text.as_bytes()).as_bytes().to_vec()
}
