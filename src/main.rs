//! Thin binary: parse arguments, run, map the outcome to an exit code
//! (0 valid/ok, 1 invalid/infeasible, 2 bad input or error).
//!
//! Owns: the exit codes.
//! Must not import: library internals: it calls `offcert::cli::run` only.

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
