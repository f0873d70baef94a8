//! The connection pool: r2d2 over the synchronous `postgres` client, each connection with
//! the statements it prepared.

use std::time::Duration;

use postgres::{Client, NoTls};

use super::rows::Statements;

/// A pooled connection: the client and its prepared statements.
pub(super) struct Connection {
    pub(super) client: Client,
    pub(super) statements: Statements,
}

/// Opens connections with the store's configuration; r2d2 checks each one before handing
/// it out (an empty query) and drops one whose socket closed, so a restarted server costs
/// the operations that were in flight, never the ones after.
pub(super) struct Manager {
    config: postgres::Config,
}

impl Manager {
    /// Connections to `config`, with `search_path` set to `schema` and writes waiting at
    /// most `lock_timeout` for another writer's lock.
    pub(super) fn new(
        mut config: postgres::Config,
        schema: &str,
        lock_timeout: Duration,
        connect_timeout: Duration,
    ) -> Self {
        let options = format!(
            "-c search_path={schema} -c lock_timeout={}",
            lock_timeout.as_millis().max(1)
        );
        let options = match config.get_options() {
            Some(existing) if !existing.is_empty() => format!("{existing} {options}"),
            _ => options,
        };
        config.options(&options);
        config.connect_timeout(connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("factmem");
        }
        Manager { config }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Connection, postgres::Error> {
        Ok(Connection {
            client: self.config.connect(NoTls)?,
            statements: Statements::new(),
        })
    }

    fn is_valid(&self, conn: &mut Connection) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        conn.client.is_closed()
    }
}
