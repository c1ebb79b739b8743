//! `--proxy`: benchmarking through a forward HTTP proxy.
//!
//! Every connection goes to the proxy. A plain `http://` target's requests
//! are sent to it in absolute form (`GET http://host:port/path HTTP/1.1`,
//! [`absolute`]); an `https://` target, and HTTP/2 without TLS (h2c: a
//! forward proxy speaks HTTP/1.1 to its clients, so prior knowledge needs
//! a tunnel), goes through a `CONNECT host:port` tunnel ([`tunnel`]) that
//! each connection opens before its TLS handshake or HTTP/2 preface. The
//! proxy's credentials, from its URL ([`url`]), go with every absolute-form
//! request and every CONNECT as `Proxy-Authorization: Basic ...`.
//!
//! The environment's proxy variables are read only with `--proxy env`
//! ([`env`]): a benchmark should not silently measure a proxy. The header
//! of the report says which proxy the run went through, or why none.

pub mod absolute;
mod env;
pub mod tunnel;
mod url;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::protocol::Protocol;
use crate::reach::{host_port, Reach};
use crate::resolve::{resolve_origin, Probe};
use crate::signals::Stop;
use crate::target::{Scheme, Target};
use absolute::AbsoluteForm;
use tunnel::Tunnel;

/// An HTTP proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proxy {
    /// Name or address, IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// `Basic <base64(user:password)>`, when the proxy URL had credentials.
    pub authorization: Option<String>,
    /// The user as typed in the URL, for the header (never the password).
    pub user: Option<String>,
}

/// What `--proxy` decided for the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Through this proxy, named by `via`.
    Proxy { proxy: Proxy, via: Via },
    /// `--proxy env`, and the environment gives the target no proxy: why.
    Direct(String),
}

/// Where the proxy's URL came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `--proxy URL`.
    Option,
    /// `--proxy env`: this variable.
    Env(&'static str),
}

/// `--proxy`'s value for a run to `target`: a proxy URL, or `env`.
pub fn route(value: &str, target: &Target) -> Result<Route, String> {
    match value {
        "env" => env::from_env(target, |name| std::env::var(name).ok()),
        url => url::parse_proxy(url)
            .map(|proxy| Route::Proxy { proxy, via: Via::Option })
            .map_err(|why| format!("--proxy: {why}")),
    }
}

impl Proxy {
    /// `http://[user@]host:port`, for the header and the JSON.
    pub fn shown(&self) -> String {
        let user = self.user.as_deref().map_or(String::new(), |user| format!("{user}@"));
        format!("http://{user}{}", host_port(&self.host, self.port))
    }

    /// The addresses of the proxy that accept a connection, as
    /// [`resolve_origin`] checks an origin's (`-4`/`-6` apply; the command
    /// line refuses `--connect-to` and `--unix-socket` with `--proxy`); the
    /// error names the proxy. A signal heard by `stop` ends the checks.
    pub fn resolve(
        &self,
        reach: &Reach,
        timeout: Duration,
        stop: &Stop,
    ) -> Result<Vec<Endpoint>, Error> {
        let timeout = timeout.max(Duration::from_millis(1));
        resolve_origin(&self.host, self.port, reach, Probe::Tcp, timeout, stop).map_err(|error| {
            match error {
                Error::Setup(why) => {
                    Error::Setup(format!("the proxy {} is unreachable: {why}", self.shown()))
                }
                other => other,
            }
        })
    }
}

impl Route {
    /// The proxy the run goes through (None: `--proxy env` sent it direct).
    pub fn proxy(&self) -> Option<&Proxy> {
        match self {
            Route::Proxy { proxy, .. } => Some(proxy),
            Route::Direct(_) => None,
        }
    }

    /// The CONNECT every connection to `target` (an origin of the run)
    /// sends first, when it tunnels through the proxy: TLS, or a
    /// multiplexed `protocol` (h2c through a forward proxy needs one: the
    /// proxy speaks HTTP/1.1 to its clients).
    pub fn tunnel(&self, protocol: Protocol, target: &Target) -> Option<Tunnel> {
        let proxy = self.proxy().filter(|_| tunnels(protocol, target))?;
        let target = host_port(&target.host, target.port);
        Some(Tunnel::new(&target, proxy.authorization.as_deref()))
    }

