//! `pace serve <options>`: the built-in target server's command line, and
//! `pace demo`, which has no options of its own.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::options::{bad_value, time, unexpected_word, Item, Options, Spec};
use super::{Command, Help};
use crate::error::Error;
use crate::protocol::Protocol;
use crate::serve::{ServeOptions, Stall};
use crate::units::parse_count;

/// Largest `--body-size`: the server keeps the body in memory.
const MAX_BODY_SIZE: usize = 1_000_000_000;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum ServeFlag {
    Port,
    Bind,
    Threads,
    BodySize,
    Latency,
    Capacity,
    StallAt,
    StallFor,
    Tls,
    Http3,
    Grpc,
    UnixSocket,
    HeadTimeout,
    Help,
}

/// In the order of `pace serve -h`. The defaults the help states are
/// [`ServeOptions::default`]'s (a test checks them).
pub(super) const SERVE_SPECS: &[Spec<ServeFlag>] = &[
    Spec::new(Some('p'), "port", ServeFlag::Port)
        .takes("N")
        .help(&["Port to listen on (default 8080, 0 = any free port)"]),
    Spec::new(None, "bind", ServeFlag::Bind)
        .takes("A")
        .help(&["Address to listen on (default 127.0.0.1;", "e.g. ::1, 0.0.0.0)"]),
    Spec::new(Some('t'), "threads", ServeFlag::Threads)
        .takes("N")
        .help(&["Number of threads to use (default 1)"]),
    Spec::new(None, "body-size", ServeFlag::BodySize)
        .takes("N")
        .help(&["Response body size in bytes (default 13)"]),
    Spec::new(None, "latency", ServeFlag::Latency)
        .takes("T")
        .help(&["Delay before each response (default none)"]),
    Spec::new(None, "stall-at", ServeFlag::StallAt)
        .takes("T")
        .help(&["Stop answering this long after start..."]),
    Spec::new(None, "stall-for", ServeFlag::StallFor)
        .takes("T")
        .help(&["...for this long (both or neither)"]),
    Spec::new(None, "capacity", ServeFlag::Capacity).takes("N").help(&[
        "Serve at most N requests/s, one at a time in",
        "the order read: above N a queue builds",
    ]),
    Spec::new(None, "tls", ServeFlag::Tls)
        .help(&["Serve HTTPS with a self-signed certificate", "(benchmark it with pace -k)"]),
    Spec::new(None, "http3", ServeFlag::Http3)
        .help(&["Also serve HTTP/3 (QUIC, UDP) on the same port", "as HTTPS; implies --tls"]),
    Spec::new(None, "grpc", ServeFlag::Grpc).help(&[
        "gRPC calls go to the service pace.Echo",
        "(Say, Listen, Chat), with reflection",
        "(else any method echoes its message)",
    ]),
    Spec::new(None, "unix-socket", ServeFlag::UnixSocket).takes_file("P").help(&[
        "Listen on the Unix socket P instead of TCP",
        "(e.g. --unix-socket /tmp/pace.sock; benchmark",
        "it with pace --unix-socket /tmp/pace.sock URL)",
    ]),
    Spec::new(None, "head-timeout", ServeFlag::HeadTimeout).takes("T").help(&[
        "Close a connection whose request head (or TLS",
        "handshake, or HTTP/2 preface) is unfinished",
        "after T (default 30s, 0 = never; a connection",
        "idle between requests is not timed)",
    ]),
    Spec::new(Some('h'), "help", ServeFlag::Help).help(&["Print this help"]),
];

