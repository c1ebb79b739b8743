//! How a run was made, so that a saved result can be reproduced: the
//! command line (its secrets masked), the pace version and the host. The
//! JSON and HTML reports record it; `pace report` prints it again.
//!
//! Masked: the password of any URL (`user:***@`), and the value of any
//! header that carries a credential (`Authorization: ***`), wherever it
//! stands on the line (`-H 'Authorization: x'`, `-HAuthorization:x`,
//! `--header=...`). The masked line is for reading, not for running: a
//! masked value has to be given again.

use std::ffi::OsString;
use std::io::{self, Write};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::units::format_rfc3339;

/// What replaces a secret.
const MASK: &str = "***";

/// Headers whose values are credentials, and words that make a header
/// name one (`X-Api-Key`, `X-Auth-Token`).
const SECRET_HEADERS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "set-cookie"];
const SECRET_WORDS: [&str; 6] = ["token", "secret", "password", "api-key", "apikey", "auth"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The program and its arguments, secrets masked.
    pub command_line: Vec<String>,
    /// The pace that ran it.
    pub version: String,
    /// The machine it ran on.
    pub host: String,
    /// RFC 3339: when the run began sending (its plan's time zero, before
    /// any warm-up). Recorded with the result; a live run's is known
    /// from its result ([`Provenance::started`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
}

impl Provenance {
    /// This process: `args` is its whole command line, the program first.
    pub fn of_this_process(args: &[OsString]) -> Provenance {
        let mut command_line: Vec<String> =
            args.iter().map(|a| mask(&a.to_string_lossy())).collect();
        if let Some(program) = command_line.first_mut() {
            // The name it was run by, not where it lies.
            *program = program.rsplit('/').next().unwrap_or("pace").to_string();
        }
        let version = env!("CARGO_PKG_VERSION").to_string();
        Provenance { command_line, version, host: host_name(), started_at: None }
    }

    /// When the run began sending: as recorded, else `began` (the live
    /// run's, from its result).
    pub fn started(&self, began: SystemTime) -> String {
        self.started_at.clone().unwrap_or_else(|| format_rfc3339(began))
    }

    /// What a report records: this, with the time the run began.
    pub fn with_start(&self, began: SystemTime) -> Provenance {
        Provenance { started_at: Some(self.started(began)), ..self.clone() }
    }

    /// `pace report`'s first lines, on the saved run it reports:
    ///
    /// ```text
    /// Saved run: pace 0.1.0 on loadgen-1, started 2026-11-26T20:31:07.25Z
    ///   pace -t2 -c50 -d30s -R2000 -e -o run.json http://10.0.0.7:8080/
    /// ```
    pub fn write_lines(&self, out: &mut dyn Write, began: SystemTime) -> io::Result<()> {
        let started = self.started(began);
        writeln!(out, "Saved run: pace {} on {}, started {started}", self.version, self.host)?;
        writeln!(out, "  {}", self.shell_line())
    }

    /// The command line as a shell would take it (words quoted where
    /// needed).
    pub fn shell_line(&self) -> String {
        self.command_line.iter().map(|word| shell_word(word)).collect::<Vec<_>>().join(" ")
    }
}

/// The machine's name, as `hostname` prints it.
fn host_name() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// One argument with its secrets masked.
fn mask(arg: &str) -> String {
    mask_header(arg).unwrap_or_else(|| masked_url(arg))
}

/// `arg` with the value of a credential header masked, if it holds one
/// (after `-H` or `--header=` or any abbreviation of it, or alone).
fn mask_header(arg: &str) -> Option<String> {
    let header_start = match arg.strip_prefix("--") {
        Some(long) => long.find('=').map(|eq| eq + 3)?,
        None if arg.starts_with("-H") => 2,
        None => 0,
    };
    let (prefix, header) = arg.split_at(header_start);
    let (name, _) = header.split_once(':')?;
    let lower = name.trim().to_ascii_lowercase();
    let is_name = !lower.is_empty()
        && lower.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let secret = SECRET_HEADERS.contains(&lower.as_str())
        || SECRET_WORDS.iter().any(|word| lower.contains(word));
    (is_name && secret).then(|| format!("{prefix}{name}: {MASK}"))
}

/// `arg` with the password of a URL in it masked (`http://u:***@h/`):
/// what the JSON and HTML reports show of a URL.
pub fn masked_url(arg: &str) -> String {
    let Some(scheme_end) = arg.find("://") else { return arg.to_string() };
    let rest = &arg[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return arg.to_string() };
    let user_info = &rest[..at];
    match user_info.split_once(':') {
        Some((user, _)) => {
            format!("{}{user}:{MASK}{}", &arg[..scheme_end + 3], &rest[at..])
        }
        None => arg.to_string(),
    }
}

/// `word` as one shell word: as it is when it has nothing a shell reads,
/// else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(args: &[&str]) -> Vec<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Provenance::of_this_process(&args).command_line
    }

    #[test]
    fn credentials_are_masked_wherever_they_stand() {
        assert_eq!(
            masked(&[
                "/usr/local/bin/pace",
                "-H",
                "Authorization: Bearer abc",
                "-HX-Api-Key:k1",
                "--header=cookie: a=b",
                "--head=Proxy-Authorization: Basic eA==",
                "-H",
                "Accept: */*",
                "--proxy",
                "http://u:secret@proxy:3128",
                "https://user:pw@example.com/a?b=c@d",
            ]),
            [
                "pace",
                "-H",
                "Authorization: ***",
                "-HX-Api-Key: ***",
                "--header=cookie: ***",
                "--head=Proxy-Authorization: ***",
                "-H",
                "Accept: */*",
                "--proxy",
                "http://u:***@proxy:3128",
                "https://user:***@example.com/a?b=c@d",
            ]
        );
    }

    #[test]
    fn what_is_no_secret_is_kept() {
        let line =
            ["pace", "-t2", "--duration=10s", "http://u@h:80/x", "http://h/a:b@c", "--latency"];
        assert_eq!(masked(&line), line);
    }

    #[test]
    fn the_line_reads_as_a_shell_line() {
        let provenance = Provenance {
            command_line: ["pace", "-H", "Authorization: ***", "it's", "http://h/?a=1&b=2"]
                .map(String::from)
                .to_vec(),
            version: "0.1.0".into(),
            host: "h".into(),
            started_at: None,
        };
        assert_eq!(
            provenance.shell_line(),
            r"pace -H 'Authorization: ***' 'it'\''s' 'http://h/?a=1&b=2'"
        );
    }
}
