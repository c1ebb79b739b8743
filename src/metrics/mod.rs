//! `--metrics ADDR`: the run's figures for Prometheus while it runs.
//!
//! The figures ([`figures`]) are updated on the collecting thread from
//! each short period the engine threads hand over anyway (as for the live
//! progress: nothing per request), and served by a listener thread
//! ([`server`]) in Prometheus' text format or OpenMetrics
//! ([`exposition`]). The address is bound before the run, so a bad one is
//! a setup error before any load; the listener serves until pace exits,
//! and `--metrics-linger T` keeps pace up T after its report so that a
//! scrape sees the final figures. `--metrics-push URL` sends the final
//! figures once instead, by remote write ([`push`]), over http or https,
//! with Basic credentials or a bearer token.

mod exposition;
mod figures;
mod push;
mod server;

use std::io::{self, IsTerminal};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::config::Mode;
use crate::description::Description;
use crate::error::{io_reason, Error};
use crate::signals::{Signals, Stop};
use crate::stats::Interval;
use crate::target::Target;
use figures::{Figures, PlanRate};

/// How often the engine threads hand over a period when the metrics
/// want them (as the live progress: a multiple of their 100 ms Req/Sec
/// sample, so the hand-overs need no extra wake-up).
pub const EVERY: Duration = Duration::from_millis(200);

/// `--metrics`, `--metrics-linger` and `--metrics-push` as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsOptions {
    /// Where to serve the figures.
    pub listen: Option<ListenAddr>,
    /// How long pace keeps serving after its report.
    pub linger: Duration,
    /// Where to send the final figures (remote write).
    pub push: Option<Target>,
    /// `--metrics-push-token-file`: the receiver's bearer token.
    pub push_token: Option<BearerToken>,
}

pub use push::{parse_url as parse_push_url, BearerToken};

/// Where `--metrics` listens: a host (empty: every interface) and a port
/// (0: any free one, said on stderr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenAddr {
    pub host: String,
    pub port: u16,
}

impl ListenAddr {
    /// `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every interface).
    pub fn parse(text: &str) -> Result<ListenAddr, String> {
        let bad = || {
            format!(
                "'{text}' is not HOST:PORT (e.g. 127.0.0.1:9464, :9464 for every interface, \
                 [::1]:9464)"
            )
        };
        let (host, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (host, port) = rest.split_once("]:").ok_or_else(bad)?;
                (host, port)
            }
            None => text.rsplit_once(':').ok_or_else(bad)?,
        };
        if host.contains(':') && !text.starts_with('[') || host.contains(['[', ']', '/']) {
            return Err(bad());
        }
        if text.starts_with('[') && host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("'{host}' is not an IPv6 address"));
        }
        let port =
            port.parse::<u16>().map_err(|_| format!("'{port}' is not a port (0 to 65535)"))?;
        Ok(ListenAddr { host: host.to_string(), port })
    }

    /// The addresses to try, in order.
    fn resolve(&self) -> io::Result<Vec<SocketAddr>> {
        if self.host.is_empty() {
            return Ok(vec![SocketAddr::from(([0, 0, 0, 0], self.port))]);
        }
        Ok((self.host.as_str(), self.port).to_socket_addrs()?.collect())
    }
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::reach::host_port(&self.host, self.port))
    }
}

/// The metrics of one run, served from before it starts.
pub struct Metrics {
    figures: Arc<Mutex<Figures>>,
    /// How long to keep serving after the report (zero when not serving).
    linger: Duration,
    push: Option<Target>,
    push_token: Option<BearerToken>,
}

impl Metrics {
    /// Listens where `--metrics` says (`options`; None without any
    /// metrics option) for the run `run` describes; a failure is a setup
    /// error (exit 2), before any load. With port 0 the port taken is said
    /// on stderr.
    pub fn start(
        options: Option<&MetricsOptions>,
        run: &Description,
    ) -> Result<Option<Metrics>, Error> {
        let Some(options) = options else { return Ok(None) };
        let listener = options.listen.as_ref().map(listen).transpose()?;
        let plan = match &run.mode {
            Mode::ClosedLoop => None,
            Mode::Paced(spec) => {
                Some(PlanRate { spec: spec.clone(), warmup: run.warmup, shards: run.shard.count })
            }
        };
        let shard = format!("{}/{}", run.shard.index, run.shard.count);
        let figures = Arc::new(Mutex::new(Figures::new(shard, plan)));
        if let (Some(listener), Some(asked)) = (listener, &options.listen) {
            let addr = listener.local_addr().map_err(|e| cannot_listen(asked, &e))?;
            if asked.port == 0 {
                eprintln!("pace: metrics at http://{addr}/metrics");
            }
            server::spawn(listener, figures.clone()).map_err(|e| {
                Error::Setup(format!("unable to create the --metrics thread: {}", io_reason(&e)))
            })?;
        }
        let linger = if options.listen.is_some() { options.linger } else { Duration::ZERO };
        let (push, push_token) = (options.push.clone(), options.push_token.clone());
        Ok(Some(Metrics { figures, linger, push, push_token }))
    }

