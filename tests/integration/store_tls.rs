//! The PostgreSQL store over TLS, against a real PostgreSQL 15 that
//! listens on 127.0.0.1 with a certificate for `localhost` signed by a CA
//! made for the test (`openssl`): libpq's `sslmode` meanings, the
//! certificate checked when the connection string says so, and a clear
//! refusal when it does not match.

use crate::common;

use common::pg::{server_work_dir, started_s1_with};
use common::*;
use pgbisect::server::{RunAs, RunningServer, SocketDir};
use pgbisect::store::postgres::PostgresStore;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CA's certificate, and the server's certificate and key, in `dir`.
struct Certs {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a certificate it signed for the name `localhost` only.
fn certs(dir: &Path, run_as: &RunAs) -> Certs {
    let days = ["-days", "2"];
    openssl(
        dir,
        &[
            &["req", "-x509", "-newkey", "rsa:2048", "-nodes"][..],
            &days,
            &[
                "-subj",
                "/CN=pgbisect test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
    openssl(
        dir,
        &[
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
            ][..],
            &[
                "-CAcreateserial",
                "-extfile",
                "san.ext",
                "-out",
                "server.crt",
            ],
            &days,
        ]
        .concat(),
    );
    let key = dir.join("server.key");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    run_as.hand_over(&key).unwrap();
    Certs {
        ca: dir.join("ca.crt"),
        cert: dir.join("server.crt"),
        key,
    }
}

/// A server on 127.0.0.1 with TLS on, and the work dir that holds it.
fn tls_server() -> Option<(RunningServer, Certs, SocketDir, tempfile::TempDir)> {
    let bin = pg_bin()?;
    let work = server_work_dir();
    let run_as = RunAs::resolve(None).unwrap();
    let sockets = SocketDir::create(&run_as).unwrap();
    let certs = certs(work.path(), &run_as);
    let (cert, key) = (
        certs.cert.display().to_string(),
        certs.key.display().to_string(),
    );
    let server = started_s1_with(
        &bin,
        work.path(),
        ("s1", &sockets),
        &run_as,
        &[
            ("listen_addresses", "127.0.0.1"),
            ("ssl", "on"),
            ("ssl_cert_file", &cert),
            ("ssl_key_file", &key),
        ],
    );
    server.psql("CREATE DATABASE perf").unwrap();
    Some((server, certs, sockets, work))
}

/// How many client connections to `perf` are encrypted, as the server sees them.
fn encrypted(server: &RunningServer) -> String {
    server
        .psql(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE ssl AND datname = 'perf'",
        )
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn the_store_connects_over_tls_and_checks_the_certificate_as_sslmode_says() {
    let Some((server, certs, _sockets, _work)) = tls_server() else {
        return;
    };
    let port = server.conn("perf").port;
    let ca = certs.ca.display().to_string();
    let at =
        |host: &str, tls: &str| format!("host={host} port={port} user=postgres dbname=perf {tls}");

    let full = PostgresStore::connect(
        &at(
            "localhost",
            &format!("sslmode=verify-full sslrootcert={ca}"),
        ),
        "m",
    )
    .unwrap();
    assert_eq!(encrypted(&server), "1", "verify-full with the CA");
    drop(full);

    // The certificate names localhost, not 127.0.0.1.
    let err = PostgresStore::connect(
        &at(
            "127.0.0.1",
            &format!("sslmode=verify-full sslrootcert={ca}"),
        ),
        "m",
    )
    .err()
    .expect("a certificate for another name is refused")
    .to_string();
    assert!(err.contains("cannot connect over TLS"), "{err}");
    assert!(err.contains("verify-full"), "{err}");
    let url =
        format!("postgres://postgres@127.0.0.1:{port}/perf?sslmode=verify-ca&sslrootcert={ca}");
    let ca_only = PostgresStore::connect(&url, "m").expect("verify-ca does not check the name");
    drop(ca_only);

    // Without the CA, the system does not trust the certificate.
    let err = PostgresStore::connect(&at("localhost", "sslmode=verify-full"), "m")
        .err()
        .expect("a certificate of an unknown CA is refused")
        .to_string();
    assert!(err.contains("cannot connect over TLS"), "{err}");

    // libpq's require: encrypted, the certificate not checked.
    let require = PostgresStore::connect(&at("127.0.0.1", "sslmode=require"), "m").unwrap();
    assert_eq!(encrypted(&server), "1", "require");
    drop(require);
    let plain = PostgresStore::connect(&at("127.0.0.1", "sslmode=disable"), "m").unwrap();
    assert_eq!(encrypted(&server), "0", "disable");
    drop(plain);

    let err = PostgresStore::connect(
        &at(
            "localhost",
            "sslmode=verify-full sslrootcert=/nonexistent/ca.pem",
        ),
        "m",
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("sslrootcert /nonexistent/ca.pem is not a readable PEM"),
        "{err}"
    );
}
