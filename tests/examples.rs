//! The examples of README.md and of the manual (`pace man`) run as
//! written, in document order, in one temporary directory, so that the
//! files one example saves are there for the next (`run.json`, then
//! `pace report run.json`).
//!
//! What is changed, and only that: every URL's host and port are those of
//! a built-in server on a free port (over TLS for https://, its
//! certificate trusted through `SSL_CERT_FILE`, as a machine's store
//! would), `URL` is that server's URL, and the times are short (`-d1s`,
//! stages of 200 ms, `--start-at` 1 s ahead, no linger), appended where
//! the last option wins. `pace serve` examples listen on port 0 and are
//! stopped once they listen. HOME is the temporary directory. The files
//! the examples name without making them (`targets.txt`, `thing.json`,
//! `ca.pem`, ...) are made first. Examples that need what a test cannot
//! have are skipped, each with its reason ([`SKIPPED`]); lines that are
//! not pace's own (docker, cargo, openssl, man) are not run.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{built_in_certificate_pem, load_lock, serve, serve_options, DieWithTest};

/// The longest an example may take (`pace demo` takes 10 s).
const LIMIT: Duration = Duration::from_secs(60);

/// Examples not run, by a part of their line, and why.
const SKIPPED: &[(&str, &str)] = &[
    ("> /etc/", "installs for every user (as root)"),
    ("> /usr/", "installs for every user (as root)"),
    ("--proxy", "needs an HTTP proxy (tests/proxy.rs runs pace through tinyproxy)"),
    ("--metrics-push", "needs a Prometheus that takes remote write (tests/metrics.rs)"),
    ("--unix-socket /run/app.sock", "needs a server on that socket (tests/reach.rs)"),
    ("--tls-server-name api.internal", "needs a certificate for api.internal"),
    ("pace merge s0.json s1.json s2.json", "needs the results of the other two machines"),
];

/// A command line of an example: pace's, after any `NAME=value`.
fn is_pace(line: &str) -> bool {
    let words = line.split_whitespace().skip_while(|word| word.contains('='));
    matches!(words.clone().next(), Some("pace")) || line.starts_with("source <(pace ")
}

/// The lines of README.md's `sh` blocks, continuations joined.
fn readme_lines() -> Vec<String> {
    let readme = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut lines = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => pending += start,
            None => lines.push(std::mem::take(&mut pending) + line),
        }
    }
    lines
}

/// The lines of the manual's example blocks (`.nf` to `.fi`), as typed.
fn manual_lines() -> Vec<String> {
    let page = Command::new(env!("CARGO_BIN_EXE_pace")).arg("man").output().unwrap().stdout;
    let page = String::from_utf8(page).unwrap();
    let mut lines = Vec::new();
    let mut in_block = false;
    for line in page.lines() {
        match line {
            ".nf" => in_block = true,
            ".fi" => in_block = false,
            _ if in_block => {
                let typed = line.replace("\\-", "-").replace("\\e", "\\");
                lines.push(typed.strip_prefix("\\&").unwrap_or(&typed).to_string());
            }
            _ => {}
        }
    }
    lines
}

/// The line without its comment.
fn without_comment(line: &str) -> &str {
    line.find(" #").map_or(line, |at| &line[..at]).trim_end()
}

/// Where the examples' URLs go.
struct Servers {
    http: String,
    https: String,
}

impl Servers {
    /// `word` (maybe in quotes) with a URL's host and port replaced by the
    /// local server's, its path kept; `URL` is the server's URL.
    fn local(&self, word: &str) -> String {
        if word == "URL" {
            return format!("http://{}/", self.http);
        }
        let quote = word.starts_with(['\'', '"']);
        let bare = if quote { &word[1..] } else { word };
        let (scheme, server) = match bare {
            _ if bare.starts_with("http://") => ("http://", &self.http),
            _ if bare.starts_with("https://") => ("https://", &self.https),
            _ => return word.to_string(),
        };
        let rest = &bare[scheme.len()..];
        let authority_end = rest.find(['/', '?', '\'', '"']).unwrap_or(rest.len());
        let userinfo = rest[..authority_end].rfind('@').map_or("", |at| &rest[..=at]);
        let opening = if quote { &word[..1] } else { "" };
        format!("{opening}{scheme}{userinfo}{server}{}", &rest[authority_end..])
    }

    /// The example as it runs here (see the module's comment).
    fn rewrite(&self, line: &str) -> String {
        let line = line.replace("$(date +%s) + 30 ))", "$(date +%s) + 1 ))");
        let mut words: Vec<String> = line.split(' ').map(|word| self.local(word)).collect();
        if let Some(at) = words.iter().position(|word| word == "--stages") {
            words[at + 1] = shortened_stages(&words[at + 1]);
        }
        let subcommand = ["serve", "demo", "merge", "report", "compare", "completions", "man"];
        let pace = words.iter().position(|word| word == "pace").unwrap_or(0);
        let benchmark =
            !words.get(pace + 1).is_some_and(|word| subcommand.contains(&word.as_str()))
                && !line.starts_with("source");
        let mut line = words.join(" ");
        if benchmark {
            if !line.contains("--stages") {
                line += " -d1s";
            }
            for (option, short) in [
                ("--warmup", " --warmup 200ms"),
                ("--metrics-linger", " --metrics-linger 0s"),
                ("--metrics ", " --metrics 127.0.0.1:0"),
            ] {
                if line.contains(option) {
                    line += short;
                }
            }
        }
        line
    }
}

