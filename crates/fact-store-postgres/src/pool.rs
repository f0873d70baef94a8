//! The connection pool: r2d2 over the synchronous `postgres` client, each connection with
//! the statements it prepared, in plain text or (feature `tls`) over rustls.

use std::time::Duration;

use postgres::Client;

use crate::statements::Statements;

/// A connection: the client and its prepared statements.
pub(super) struct Connection {
    pub(super) client: Client,
    pub(super) statements: Statements,
    /// A connection to a read replica (`replicas.rs`), not to the primary.
    pub(super) replica: bool,
}

/// What the pool holds: a connection, closed by [`close`] when dropped (`None` only
/// while it is being dropped).
pub(super) struct Holder(pub(super) Option<Connection>);

impl Drop for Holder {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            close(conn);
        }
    }
}

/// Closes a connection on a short-lived thread of its own. The client says goodbye to the
/// server with a blocking call on a private runtime, which panics on a thread that runs
/// async code (a store dropped inside a tokio task); so no client is dropped where the
/// store happens to be.
pub(super) fn close(conn: Connection) {
    let closing = std::thread::Builder::new()
        .name("factmem-pg-close".into())
        .spawn(move || drop(conn));
    if let Err(error) = closing {
        tracing::warn!(%error, "could not start a thread to close a PostgreSQL connection");
    }
}

/// Closes a connection as [`close`] does, and waits until it is closed: for the
/// connection a store opens outside the pool, so that it is gone before the pool's
/// connections are made.
pub(super) fn close_now(conn: Connection) {
    let closing = std::thread::Builder::new()
        .name("factmem-pg-close".into())
        .spawn(move || drop(conn));
    match closing {
        Ok(thread) => {
            if thread.join().is_err() {
                tracing::warn!("closing a PostgreSQL connection panicked");
            }
        }
        Err(error) => {
            tracing::warn!(%error, "could not start a thread to close a PostgreSQL connection");
        }
    }
}

/// Failed connection attempts of the pool, as `tracing` debug events (the operation that
/// needed the connection reports the failure itself).
#[derive(Debug)]
pub(super) struct LogErrors;

impl r2d2::HandleError<postgres::Error> for LogErrors {
    fn handle_error(&self, error: postgres::Error) {
        tracing::debug!(%error, "PostgreSQL connection attempt failed");
    }
}

/// Opens connections with the store's configuration; r2d2 checks each one before handing
/// it out (an empty query) and drops one whose socket closed, so a restarted server costs
/// the operations that were in flight, never the ones after.
#[derive(Clone)]
pub(super) struct Manager {
    config: postgres::Config,
    #[cfg(feature = "tls")]
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

/// The TLS connector: rustls with the ring provider and Mozilla's roots, built without
/// the process-wide default provider (which another crate may have set differently).
#[cfg(feature = "tls")]
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl Manager {
    /// Connections to `config`, with `search_path` set to `schema` and writes waiting at
    /// most `lock_timeout` for another writer's lock.
    pub(super) fn new(
        mut config: postgres::Config,
        schema: &str,
        lock_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Self, String> {
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
        Ok(Manager {
            config,
            #[cfg(feature = "tls")]
            tls: tls()?,
        })
    }
}

impl Manager {
    /// A new connection, outside the pool.
    pub(super) fn open(&self) -> Result<Connection, postgres::Error> {
        // With TLS built in, `sslmode` decides: `prefer` (the default) uses TLS when the
        // server offers it, `require` insists, `disable` never asks.
        #[cfg(feature = "tls")]
        let client = self.config.connect(self.tls.clone())?;
        #[cfg(not(feature = "tls"))]
        let client = self.config.connect(postgres::NoTls)?;
        Ok(Connection {
            client,
            statements: Statements::new(),
            replica: false,
        })
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Holder;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Holder, postgres::Error> {
        Ok(Holder(Some(self.open()?)))
    }

    fn is_valid(&self, holder: &mut Holder) -> Result<(), postgres::Error> {
        match holder.0.as_mut() {
            Some(conn) => conn.client.simple_query("").map(|_| ()),
            // Never seen: the holder is only emptied as it is dropped.
            None => Ok(()),
        }
    }

    fn has_broken(&self, holder: &mut Holder) -> bool {
        holder.0.as_mut().is_none_or(|conn| conn.client.is_closed())
    }
}