/// Parses the words after `pace serve`.
pub(super) fn parse_serve(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, SERVE_SPECS);
    let mut opts = ServeOptions::default();
    let (mut ip, mut port) = (opts.bind.ip(), opts.bind.port());
    let mut stall_at = None;
    let mut stall_for = None;
    // --port or --bind was typed (they mean nothing with --unix-socket).
    let mut tcp_typed = None;
    while let Some(item) = options.next()? {
        let found = match item {
            Item::Word(word) => return Err(unexpected_word("serve", word)),
            Item::Option(found) => found,
        };
        let name = found.name.as_str();
        match found.flag {
            ServeFlag::Port => {
                port = port_number(name, &options.text(name)?)?;
                tcp_typed = Some(name.to_string());
            }
            ServeFlag::Bind => {
                ip = ip_address(name, &options.text(name)?)?;
                tcp_typed = Some(name.to_string());
            }
            ServeFlag::Threads => opts.threads = count(name, &options.text(name)?)?,
            ServeFlag::BodySize => opts.body_size = body_size(name, &options.text(name)?)?,
            ServeFlag::Latency => opts.latency = time(name, &options.text(name)?)?,
            ServeFlag::StallAt => stall_at = Some(time(name, &options.text(name)?)?),
            ServeFlag::StallFor => stall_for = Some(time(name, &options.text(name)?)?),
            ServeFlag::Capacity => {
                let capacity = count(name, &options.text(name)?)?;
                if capacity == 0 {
                    return Err(bad_value(name, "the capacity must be at least 1 request/s"));
                }
                opts.capacity = Some(capacity as u64);
            }
            ServeFlag::Tls => opts.tls = true,
            ServeFlag::Http3 => {
                opts.http3 = true;
                opts.tls = true;
            }
            ServeFlag::Grpc => opts.grpc = true,
            ServeFlag::UnixSocket => {
                let path = PathBuf::from(options.value(name)?);
                if path.as_os_str().is_empty() {
                    return Err(bad_value(name, "the path of a socket is needed"));
                }
                opts.unix_socket = Some(path);
            }
            ServeFlag::HeadTimeout => {
                opts.head_timeout = Some(time(name, &options.text(name)?)?).filter(|t| !t.is_zero())
            }
            ServeFlag::Help => return Ok(Command::Help(Help::Of("serve"))),
        }
    }
    if opts.threads == 0 {
        return Err(Error::Usage("-t/--threads must be at least 1".into()));
    }
    if let (Some(option), Some(_)) = (&tcp_typed, &opts.unix_socket) {
        return Err(Error::Usage(format!(
            "{option} cannot be used with --unix-socket: the server listens on the socket only"
        )));
    }
    if opts.http3 && opts.unix_socket.is_some() {
        return Err(Error::Usage(
            "--http3 cannot be used with --unix-socket: HTTP/3 runs over UDP".into(),
        ));
    }
    opts.bind = SocketAddr::new(ip, port);
    opts.stall = stall(stall_at, stall_for)?;
    Ok(Command::Serve(opts))
}