    /// How the requests of a plain-HTTP run through the proxy to `target`
    /// (the run's, or a target's of `--targets`) are rewritten.
    pub fn absolute_form(&self, protocol: Protocol, target: &Target) -> Option<AbsoluteForm> {
        let proxy = self.proxy().filter(|_| !tunnels(protocol, target))?;
        Some(AbsoluteForm::new(target, proxy.authorization.clone()))
    }

    /// Says on stderr when the proxy answered requests with 407 (Proxy
    /// Authentication Required): in plain HTTP its refusals are responses,
    /// and the report shows only their status.
    /// `refused`: the responses of status 407.
    pub fn note_refusals(&self, refused: u64) {
        let Some(proxy) = self.proxy().filter(|_| refused > 0) else { return };
        let hint = match proxy.authorization {
            None => "give its credentials: --proxy http://user:password@host:port",
            Some(_) => "it did not accept the credentials of the proxy URL",
        };
        eprintln!(
            "pace: the proxy answered {refused} requests with 407 Proxy Authentication Required: \
             {hint}"
        );
    }

    /// What the JSON says of `--proxy`; `tunnel`: whether any origin's
    /// connections go through a CONNECT tunnel.
    pub fn report(&self, tunnel: bool) -> ProxyReport {
        match self {
            Route::Proxy { proxy, via } => ProxyReport {
                url: Some(proxy.shown()),
                from: match via {
                    Via::Option => "--proxy".to_string(),
                    Via::Env(name) => name.to_string(),
                },
                tunnel,
                direct: None,
            },
            Route::Direct(why) => {
                let from = "env".to_string();
                ProxyReport { url: None, from, tunnel: false, direct: Some(why.clone()) }
            }
        }
    }
}

/// The connections to `target` go through a CONNECT tunnel: TLS, or a
/// multiplexed protocol.
fn tunnels(protocol: Protocol, target: &Target) -> bool {
    target.scheme == Scheme::Https || protocol.multiplexed()
}

/// `proxy` in the JSON report (docs/json.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyReport {
    /// `http://[user@]host:port`; null when the run went direct.
    pub url: Option<String>,
    /// `--proxy`, or the variable `--proxy env` took it from (`env` when
    /// the run went direct).
    pub from: String,
    /// Through a CONNECT tunnel (else requests in absolute form); with
    /// several origins, whether any went through one (each origin's is in
    /// the report's `origins`).
    pub tunnel: bool,
    /// Why `--proxy env` sent the run direct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_to(url: &str, proxy: &str) -> (Route, Target) {
        let target = Target::parse(url).unwrap();
        (route(proxy, &target).unwrap(), target)
    }

    #[test]
    fn plain_http_goes_in_absolute_form_tls_and_h2c_through_connect() {
        let (plain, target) = route_to("http://127.0.0.1:8080/", "u:secret@127.0.0.1:3128");
        assert!(plain.tunnel(Protocol::Http1, &target).is_none());
        assert!(plain.absolute_form(Protocol::Http1, &target).is_some());
        let (tls, target) = route_to("https://example.com/", "http://127.0.0.1:3128");
        assert!(tls.tunnel(Protocol::Http1, &target).is_some());
        assert!(tls.absolute_form(Protocol::Http1, &target).is_none());
        let (h2c, target) = route_to("http://[::1]:8080/", "127.0.0.1:3128");
        assert!(h2c.tunnel(Protocol::Http2, &target).is_some());
        assert!(h2c.absolute_form(Protocol::Http2, &target).is_none());
    }

    #[test]
    fn the_report_never_holds_the_password() {
        let (route, _) = route_to("http://127.0.0.1:8080/", "http://u:secret@127.0.0.1:3128");
        let json = serde_json::to_string(&route.report(false)).unwrap();
        assert_eq!(json, r#"{"url":"http://u@127.0.0.1:3128","from":"--proxy","tunnel":false}"#);
    }

    #[test]
    fn direct_runs_say_why() {
        let route = Route::Direct("no_proxy (*) matches 127.0.0.1".into());
        let target = Target::parse("http://127.0.0.1:8080/").unwrap();
        assert!(route.tunnel(Protocol::Http2, &target).is_none());
        assert!(route.absolute_form(Protocol::Http1, &target).is_none());
        let json = serde_json::to_string(&route.report(false)).unwrap();
        assert_eq!(
            json,
            r#"{"url":null,"from":"env","tunnel":false,"direct":"no_proxy (*) matches 127.0.0.1"}"#
        );
    }
}
