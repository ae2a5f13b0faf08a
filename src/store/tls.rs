//! TLS to a shared store's server, with libpq's `sslmode` meanings.
//!
//! A team's store often lives on a managed server that accepts only
//! encrypted connections, and the connection string people already have
//! for it says so the libpq way: `sslmode=verify-full` and
//! `sslrootcert=/path/to/ca.pem`. The Rust client reads `disable`,
//! `prefer` and `require` only, and does not check a certificate itself,
//! so both settings are taken out of the string here and applied to the
//! TLS connector, as libpq applies them:
//!
//! - `disable`: no TLS;
//! - `prefer` (the default) and `require`: TLS when the server offers it
//!   (`require`: or no connection), the certificate not checked, unless
//!   `sslrootcert` names a CA, when it is checked as by `verify-ca`;
//! - `verify-ca`: TLS, the certificate signed by `sslrootcert`'s CA (or
//!   by one the system trusts);
//! - `verify-full`: as `verify-ca`, and the certificate names the host.

use super::StoreError;
use ::postgres::{Client, Config, NoTls};
use native_tls::{Certificate, TlsConnector};
use postgres_native_tls::MakeTlsConnector;
use std::path::PathBuf;

/// How the connection is encrypted and what of the server's certificate
/// is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// What a connection string says about TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsChoice {
    pub mode: TlsMode,
    /// The CA certificate the server's must be signed by (PEM).
    pub root_cert: Option<PathBuf>,
}

/// What becomes of one setting of a connection string.
enum Setting {
    /// Not about TLS: left as written.
    Kept,
    /// Written anew, as the client reads it.
    Replaced(String),
    /// Read here, and left out.
    Taken,
}

/// `conninfo` without the TLS settings the client cannot read, and those
/// settings; an error names an `sslmode` that is not one of libpq's.
pub fn split(conninfo: &str) -> Result<(String, TlsChoice), String> {
    let mut choice = TlsChoice {
        mode: TlsMode::Prefer,
        root_cert: None,
    };
    let mut take = |key: &str, value: &str| -> Result<Setting, String> {
        match key {
            "sslmode" => {
                choice.mode = match value {
                    "disable" => TlsMode::Disable,
                    "allow" | "prefer" => TlsMode::Prefer,
                    "require" => TlsMode::Require,
                    "verify-ca" => TlsMode::VerifyCa,
                    "verify-full" => TlsMode::VerifyFull,
                    other => {
                        return Err(format!(
                            "sslmode={other} is not one of disable, allow, prefer, require, \
                             verify-ca, verify-full"
                        ));
                    }
                };
                Ok(Setting::Replaced(format!(
                    "{key}={}",
                    client_mode(choice.mode)
                )))
            }
            "sslrootcert" => {
                choice.root_cert = Some(PathBuf::from(value));
                Ok(Setting::Taken)
            }
            _ => Ok(Setting::Kept),
        }
    };
    let rest = if let Some((base, query)) = conninfo
        .split_once('?')
        .filter(|_| conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://"))
    {
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match take(key, &percent_decode(value))? {
                Setting::Replaced(new) => kept.push(new),
                Setting::Kept => kept.push(pair.to_string()),
                Setting::Taken => {}
            }
        }
        if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    } else if conninfo.contains("://") {
        conninfo.to_string()
    } else {
        let mut kept = Vec::new();
        for (key, raw, value) in key_values(conninfo)? {
            match take(&key, &value)? {
                Setting::Replaced(new) => kept.push(new),
                Setting::Kept => kept.push(format!("{key}={raw}")),
                Setting::Taken => {}
            }
        }
        kept.join(" ")
    };
    Ok((rest, choice))
}

/// The mode the client itself is given: TLS or not, and whether it may
/// go without.
fn client_mode(mode: TlsMode) -> &'static str {
    match mode {
        TlsMode::Disable => "disable",
        TlsMode::Prefer => "prefer",
        TlsMode::Require | TlsMode::VerifyCa | TlsMode::VerifyFull => "require",
    }
}