/// Parses the words after `pace demo`: only `-h/--help`.
pub(super) fn parse_demo(args: Vec<OsString>) -> Result<Command, Error> {
    let mut options = Options::new(args, DEMO_SPECS);
    let (mut http2, mut http3) = (false, false);
    while let Some(item) = options.next()? {
        match item {
            Item::Option(found) => match found.flag {
                DemoFlag::Http2 => http2 = true,
                DemoFlag::Http3 => http3 = true,
                DemoFlag::Help => return Ok(Command::Help(Help::Of("demo"))),
            },
            Item::Word(word) => return Err(unexpected_word("demo", word)),
        }
    }
    let protocol = match (http2, http3) {
        (true, true) => {
            return Err(Error::Usage("--http2 and --http3 cannot be used together".into()))
        }
        (true, false) => Protocol::Http2,
        (false, true) => Protocol::Http3,
        (false, false) => Protocol::Http1,
    };
    Ok(Command::Demo { protocol })
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum DemoFlag {
    Http2,
    Http3,
    Help,
}

pub(super) const DEMO_SPECS: &[Spec<DemoFlag>] = &[
    Spec::new(None, "http2", DemoFlag::Http2).help(&["Over HTTP/2 (h2c) instead of HTTP/1.1"]),
    Spec::new(None, "http3", DemoFlag::Http3)
        .help(&["Over HTTP/3 (QUIC, with the server's own", "certificate) instead of HTTP/1.1"]),
    Spec::new(Some('h'), "help", DemoFlag::Help).help(&["Print this help"]),
];

/// `--stall-at` and `--stall-for` only mean something together.
fn stall(at: Option<Duration>, length: Option<Duration>) -> Result<Option<Stall>, Error> {
    match (at, length) {
        (None, None) => Ok(None),
        (Some(_), Some(length)) if length.is_zero() => {
            Err(Error::Usage("--stall-for must be greater than 0".into()))
        }
        (Some(at), Some(length)) => Ok(Some(Stall { at, length })),
        (Some(_), None) => Err(Error::Usage("--stall-at needs --stall-for".into())),
        (None, Some(_)) => Err(Error::Usage("--stall-for needs --stall-at".into())),
    }
}

/// A port number; 0 lets the system pick a free one.
fn port_number(option: &str, text: &str) -> Result<u16, Error> {
    text.parse().map_err(|_| bad_value(option, format!("'{text}' is not a port number (0-65535)")))
}

/// An IP address, IPv6 with or without brackets (`::1`, `[::1]`).
fn ip_address(option: &str, text: &str) -> Result<IpAddr, Error> {
    let unbracketed = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).unwrap_or(text);
    unbracketed.parse().map_err(|_| {
        bad_value(
            option,
            format!("'{text}' is not an IP address (examples: 127.0.0.1, ::1, 0.0.0.0)"),
        )
    })
}

fn count(option: &str, text: &str) -> Result<usize, Error> {
    parse_count(text).map_err(|err| bad_value(option, err))
}

