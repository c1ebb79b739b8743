//! The `pace` program: read the command line, run the command, turn the
//! outcome into an exit code (the table is in `src/error.rs`).

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::cli::{self, Command};
use crate::error::Error;
use crate::provenance::Provenance;

/// The whole program, for `src/main.rs`.
pub fn main() -> ExitCode {
    install_panic_hook();
    let args: Vec<OsString> = std::env::args_os().collect();
    let code =
        match cli::parse(args.iter().skip(1).cloned()).and_then(|command| run(command, &args)) {
            Ok(code) => code,
            Err(err) => {
                // Nothing more can be done if stderr is gone too.
                let _ = writeln!(io::stderr(), "pace: {err}");
                err.exit_code()
            }
        };
    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
}

/// Runs one command (of the command line `args`) and returns its exit
/// code.
fn run(command: Command, args: &[OsString]) -> Result<i32, Error> {
    match command {
        Command::Bench { mut bench, print_version } => {
            bench.config.provenance = Some(Provenance::of_this_process(args));
            // Refused before anything is printed, the header included.
            bench.config.check_start_at(std::time::SystemTime::now())?;
            if print_version {
                if let Err(err) = print(&cli::version_line()) {
                    return stdout_failed(err);
                }
            }
            crate::run::bench(&bench)
        }
        Command::Serve(opts) => {
            let on = match &opts.unix_socket {
                Some(path) => format!("unix:{}", path.display()),
                None => opts.bind.to_string(),
            };
            crate::serve::run(opts).map(|()| 0).map_err(|err| {
                Error::Setup(format!("cannot serve on {on}: {}", crate::error::io_reason(&err)))
            })
        }
        Command::Demo { protocol } => crate::demo::run(protocol),
        Command::Merge(args) if crate::search::merged::asked(&args) => {
            crate::search::merged::run(&args)
        }
        Command::Merge(args) => crate::merge::run(&args),
        Command::Report(args) => crate::merge::report(&args),
        Command::Compare(args) => crate::compare::run(&args),
        Command::Search(mut search) => {
            search.bench.config.provenance = Some(Provenance::of_this_process(args));
            // A ladder's start already past is refused before anything.
            search.bench.config.check_start_at(std::time::SystemTime::now())?;
            crate::search::run(&search)
        }
        Command::Help(help) => print(&help.text()).map_or_else(stdout_failed, |()| Ok(0)),
        Command::Version(text) | Command::Generated(text) => {
            print(&text).map_or_else(stdout_failed, |()| Ok(0))
        }
    }
}

/// Writes `text` to stdout, ending it with exactly one newline.
fn print(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{}", text.trim_end_matches('\n'))?;
    stdout.flush()
}

/// Stdout cannot be written. A closed pipe (`pace -h | head -1`) means the
/// reader has all it wants: stop with exit code 0, as ripgrep does.
fn stdout_failed(err: io::Error) -> Result<i32, Error> {
    if err.kind() == io::ErrorKind::BrokenPipe {
        Ok(0)
    } else {
        Err(Error::Setup(format!("cannot write to stdout: {}", crate::error::io_reason(&err))))
    }
}

/// A bug must still end in one line on stderr, never in a backtrace:
/// RUST_BACKTRACE may be set in the user's environment.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown cause");
        let message = message.replace('\n', " ");
        let _ = writeln!(
            io::stderr(),
            "pace: internal error{location}: {message} (please report this bug)"
        );
    }));
}
