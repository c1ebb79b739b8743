//! The validated description of one benchmark run, produced by [`crate::cli`]
//! and consumed by the engine and the reports. Nothing here parses options;
//! it only holds what they mean.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// URL scheme. As in wrk, anything starting with `https` selects TLS and
/// every other scheme is plain TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The target URL, split the way wrk splits it (`src/script.c:
/// script_parse_url`): the path keeps the query and fragment, IPv6 hosts are
/// stored without brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The URL exactly as typed (printed in the report header).
    pub url: String,
    /// The scheme as typed (`http`, `https`, ...), for Lua's `wrk.scheme`.
    pub scheme_name: String,
    pub scheme: Scheme,
    /// Host name or address, without IPv6 brackets.
    pub host: String,
    /// The port to connect to (explicit, or 80/443 from the scheme).
    pub port: u16,
    /// Whether the URL named the port (then it is part of the Host header).
    pub explicit_port: bool,
    /// Path, query and fragment; `/` when the URL has no path.
    pub path: String,
}

/// Why a URL was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError(pub String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Target {
    /// Parses `scheme://host[:port][/path][?query][#fragment]`.
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        let bad = |why: &str| UrlError(format!("invalid URL: {url} ({why})"));
        let (scheme_name, rest) =
            url.split_once("://").ok_or_else(|| bad("expected scheme://host"))?;
        if scheme_name.is_empty()
            || !scheme_name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            || !scheme_name.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(bad("bad scheme"));
        }
        let lower = scheme_name.to_ascii_lowercase();
        let scheme = if lower.starts_with("https") { Scheme::Https } else { Scheme::Http };
        let default_port = match lower.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            _ if scheme == Scheme::Https => 443,
            _ => return Err(bad("unsupported scheme, use http or https")),
        };
        let path_start = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(path_start);
        let path = match path.chars().next() {
            None => "/".to_string(),
            Some('/') => path.to_string(),
            // wrk drops a query that has no path before it; we keep it.
            Some(_) => format!("/{path}"),
        };
        let authority = match authority.rsplit_once('@') {
            Some((_userinfo, hostport)) => hostport,
            None => authority,
        };
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let (host, after) = inner.split_once(']').ok_or_else(|| bad("unclosed '[' in host"))?;
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("bad IPv6 address"));
            }
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| bad("junk after ']'"))?),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        if host.contains(|c: char| c.is_whitespace() || "/\\[]".contains(c)) {
            return Err(bad("bad character in host"));
        }
        let (port, explicit_port) = match port {
            None | Some("") => (default_port, false),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => (n, true),
                _ => return Err(bad("bad port")),
            },
        };
        Ok(Target {
            url: url.to_string(),
            scheme_name: scheme_name.to_string(),
            scheme,
            host: host.to_string(),
            port,
            explicit_port,
            path,
        })
    }

    /// The default `Host` header value, as wrk's `wrk.init` builds it: the
    /// host (IPv6 re-bracketed) plus `:port` only if the URL named one.
    pub fn host_header(&self) -> String {
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.explicit_port {
            format!("{host}:{}", self.port)
        } else {
            host
        }
    }
}

/// How requests are released.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// wrk: every connection sends its next request as soon as the previous
    /// response is complete.
    ClosedLoop,
    /// wrk2 `-R`: requests follow a plan of intended send times, whatever the
    /// server does; latency counts from the intended time.
    Paced { rate: f64 },
}

/// Everything one benchmark run needs, validated.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub target: Target,
    pub connections: usize,
    pub threads: usize,
    pub duration: Duration,
    pub timeout: Duration,
    pub mode: Mode,
    /// `-H` headers in the order given.
    pub headers: Vec<(String, String)>,
    /// `-L`: print the latency distribution.
    pub latency: bool,
    /// `-U`: also print the uncorrected latency distribution.
    pub u_latency: bool,
    /// `-B`: with pipelining, record one latency per batch.
    pub batch_latency: bool,
    /// `-k`: do not verify the server certificate.
    pub insecure: bool,
    /// HdrHistogram significant digits (1..=5).
    pub digits: u8,
    pub script: Option<PathBuf>,
    /// Words after the URL (Lua `args[1..]`).
    pub script_args: Vec<String>,
    /// Addresses to connect to, resolved and checked before the run.
    pub addrs: Vec<SocketAddr>,
    /// Machine-readable outputs and periodic reports.
    pub outputs: Outputs,
}

