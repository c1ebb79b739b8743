//! Where the connections of one origin go, and the checks made before the
//! run: everything the engine needs to open a connection to it. A run has
//! one origin (its URL), or one per scheme, host and port of a targets
//! file ([`crate::requests::Origins`]).

use std::sync::Arc;
use std::time::Duration;

use crate::blocking::{Deadline, Exchange};
use crate::config::origins::origin_name;
use crate::config::BenchConfig;
use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::http2::check::{self, ServerSettings};
use crate::http3;
use crate::protocol::Protocol;
use crate::proxy::tunnel::Tunnel;
use crate::signals::Stop;
use crate::target::{Scheme, Target};
use crate::tls::TlsClient;

/// One origin, checked and ready for connections.
#[derive(Clone)]
pub struct Origin {
    /// Its scheme, host and port (the path is a target's business).
    pub target: Target,
    /// Where its connections go: the resolved address, the
    /// `--unix-socket`, or the proxy's address.
    pub endpoint: Endpoint,
    /// For https: the TLS client its connections use.
    pub tls: Option<TlsClient>,
    /// Through a proxy (`endpoint` is then the proxy's), the CONNECT tunnel
    /// each connection opens first.
    pub tunnel: Option<Arc<Tunnel>>,
    /// Over HTTP/2, the concurrent streams per connection the server
    /// allows, as its SETTINGS said before the run (None: no limit, or not
    /// HTTP/2).
    pub allowed_streams: Option<u32>,
}

impl Origin {
    /// Checks what can be checked before the run: for https, a complete
    /// handshake with `endpoint` (so an untrusted certificate is one clear
    /// error, not an error on every connection); with `--http2`, that the
    /// server speaks HTTP/2 and allows streams (its settings). Through a proxy
    /// (`endpoint` is then the proxy's), the checks go through a CONNECT tunnel, whose
    /// refusal is the error. With several origins (`named`), a failure
    /// says which origin failed.
    ///
    /// The checks of an origin (CONNECT and what goes through it) have one
    /// deadline in all, and end early when `stop` hears a signal (see
    /// [`crate::blocking`]).
    pub fn prepare(
        cfg: &BenchConfig,
        target: Target,
        endpoint: Endpoint,
        named: bool,
        stop: &Stop,
    ) -> Result<Origin, Error> {
        let deadline = Deadline::after(cfg.timeout.min(Duration::from_secs(5)), stop);
        let named_error = |error: Error| match error {
            Error::Setup(why) if named => {
                Error::Setup(format!("origin {}: {why}", origin_name(&target)))
            }
            error => error,
        };
        let tunnel = (cfg.proxy.as_ref())
            .and_then(|route| route.tunnel(cfg.protocol, &target))
            .map(Arc::new);
        let tunnel_open = || {
            match (&tunnel, &endpoint) {
                (Some(tunnel), Endpoint::Tcp(proxy)) => tunnel.open(*proxy, &deadline).map(Some),
                // The command line refuses --proxy with --unix-socket.
                (Some(_), Endpoint::Unix(_)) => {
                    Err("a proxy is reached over TCP, not a Unix socket".to_string())
                }
                (None, _) => Ok(None),
            }
            .map_err(Error::Setup)
        };
        // The server the checks reach, for their messages.
        let server = match &tunnel {
            Some(_) => {
                format!(
                    "{} (through the proxy)",
                    crate::reach::host_port(&target.host, target.port)
                )
            }
            None => endpoint.to_string(),
        };
        let http2 = cfg.protocol == Protocol::Http2;
        let (tls, settings) = match target.scheme {
            Scheme::Https if cfg.protocol == Protocol::Http3 => {
                let tls = TlsClient::new(&target.host, &cfg.tls, cfg.protocol.alpn())?;
                quic_handshake(&tls, &endpoint, &deadline).map_err(named_error)?;
                (Some(tls), None)
            }
            Scheme::Https => {
                let tls = TlsClient::new(&target.host, &cfg.tls, cfg.protocol.alpn())?;
                // Over h2, the server's settings after the handshake.
                let then = |exchange: &mut dyn Exchange| match http2 {
                    true => http2_settings_over_tls(exchange, &server, &deadline).map(Some),
                    false => Ok(None),
                };
                let settings = match tunnel_open().map_err(named_error)? {
                    Some(socket) => tls.check_handshake_on(Ok(socket), &server, &deadline, then),
                    None => tls.check_handshake(&endpoint, &deadline, then),
                }
                .map_err(named_error)?;
                (Some(tls), settings)
            }
            Scheme::Http if http2 => {
                let checked = match tunnel_open().map_err(named_error)? {
                    Some(socket) => check::prior_knowledge_on(socket, &deadline),
                    None => check::prior_knowledge(&endpoint, &deadline),
                };
                let settings = checked
                    .map_err(|why| {
                        Error::Setup(format!(
                            "--http2: the server at {server} does not speak HTTP/2: {why} (leave \
                             out --http2 to benchmark it over HTTP/1.1, or use an https:// URL \
                             for h2)"
                        ))
                    })
                    .map_err(named_error)?;
                (None, Some(settings))
            }
            Scheme::Http => (None, None),
        };
        let allowed_streams = settings.and_then(|settings| settings.max_concurrent_streams);
        if allowed_streams == Some(0) {
            return Err(named_error(Error::Setup(format!(
                "--http2: the server at {server} allows no streams (its \
                 SETTINGS_MAX_CONCURRENT_STREAMS is 0): it takes no HTTP/2 requests"
            ))));
        }
        Ok(Origin { target, endpoint, tls, tunnel, allowed_streams })
    }
}