/// `30s:1000,2m:1000,30s:0` as `200ms:1000,200ms:1000,200ms:0`.
fn shortened_stages(stages: &str) -> String {
    let short = stages.split(',').map(|stage| match stage.split_once(':') {
        Some((_, rate)) => format!("200ms:{rate}"),
        None => stage.to_string(),
    });
    short.collect::<Vec<_>>().join(",")
}

/// The files the examples name without making them.
fn write_fixtures(dir: &Path, servers: &Servers, certificate_pem: &str) {
    let url = format!("http://{}", servers.http);
    let targets = format!(
        "# targets.txt\nGET {url}/items?page=1\nAuthorization: Bearer abc\n\nPOST {url}/items\n\
         Content-Type: application/json\n@bodies/item.json\nHEAD {url}/health\n"
    );
    fs::write(dir.join("targets.txt"), targets).unwrap();
    fs::create_dir_all(dir.join("bodies")).unwrap();
    fs::write(dir.join("bodies/item.json"), "{\"name\":\"pace\"}").unwrap();
    fs::write(dir.join("thing.json"), "{\"a\":1}").unwrap();
    let echo = "syntax = \"proto3\"; package demo;\n\
                service Echo { rpc Say (Note) returns (Note); }\n\
                message Note { string text = 1; }\n";
    fs::write(dir.join("echo.proto"), echo).unwrap();
    for name in ["serve.pem", "ca.pem", "cert.pem"] {
        fs::write(dir.join(name), certificate_pem).unwrap();
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["client.test".to_string()]).unwrap();
    fs::write(dir.join("client.pem"), params.self_signed(&key).unwrap().pem()).unwrap();
    fs::write(dir.join("client-key.pem"), key.serialize_pem()).unwrap();
    for home in [".zfunc", ".local/share/bash-completion/completions", ".config/fish/completions"] {
        fs::create_dir_all(dir.join(home)).unwrap();
    }
    // Saved runs: one to report, two to compare, two shards of one plan
    // to merge.
    let saved = [
        ("run.json", "0/1"),
        ("old.json", "0/1"),
        ("new.json", "0/1"),
        ("shard-0.json", "0/2"),
        ("shard-1.json", "1/2"),
    ];
    for (file, shard) in saved {
        let args = ["-R200", "-d500ms", "-p", "100ms", "--shard", shard, "-e", "-o", file, &url];
        let out = pace_in(dir, &args).output().unwrap();
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

fn pace_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pace"));
    command.args(args).current_dir(dir).stdin(Stdio::null());
    command
}

/// `pace serve ...` as written, on port 0: it must say it listens.
fn run_server_example(dir: &Path, line: &str) {
    let words: Vec<&str> = line
        .split_whitespace()
        .take_while(|word| !word.starts_with("2>") && *word != "&")
        .collect();
    let args: Vec<&str> = words[1..].iter().copied().chain(["--port", "0"]).collect();
    let log = dir.join("example-serve.log");
    let mut server = pace_in(dir, &args);
    server.stderr(fs::File::create(&log).unwrap()).stdout(Stdio::null()).die_with_test();
    let mut child = server.spawn().unwrap();
    let deadline = Instant::now() + LIMIT;
    let listening = loop {
        let said = fs::read_to_string(&log).unwrap_or_default();
        if said.contains("listening") || Instant::now() > deadline {
            break said.contains("listening");
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{line}: pace serve exited ({status}): {said}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening, "{line}: no 'listening' line within {LIMIT:?}");
}

/// Runs `command` to its end, its stderr kept; kills it past `LIMIT`.
fn run_within(mut command: Command, stderr: &Path) -> (ExitStatus, String) {
    command.stdout(Stdio::null()).stderr(fs::File::create(stderr).unwrap());
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("not done within {LIMIT:?}: {}", fs::read_to_string(stderr).unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (status, fs::read_to_string(stderr).unwrap_or_default())
}

#[test]
fn the_readmes_and_the_manuals_examples_run_as_written() {
    let _load = load_lock();
    // With its gRPC service, for the examples that call it (other gRPC
    // calls are no example that runs).
    let http = serve(pace::serve::ServeOptions { grpc: true, ..serve_options() });
    let https =
        serve(pace::serve::ServeOptions { tls: true, http3: true, grpc: true, ..serve_options() });
    let servers = Servers { http: http.addr().to_string(), https: https.addr().to_string() };
    let dir = tempfile::tempdir().unwrap();
    let certificate = built_in_certificate_pem();
    write_fixtures(dir.path(), &servers, &certificate);
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pace"), bin.join("pace")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    let mut ran = std::collections::BTreeSet::new();
    let lines = readme_lines().into_iter().chain(manual_lines());
    for line in lines.map(|line| without_comment(&line).to_string()).filter(|l| is_pace(l)) {
        if let Some((_, why)) = SKIPPED.iter().find(|(part, _)| line.contains(part)) {
            eprintln!("example not run ({why}): {line}");
            continue;
        }
        if !ran.insert(line.clone()) {
            continue;
        }
        if line.starts_with("pace serve") {
            run_server_example(dir.path(), &line);
            continue;
        }
        let typed = servers.rewrite(&line);
        let mut bash = Command::new("bash");
        bash.args(["-c", &typed])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("HOME", dir.path())
            .env("SSL_CERT_FILE", dir.path().join("serve.pem"))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .stdin(Stdio::null())
            .die_with_test();
        let (status, stderr) = run_within(bash, &dir.path().join("example.stderr"));
        let gate = line.contains("--slo") || line.contains("--max-regression");
        let code = status.code();
        assert!(
            code == Some(0) || (gate && code == Some(4)),
            "{line}\nran as: {typed}\nexit {code:?}\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{line}\n{stderr}");
    }
    assert!(ran.len() > 40, "only {} examples found", ran.len());
}