/// A libpq `key=value` string's settings: key, the value as written
/// (quoted or not), and the value.
fn key_values(text: &str) -> Result<Vec<(String, String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("`{key}` has no `=` and a value"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let (mut raw, mut value) = (String::new(), String::new());
        if chars.next_if_eq(&'\'').is_some() {
            raw.push('\'');
            loop {
                match chars.next() {
                    None => return Err(format!("the value of `{key}` has no closing quote")),
                    Some('\'') => break raw.push('\''),
                    Some('\\') => {
                        let escaped = chars.next().unwrap_or('\\');
                        raw.extend(['\\', escaped]);
                        value.push(escaped);
                    }
                    Some(c) => {
                        raw.push(c);
                        value.push(c);
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                raw.push(c);
                value.push(c);
            }
        }
        out.push((key, raw, value));
    }
}

/// `%XX` escapes of a URL's query value turned back into bytes.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl TlsChoice {
    /// Connects by `config` (whose `sslmode` [`split`] set) with TLS as
    /// chosen; errors name `server`.
    pub fn connect(&self, config: &Config, server: &str) -> Result<Client, StoreError> {
        let failed = |source: ::postgres::Error| {
            let tls = source.to_string().contains("TLS");
            StoreError::Postgres {
                server: server.to_string(),
                what: if tls { TLS_HINT } else { CONNECT_HINT }.to_string(),
                source,
            }
        };
        if self.mode == TlsMode::Disable {
            return config.connect(NoTls).map_err(failed);
        }
        let connector = self.connector().map_err(|what| StoreError::Connection {
            server: server.to_string(),
            what,
        })?;
        config
            .connect(MakeTlsConnector::new(connector))
            .map_err(failed)
    }

    /// The TLS connector, checking what the mode says to check; what is
    /// wrong otherwise.
    fn connector(&self) -> Result<TlsConnector, String> {
        let mut builder = TlsConnector::builder();
        if let Some(path) = &self.root_cert {
            let cert = std::fs::read(path)
                .map_err(|e| e.to_string())
                .and_then(|pem| Certificate::from_pem(&pem).map_err(|e| e.to_string()))
                .map_err(|e| {
                    format!(
                        "sslrootcert {} is not a readable PEM certificate ({e}): give the CA \
                         certificate that signed the server's",
                        path.display()
                    )
                })?;
            builder.add_root_certificate(cert);
        }
        match self.mode {
            // libpq: a CA file given makes `require` check as `verify-ca`.
            TlsMode::Prefer | TlsMode::Require if self.root_cert.is_none() => {
                builder.danger_accept_invalid_certs(true);
            }
            TlsMode::Prefer | TlsMode::Require | TlsMode::VerifyCa => {
                builder.danger_accept_invalid_hostnames(true);
            }
            TlsMode::VerifyFull | TlsMode::Disable => {}
        }
        builder
            .build()
            .map_err(|e| format!("the TLS settings were refused: {e}"))
    }
}

/// What to check when the server cannot be reached.
const CONNECT_HINT: &str = "cannot connect: is the server running there, and may this user log \
     in to the database and create tables in it? (the password goes in PGPASSWORD or ~/.pgpass)";

/// What to check when the TLS handshake fails.
const TLS_HINT: &str = "cannot connect over TLS: does the server accept TLS, is its certificate \
     signed by the CA that sslrootcert names (or one this machine trusts), and, with \
     sslmode=verify-full, does it name the host as the connection string gives it?";

#[cfg(test)]
mod tests {
    use super::*;

    fn split_ok(conninfo: &str) -> (String, TlsChoice) {
        split(conninfo).unwrap()
    }

    #[test]
    fn verify_modes_become_require_and_the_root_cert_is_taken_out_of_a_url() {
        let (rest, tls) = split_ok(
            "postgres://w@db.example.org/perf?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        );
        assert_eq!(
            rest,
            "postgres://w@db.example.org/perf?sslmode=require&application_name=x"
        );
        assert_eq!(tls.mode, TlsMode::VerifyFull);
        assert_eq!(tls.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let (rest, tls) = split_ok("postgresql://db/perf?sslrootcert=/ca.pem");
        assert_eq!(rest, "postgresql://db/perf");
        assert_eq!(tls.mode, TlsMode::Prefer);
    }

    #[test]
    fn key_value_strings_keep_their_other_settings_and_quotes() {
        let (rest, tls) = split_ok(
            "host=db port=5432 password='a b\\'c' sslmode = verify-ca sslrootcert='/my certs/ca.pem'",
        );
        assert_eq!(rest, "host=db port=5432 password='a b\\'c' sslmode=require");
        assert_eq!(tls.mode, TlsMode::VerifyCa);
        assert_eq!(tls.root_cert, Some(PathBuf::from("/my certs/ca.pem")));
        let parsed: Config = rest.parse().unwrap();
        assert_eq!(parsed.get_password(), Some(&b"a b'c"[..]));
        assert_eq!(split_ok("host=db").0, "host=db");
    }

    #[test]
    fn an_unknown_mode_or_a_broken_string_is_refused_with_what_is_wrong() {
        let err = split("host=db sslmode=verify").unwrap_err();
        assert!(err.contains("sslmode=verify is not one of"), "{err}");
        assert!(
            split("host=db password='open")
                .unwrap_err()
                .contains("closing quote")
        );
        assert!(split("host").unwrap_err().contains("`host` has no `=`"));
    }

    #[test]
    fn a_root_cert_that_cannot_be_read_is_named() {
        let tls = TlsChoice {
            mode: TlsMode::VerifyFull,
            root_cert: Some(PathBuf::from("/nonexistent/ca.pem")),
        };
        let err = tls.connector().err().unwrap();
        assert!(
            err.contains("sslrootcert /nonexistent/ca.pem is not a readable"),
            "{err}"
        );
    }
}