/// One QUIC handshake with the server at `endpoint` (the command line
/// refuses --http3 with a Unix socket or a proxy).
fn quic_handshake(tls: &TlsClient, endpoint: &Endpoint, deadline: &Deadline) -> Result<(), Error> {
    let Endpoint::Tcp(server) = endpoint else {
        return Err(Error::Setup("--http3: QUIC runs over UDP, not a Unix socket".into()));
    };
    let config = http3::connection::client_config(tls.config()).map_err(Error::Setup)?;
    http3::check::handshake(config, *server, &tls.server_name(), deadline)
        .map_err(|why| Error::Setup(format!("--http3: {server} (UDP): {why}")))
}

/// The server's HTTP/2 settings over a TLS connection to `server` that
/// chose h2 by ALPN, or why not, in words.
fn http2_settings_over_tls(
    exchange: &mut dyn Exchange,
    server: &str,
    deadline: &Deadline,
) -> Result<ServerSettings, Error> {
    check::server_settings(exchange, deadline).map_err(|failure| {
        let why = match failure {
            check::Failure::NotHttp2(why) => format!("it chose h2 by ALPN, but {why}"),
            check::Failure::Exchange(why) => why,
        };
        Error::Setup(format!("--http2: the server at {server} does not speak HTTP/2: {why}"))
    })
}

/// For tests and fuzz targets: a plain origin on loopback (port 80),
/// for protocols that do not look at it.
#[cfg(any(test, feature = "fuzzing"))]
impl Origin {
    pub fn for_tests() -> Origin {
        Origin {
            target: Target::parse("http://127.0.0.1/").expect("a valid URL"),
            endpoint: Endpoint::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], 80))),
            tls: None,
            tunnel: None,
            allowed_streams: None,
        }
    }
}

/// The checks before the run, against real servers on loopback.
#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::thread;

    use super::*;
    use crate::serve::{self, ServeOptions, ServerHandle};
    use crate::tls::TlsOptions;

    fn tls_server() -> ServerHandle {
        let options = ServeOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            tls: true,
            ..ServeOptions::default()
        };
        serve::start(options).unwrap()
    }

    fn config(url: &str) -> BenchConfig {
        BenchConfig::new(Target::parse(url).unwrap())
    }

    fn prepare(cfg: &BenchConfig, named: bool) -> Result<Origin, Error> {
        let endpoint = Endpoint::Tcp(format!("127.0.0.1:{}", cfg.target.port).parse().unwrap());
        Origin::prepare(cfg, cfg.target.clone(), endpoint, named, &crate::signals::Stop::never())
    }

    #[test]
    fn https_is_checked_by_a_whole_handshake() {
        let server = tls_server();
        let url = format!("https://localhost:{}/", server.addr().port());
        let mut cfg = config(&url);
        // The server's certificate is self-signed: refused unless -k.
        let Err(Error::Setup(why)) = prepare(&cfg, false) else { panic!("accepted") };
        assert!(why.contains("certificate"), "{why}");
        cfg.tls = TlsOptions { insecure: true, ..TlsOptions::default() };
        let origin = prepare(&cfg, false).unwrap();
        assert!(origin.tls.is_some() && origin.tunnel.is_none());
        // Over HTTP/2, the same server chooses h2.
        cfg.protocol = Protocol::Http2;
        assert!(prepare(&cfg, false).is_ok());
        server.stop();
    }

    #[test]
    fn h2c_is_refused_by_a_server_that_does_not_speak_it_naming_the_origin() {
        // A server that answers the HTTP/2 preface as HTTP/1.1 does.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut buf = [0; 64];
            let _ = socket.read(&mut buf);
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        });
        let mut cfg = config(&format!("http://127.0.0.1:{port}/"));
        cfg.protocol = Protocol::Http2;
        let Err(Error::Setup(why)) = prepare(&cfg, true) else { panic!("accepted") };
        assert!(why.starts_with(&format!("origin http://127.0.0.1:{port}: --http2: ")), "{why}");
        assert!(why.contains("does not speak HTTP/2"), "{why}");
        server.join().unwrap();
        // Over HTTP/1.1 nothing is checked before the run.
        cfg.protocol = Protocol::Http1;
        assert!(prepare(&cfg, false).is_ok_and(|origin| origin.tls.is_none()));
    }
}
