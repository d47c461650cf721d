//! Thin binary: parse arguments, run, map the outcome to an exit code
//! (0 valid/ok, 1 invalid/infeasible, 2 bad input or error).

use std::process::ExitCode;

fn main() -> ExitCode {
    match offcert::cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("offcert: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