/// What to write besides (or instead of) the final text report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outputs {
    /// `-e/--json`: one JSON document on stdout instead of the text report.
    pub json: bool,
    /// `-p/--report_interval`: a report for every period of this length.
    pub report_interval: Option<Duration>,
    /// `--hlog FILE`: a standard HdrHistogram interval log.
    pub hlog: Option<PathBuf>,
    /// `--timeseries[=T]`: requests per interval of length T (wrx: 250 ms).
    pub timeseries: Option<Duration>,
    /// `--thread-timeseries`: the same per thread.
    pub thread_timeseries: bool,
    /// `--histogram`: requests per 1 us latency bin.
    pub histogram: bool,
    /// `--percentiles`: the percentiles of the distributions (None = the
    /// wrk/wrk2 defaults).
    pub percentiles: Option<Vec<f64>>,
}

impl BenchConfig {
    /// wrk's defaults for `target`: 2 threads, 10 connections, 10 s,
    /// 2 s timeout, closed loop, no script, text report.
    pub fn new(target: Target) -> BenchConfig {
        BenchConfig {
            target,
            connections: 10,
            threads: 2,
            duration: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
            mode: Mode::ClosedLoop,
            headers: Vec::new(),
            latency: false,
            u_latency: false,
            batch_latency: false,
            insecure: false,
            digits: 3,
            script: None,
            script_args: Vec::new(),
            addrs: Vec::new(),
            outputs: Outputs::default(),
        }
    }

    /// Connections owned by thread `i`: the remainder of
    /// `connections / threads` is spread over the first threads instead of
    /// being dropped (wrk bug wg/wrk#157).
    pub fn connections_of_thread(&self, i: usize) -> usize {
        let base = self.connections / self.threads;
        base + usize::from(i < self.connections % self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_url() {
        let t = Target::parse("http://localhost:8080/index.html?x=1#f").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.host, "localhost");
        assert_eq!(t.port, 8080);
        assert!(t.explicit_port);
        assert_eq!(t.path, "/index.html?x=1#f");
        assert_eq!(t.host_header(), "localhost:8080");
    }

    #[test]
    fn default_ports_and_paths() {
        let t = Target::parse("https://example.com").unwrap();
        assert_eq!((t.scheme, t.port, t.path.as_str()), (Scheme::Https, 443, "/"));
        assert_eq!(t.host_header(), "example.com");
        let t = Target::parse("http://example.com?q").unwrap();
        assert_eq!(t.path, "/?q");
    }

    #[test]
    fn ipv6_hosts() {
        let t = Target::parse("http://[::1]:8080/").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.host_header(), "[::1]:8080");
        assert!(Target::parse("http://[::1/").is_err());
        assert!(Target::parse("http://[zz]:80/").is_err());
    }

    #[test]
    fn rejects_bad_urls() {
        for u in [
            "localhost:8080/",
            "http://",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "ftp://h/",
            "://h/",
        ] {
            assert!(Target::parse(u).is_err(), "{u}");
        }
    }

    #[test]
    fn spreads_remainder_connections() {
        let mut cfg = test_config();
        cfg.threads = 3;
        cfg.connections = 10;
        let per: Vec<_> = (0..3).map(|i| cfg.connections_of_thread(i)).collect();
        assert_eq!(per, vec![4, 3, 3]);
    }

    fn test_config() -> BenchConfig {
        BenchConfig {
            duration: Duration::from_secs(1),
            ..BenchConfig::new(Target::parse("http://127.0.0.1:1/").unwrap())
        }
    }
}