    /// `--metrics-push`: sends the final figures (a setup error when the
    /// receiver cannot be reached or refuses them, or `stop` hears a
    /// signal first).
    pub fn push(&self, stop: &Stop) -> Result<(), Error> {
        let Some(target) = &self.push else { return Ok(()) };
        let figures = self.figures().clone();
        push::push(target, self.push_token.as_ref(), &figures, stop).map_err(Error::Setup)
    }

    /// Adds the engine's next short period.
    pub fn add(&self, period: &Interval) {
        self.figures().add(period);
    }

    /// The run is over: what is served is final.
    pub fn finish(&self) {
        self.figures().finished = true;
    }

    /// After the report: keeps serving for `--metrics-linger`, unless a
    /// signal stopped the run or comes meanwhile.
    pub fn linger(&self, signals: &Signals) {
        let linger = self.linger;
        if linger.is_zero() || signals.received().is_some() {
            return;
        }
        if io::stderr().is_terminal() {
            eprintln!(
                "pace: serving the final metrics for {} more (--metrics-linger; Ctrl-C ends it)",
                crate::units::format_time_us(linger.as_micros() as f64)
            );
        }
        let deadline = Instant::now() + linger;
        while signals.count() == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    fn figures(&self) -> MutexGuard<'_, Figures> {
        // The figures are whole after every update, even if a thread
        // panicked while holding them.
        self.figures.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A listener on the first of `addr`'s addresses that takes one.
fn listen(addr: &ListenAddr) -> Result<TcpListener, Error> {
    let candidates = addr.resolve().map_err(|e| {
        Error::Setup(format!(
            "cannot resolve the --metrics host '{}': {}",
            addr.host,
            io_reason(&e)
        ))
    })?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    for candidate in candidates {
        match TcpListener::bind(candidate) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(cannot_listen(addr, &last))
}

fn cannot_listen(addr: &ListenAddr, e: &io::Error) -> Error {
    Error::Setup(format!("cannot listen on --metrics {addr}: {}", io_reason(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(host: &str, port: u16) -> ListenAddr {
        ListenAddr { host: host.into(), port }
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(ListenAddr::parse("127.0.0.1:9464"), Ok(addr("127.0.0.1", 9464)));
        assert_eq!(ListenAddr::parse(":9464"), Ok(addr("", 9464)));
        assert_eq!(ListenAddr::parse("[::1]:0"), Ok(addr("::1", 0)));
        assert_eq!(ListenAddr::parse("localhost:80"), Ok(addr("localhost", 80)));
        for bad in ["9464", "::1:9464", "[::1]9464", "host", "a/b:1", ""] {
            let message = ListenAddr::parse(bad).unwrap_err();
            assert!(message.starts_with(&format!("'{bad}' is not HOST:PORT")), "{message}");
        }
        assert_eq!(ListenAddr::parse("[x]:1").unwrap_err(), "'x' is not an IPv6 address");
        assert_eq!(ListenAddr::parse("h:70000").unwrap_err(), "'70000' is not a port (0 to 65535)");
        assert_eq!(ListenAddr::parse("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert_eq!(ListenAddr::parse(":9").unwrap().to_string(), ":9");
    }

    #[test]
    fn a_port_in_use_is_a_setup_error() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let error = listen(&addr("127.0.0.1", port)).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert_eq!(
            error.to_string(),
            format!("cannot listen on --metrics 127.0.0.1:{port}: Address already in use")
        );
        let free = listen(&addr("127.0.0.1", 0)).unwrap();
        assert_ne!(free.local_addr().unwrap().port(), 0);
    }
}
