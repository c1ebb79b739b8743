//! The `pace` binary; everything is in the library (see `src/app.rs`).

fn main() -> std::process::ExitCode {
    pace::main()
}
