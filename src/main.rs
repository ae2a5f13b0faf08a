use std::process::ExitCode;

fn main() -> ExitCode {
    match pgbisect::cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("pgbisect: error: {err:#}");
            ExitCode::from(pgbisect::cli::EXIT_RUNTIME_ERROR)
        }
    }
}
