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

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::BenchConfig;
use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::reach::{host_port, Reach};
use crate::resolve::resolve_origin;
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
    /// error names the proxy.
    pub fn resolve(&self, reach: &Reach, timeout: Duration) -> Result<Vec<Endpoint>, Error> {
        let timeout = timeout.max(Duration::from_millis(1));
        resolve_origin(&self.host, self.port, reach, timeout).map_err(|error| match error {
            Error::Setup(why) => {
                Error::Setup(format!("the proxy {} is unreachable: {why}", self.shown()))
            }
            other => other,
        })
    }
}

/// The proxy the run goes through, if any.
pub fn proxy_of(cfg: &BenchConfig) -> Option<&Proxy> {
    match &cfg.proxy {
        Some(Route::Proxy { proxy, .. }) => Some(proxy),
        _ => None,
    }
}

/// The connections to `target` go through a CONNECT tunnel: TLS, or
/// HTTP/2 (h2c through a forward proxy needs one).
fn tunnels(cfg: &BenchConfig, target: &Target) -> bool {
    target.scheme == Scheme::Https || cfg.http2
}

/// The CONNECT every connection to `target` (an origin of the run) sends
/// first, when it tunnels through a proxy.
pub fn tunnel_of(cfg: &BenchConfig, target: &Target) -> Option<Tunnel> {
    let proxy = proxy_of(cfg).filter(|_| tunnels(cfg, target))?;
    let target = host_port(&target.host, target.port);
    Some(Tunnel::new(&target, proxy.authorization.as_deref()))
}

/// How the requests of a plain-HTTP run through a proxy to `target` (the
/// run's, or a target's of `--targets`) are rewritten.
pub fn absolute_form_of(cfg: &BenchConfig, target: &Target) -> Option<AbsoluteForm> {
    let proxy = proxy_of(cfg).filter(|_| !tunnels(cfg, target))?;
    Some(AbsoluteForm::new(target, proxy.authorization.clone()))
}

/// Says on stderr when the proxy answered requests with 407 (Proxy
/// Authentication Required): in plain HTTP its refusals are responses, and
/// the report shows only their status.
pub fn note_refusals(cfg: &BenchConfig, statuses: &BTreeMap<u16, u64>) {
    let (Some(proxy), Some(refused)) = (proxy_of(cfg), statuses.get(&407)) else { return };
    let hint = match proxy.authorization {
        None => "give its credentials: --proxy http://user:password@host:port",
        Some(_) => "it did not accept the credentials of the proxy URL",
    };
    eprintln!("pace: the proxy answered {refused} requests with 407 Proxy Authentication Required: {hint}");
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

/// What the JSON says of `--proxy`, None without the option; `tunnel`:
/// whether any origin's connections go through a CONNECT tunnel.
pub fn report_of(cfg: &BenchConfig, tunnel: bool) -> Option<ProxyReport> {
    Some(match cfg.proxy.as_ref()? {
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::reached::Reached;

    /// The header's line on the proxy (without the indent), if any.
    fn header_line(cfg: &BenchConfig) -> Option<String> {
        let mut out = Vec::new();
        Reached::of(cfg).write_routes(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        text.lines().next().map(|line| line.trim_start().to_string())
    }

    fn config(url: &str, proxy: &str, http2: bool) -> BenchConfig {
        let mut cfg = BenchConfig::new(Target::parse(url).unwrap());
        cfg.http2 = http2;
        cfg.proxy = Some(route(proxy, &cfg.target).unwrap());
        cfg
    }

    #[test]
    fn plain_http_goes_in_absolute_form_tls_and_h2c_through_connect() {
        let plain = config("http://127.0.0.1:8080/", "u:secret@127.0.0.1:3128", false);
        assert!(
            tunnel_of(&plain, &plain.target).is_none()
                && absolute_form_of(&plain, &plain.target).is_some()
        );
        assert_eq!(
            header_line(&plain).unwrap(),
            "Through the proxy http://u@127.0.0.1:3128 (--proxy), absolute-form requests"
        );
        let tls = config("https://example.com/", "http://127.0.0.1:3128", false);
        assert!(
            tunnel_of(&tls, &tls.target).is_some() && absolute_form_of(&tls, &tls.target).is_none()
        );
        assert_eq!(
            header_line(&tls).unwrap(),
            "Through the proxy http://127.0.0.1:3128 (--proxy), CONNECT tunnel to example.com:443"
        );
        let h2c = config("http://[::1]:8080/", "127.0.0.1:3128", true);
        assert!(
            tunnel_of(&h2c, &h2c.target).is_some() && absolute_form_of(&h2c, &h2c.target).is_none()
        );
        assert!(header_line(&h2c).unwrap().ends_with("CONNECT tunnel to [::1]:8080"));
    }

    #[test]
    fn the_report_never_holds_the_password() {
        let cfg = config("http://127.0.0.1:8080/", "http://u:secret@127.0.0.1:3128", false);
        let json = serde_json::to_string(&report_of(&cfg, tunnel_of(&cfg, &cfg.target).is_some()))
            .unwrap();
        assert_eq!(json, r#"{"url":"http://u@127.0.0.1:3128","from":"--proxy","tunnel":false}"#);
        assert!(!header_line(&cfg).unwrap().contains("secret"));
    }

    #[test]
    fn without_the_option_nothing_is_said() {
        let cfg = BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
        assert!(
            header_line(&cfg).is_none()
                && report_of(&cfg, tunnel_of(&cfg, &cfg.target).is_some()).is_none()
        );
        assert!(
            tunnel_of(&cfg, &cfg.target).is_none() && absolute_form_of(&cfg, &cfg.target).is_none()
        );
    }

    #[test]
    fn direct_runs_say_why() {
        let mut cfg = BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
        cfg.proxy = Some(Route::Direct("no_proxy (*) matches 127.0.0.1".into()));
        assert_eq!(
            header_line(&cfg).unwrap(),
            "No proxy (--proxy env): no_proxy (*) matches 127.0.0.1"
        );
        let json = serde_json::to_string(&report_of(&cfg, tunnel_of(&cfg, &cfg.target).is_some()))
            .unwrap();
        assert_eq!(
            json,
            r#"{"url":null,"from":"env","tunnel":false,"direct":"no_proxy (*) matches 127.0.0.1"}"#
        );
    }
}
