//! The connection pool: r2d2 over the synchronous `postgres` client, each connection with
//! the statements it prepared, in plain text or (feature `postgres-tls`) over rustls.

use std::time::Duration;

use postgres::Client;

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
    #[cfg(feature = "postgres-tls")]
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

/// The TLS connector: rustls with the ring provider and Mozilla's roots, built without
/// the process-wide default provider (which another crate may have set differently).
#[cfg(feature = "postgres-tls")]
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
            #[cfg(feature = "postgres-tls")]
            tls: tls()?,
        })
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Connection, postgres::Error> {
        // With TLS built in, `sslmode` decides: `prefer` (the default) uses TLS when the
        // server offers it, `require` insists, `disable` never asks.
        #[cfg(feature = "postgres-tls")]
        let client = self.config.connect(self.tls.clone())?;
        #[cfg(not(feature = "postgres-tls"))]
        let client = self.config.connect(postgres::NoTls)?;
        Ok(Connection {
            client,
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
