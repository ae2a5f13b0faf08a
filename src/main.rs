use std::process::ExitCode;

fn main() -> ExitCode {
    match pgbisect::commands::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("pgbisect: error: {err:#}");
            ExitCode::from(pgbisect::commands::exit_code_for(&err))
        }
    }
}