fn body_size(option: &str, text: &str) -> Result<usize, Error> {
    let size = count(option, text)?;
    if size > MAX_BODY_SIZE {
        return Err(bad_value(option, format!("'{text}' is more than 1G bytes")));
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn serve(line: &[&str]) -> ServeOptions {
        let mut words = vec![OsString::from("serve")];
        words.extend(line.iter().map(OsString::from));
        match parse(words) {
            Ok(Command::Serve(opts)) => opts,
            Ok(_) => panic!("{line:?}: not serve"),
            Err(err) => panic!("{line:?}: {err}"),
        }
    }

    fn error(line: &[&str]) -> String {
        match parse(line.iter().map(OsString::from)) {
            Err(Error::Usage(message)) => message,
            Err(other) => panic!("{line:?}: not a usage error: {other}"),
            Ok(_) => panic!("{line:?}: accepted"),
        }
    }

    #[test]
    fn defaults() {
        let opts = serve(&[]);
        assert_eq!(opts.bind, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(opts.threads, 1);
        assert_eq!(opts.body_size, ServeOptions::default().body_size);
        assert_eq!(opts.latency, Duration::ZERO);
        assert!(opts.stall.is_none());
        assert!(!opts.tls);
        assert!(!opts.http3);
        assert_eq!(opts.head_timeout, Some(Duration::from_secs(30)));
        // The help states it.
        assert!(super::super::usage::of("serve").contains("after T (default 30s, 0 = never;"));
    }

    #[test]
    fn every_option() {
        let opts = serve(&[
            "-p9000",
            "--bind",
            "::1",
            "-t",
            "4",
            "--body-size=1k",
            "--lat",
            "2ms",
            "--stall-at",
            "1s",
            "--stall-for=500ms",
            "--tls",
            "--head-timeout",
            "1.5s",
        ]);
        assert_eq!(opts.bind, "[::1]:9000".parse().unwrap());
        assert_eq!(opts.threads, 4);
        assert_eq!(opts.body_size, 1000);
        assert_eq!(opts.latency, Duration::from_millis(2));
        let stall = opts.stall.expect("stall");
        assert_eq!((stall.at, stall.length), (Duration::from_secs(1), Duration::from_millis(500)));
        assert!(opts.tls);
        assert_eq!(opts.head_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(serve(&["--head-timeout=0"]).head_timeout, None);
    }

    #[test]
    fn http3_implies_tls_and_needs_udp() {
        let opts = serve(&["--http3"]);
        assert!(opts.http3 && opts.tls);
        assert_eq!(
            error(&["serve", "--http3", "--unix-socket", "/tmp/p.sock"]),
            "--http3 cannot be used with --unix-socket: HTTP/3 runs over UDP"
        );
    }

    #[test]
    fn bind_addresses() {
        assert_eq!(serve(&["--bind", "0.0.0.0"]).bind, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(serve(&["--bind=[::1]", "--port", "1"]).bind, "[::1]:1".parse().unwrap());
        assert_eq!(serve(&["-p", "0"]).bind.port(), 0);
        assert!(error(&["serve", "--bind", "localhost"]).contains("is not an IP address"));
    }

    #[test]
    fn unix_socket() {
        assert_eq!(serve(&[]).unix_socket, None);
        let opts = serve(&["--unix-socket", "/tmp/p.sock", "-t2"]);
        assert_eq!(opts.unix_socket.as_deref(), Some(std::path::Path::new("/tmp/p.sock")));
        assert_eq!(
            error(&["serve", "--unix-socket=/tmp/p.sock", "-p", "1"]),
            "-p cannot be used with --unix-socket: the server listens on the socket only"
        );
        assert_eq!(
            error(&["serve", "--bind", "::1", "--unix-socket", "/tmp/p.sock"]),
            "--bind cannot be used with --unix-socket: the server listens on the socket only"
        );
        assert!(error(&["serve", "--unix-socket", ""]).contains("the path of a socket is needed"));
    }

    #[test]
    fn errors() {
        assert_eq!(error(&["serve", "--stall-at", "1s"]), "--stall-at needs --stall-for");
        assert_eq!(error(&["serve", "--stall-for", "1s"]), "--stall-for needs --stall-at");
        assert_eq!(
            error(&["serve", "--stall-at=1s", "--stall-for=0"]),
            "--stall-for must be greater than 0"
        );
        assert_eq!(
            error(&["serve", "--stall", "1s"]),
            "option '--stall' is ambiguous; possibilities: '--stall-at' '--stall-for'"
        );
        assert_eq!(
            error(&["serve", "-p", "70000"]),
            "invalid value for '-p': '70000' is not a port number (0-65535)"
        );
        assert_eq!(error(&["serve", "-t0"]), "-t/--threads must be at least 1");
        assert!(error(&["serve", "--body-size", "2G"]).contains("more than 1G"));
        assert!(error(&["serve", "--head-timeout", "soon"])
            .starts_with("invalid value for '--head-timeout'"));
        assert_eq!(error(&["serve", "--rate", "1"]), "unknown option '--rate'");
        assert_eq!(
            error(&["serve", "http://x/"]),
            "unexpected argument 'http://x/' (try 'pace serve --help')"
        );
        assert_eq!(
            error(&["serve", "--tls=yes"]),
            "option '--tls' does not take a value (got 'yes')"
        );
    }

    #[test]
    fn demo() {
        assert!(matches!(parse(["demo".into()]), Ok(Command::Demo { protocol: Protocol::Http1 })));
        assert!(matches!(parse(["demo".into(), "-h".into()]), Ok(Command::Help(_))));
        assert_eq!(error(&["demo", "-c", "1"]), "unknown option '-c'");
        assert_eq!(error(&["demo", "x"]), "unexpected argument 'x' (try 'pace demo --help')");
    }

    #[test]
    fn help() {
        assert!(matches!(parse(["serve".into(), "--help".into()]), Ok(Command::Help(_))));
        assert!(matches!(parse(["serve".into(), "-p1".into(), "-h".into()]), Ok(Command::Help(_))));
    }
}
