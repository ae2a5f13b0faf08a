use std::process::ExitCode;

fn main() -> ExitCode {
    match pgbisect::app::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("pgbisect: error: {err:#}");
            ExitCode::from(pgbisect::app::exit_code_for(&err))
        }
    }
}
