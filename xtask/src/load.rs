//! `cargo xtask load`: the full load test of `facts mcp --http` (issue 24), in a release
//! build: 50 MCP clients (rmcp's streamable HTTP client), 60 seconds, 10 tenants with their
//! bearer tokens, 70% recall/search and 30% add/archive, on the PostgreSQL server of
//! `FACTMEM_PG_URL`; then the same load while that server restarts once. It prints p50 and
//! p99 per tool and the errors, and fails when a call failed outside the restart, an
//! acknowledged write is missing or a tenant saw another's facts. The test is
//! `crates/facts/tests/load.rs`; `cargo xtask check` runs its short form (10 clients,
//! 10 s) with the other tests.
//!
//! Options (each sets a `FACTMEM_LOAD_*` variable of the test): `--clients N`, `--secs S`,
//! `--tenants T`, `--rate R` (requests per second per client, random gaps).

use crate::cargo;
use crate::error::Error;

/// The options and the variables they set.
const OPTIONS: [(&str, &str); 4] = [
    ("--clients", "FACTMEM_LOAD_CLIENTS"),
    ("--secs", "FACTMEM_LOAD_SECS"),
    ("--tenants", "FACTMEM_LOAD_TENANTS"),
    ("--rate", "FACTMEM_LOAD_RATE"),
];

/// Runs `cargo test --release -p factmem-cli --test load -- --ignored full_load`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let mut env = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some((_, var)) = OPTIONS.iter().find(|(name, _)| *name == arg) else {
            return Err(Error::Usage(format!(
                "load: unknown argument `{arg}` (options: --clients N, --secs S, \
                 --tenants T, --rate R)"
            )));
        };
        let value = rest
            .next()
            .filter(|v| v.parse::<f64>().is_ok_and(|v| v > 0.0))
            .ok_or_else(|| Error::Usage(format!("load: {arg} needs a positive number")))?;
        env.push((*var, value.clone()));
    }
    if std::env::var_os("FACTMEM_PG_URL").is_none() {
        return Err(Error::Failed(
            "FACTMEM_PG_URL is not set: start a server with \
             `eval \"$(.ci/pg-server start)\"`"
                .to_owned(),
        ));
    }
    let status = cargo::command(&[
        "test",
        "--release",
        "--locked",
        "-p",
        "factmem-cli",
        "--test",
        "load",
        "--",
        "--ignored",
        "--exact",
        "full_load",
        "--nocapture",
    ])
    .map_err(Error::Failed)?
    .envs(env)
    .status()
    .map_err(|e| Error::Failed(format!("cannot run cargo: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Failed(format!("the load test failed: {status}")))
    }
}
