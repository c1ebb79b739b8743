//! How a run reached its servers, as the reports say it: each origin with
//! its connections, where they went instead of its host and port
//! (`--connect-to`, `--unix-socket`), whether they went through the proxy
//! by a `CONNECT` tunnel, the proxy itself and `-4`/`-6`.
//!
//! A live run's is made from its options ([`Reached::of`]); a saved run's
//! is read back from its JSON (`origins`, `proxy`, `ip_family`), so that
//! `pace report` and `pace merge` print the same header lines as the run.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::config::BenchConfig;
use crate::proxy::{self, ProxyReport};
use crate::reach::Family;
use crate::requests::origins::{origin_name, Origins};

/// One origin (scheme, host and port) of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginReach {
    /// `scheme://host:port`.
    pub origin: String,
    /// The connections this run (or the merged runs) kept to it.
    pub connections: usize,
    /// Where they went instead of its host and port: `unix:/path`
    /// (`--unix-socket`) or `host:port` (`--connect-to`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_to: Option<String>,
    /// Through the proxy by a `CONNECT` tunnel (else, with a proxy, its
    /// requests in absolute form).
    #[serde(default)]
    pub tunnel: bool,
}

/// How the run reached its servers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reached {
    /// In the order the targets first name them (the URL's alone without
    /// a targets file).
    pub origins: Vec<OriginReach>,
    /// `--proxy`: the proxy, or why `--proxy env` went direct.
    pub proxy: Option<ProxyReport>,
    /// `-4`/`-6`.
    pub family: Option<Family>,
}

impl Reached {
    /// How `cfg`'s run reaches its servers: as recorded, for the report of
    /// a saved run; else from its options.
    pub fn of(cfg: &BenchConfig) -> Reached {
        if let Some(saved) = &cfg.reached {
            return saved.clone();
        }
        let origins = Origins::of(cfg);
        let connections =
            origins.connection_totals(|thread| cfg.connections_of_thread(thread), cfg.threads);
        let origins: Vec<OriginReach> = (origins.list.iter().zip(connections))
            .map(|((target, _), connections)| OriginReach {
                origin: origin_name(target),
                connections,
                connected_to: cfg.reach.redirected(target),
                tunnel: proxy::tunnel_of(cfg, target).is_some(),
            })
            .collect();
        let tunnel = origins.iter().any(|origin| origin.tunnel);
        Reached { proxy: proxy::report_of(cfg, tunnel), origins, family: cfg.reach.family }
    }

    /// The same servers reached the same way, whatever the connections.
    pub fn same_way(&self, other: &Reached) -> bool {
        let route = |o: &OriginReach| (o.origin.clone(), o.connected_to.clone(), o.tunnel);
        self.proxy == other.proxy
            && self.family == other.family
            && self.origins.iter().map(route).eq(other.origins.iter().map(route))
    }

    /// Several runs reached the same way, together: their connections
    /// added up per origin. None when they differ.
    pub fn together(all: &[&Reached]) -> Option<Reached> {
        let (first, rest) = all.split_first()?;
        if !rest.iter().all(|other| first.same_way(other)) {
            return None;
        }
        let mut sum = (*first).clone();
        for other in rest {
            for (origin, more) in sum.origins.iter_mut().zip(&other.origins) {
                origin.connections += more.connections;
            }
        }
        Some(sum)
    }

    /// The header line of the connections per origin, with several.
    pub fn write_spread(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.origins.len() < 2 {
            return Ok(());
        }
        let parts: Vec<String> =
            self.origins.iter().map(|o| format!("{} to {}", o.connections, o.origin)).collect();
        writeln!(out, "  connections per origin: {}", parts.join(", "))
    }

    /// The header lines of the proxy, and of where the connections went,
    /// when an option changed it.
    pub fn write_routes(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(line) = self.proxy_line() {
            writeln!(out, "  {line}")?;
        }
        if let Some(line) = self.connecting_line() {
            writeln!(out, "  {line}")?;
        }
        Ok(())
    }

    /// `Through the proxy URL (--proxy), ...`, or why `--proxy env` went
    /// direct.
    fn proxy_line(&self) -> Option<String> {
        let proxy = self.proxy.as_ref()?;
        if let Some(why) = &proxy.direct {
            return Some(format!("No proxy (--proxy env): {why}"));
        }
        let named = match proxy.from.as_str() {
            "--proxy" => "--proxy".to_string(),
            variable => format!("--proxy env: {variable}"),
        };
        let (tunnelled, plain): (Vec<&OriginReach>, Vec<&OriginReach>) =
            self.origins.iter().partition(|o| o.tunnel);
        let mut how = Vec::new();
        if !plain.is_empty() {
            how.push(match self.origins.len() {
                1 => "absolute-form requests".to_string(),
                _ => format!("absolute-form requests to {}", names(&plain, |o| o.origin.clone())),
            });
        }
        if !tunnelled.is_empty() {
            let tunnels = if tunnelled.len() == 1 { "tunnel" } else { "tunnels" };
            how.push(format!("CONNECT {tunnels} to {}", names(&tunnelled, authority)));
        }
        let url = proxy.url.as_deref().unwrap_or_default();
        Some(format!("Through the proxy {url} ({named}), {}", how.join("; ")))
    }

    /// `connecting to ADDR (--connect-to), over IPv6 only (-6)`; with
    /// several origins, each redirected one with its address.
    fn connecting_line(&self) -> Option<String> {
        let redirected: Vec<&OriginReach> =
            self.origins.iter().filter(|o| o.connected_to.is_some()).collect();
        let to_socket = redirected
            .first()
            .and_then(|o| o.connected_to.as_deref())
            .filter(|to| to.starts_with("unix:"));
        let to = match (to_socket, self.origins.len()) {
            _ if redirected.is_empty() => None,
            (Some(socket), _) => Some(format!("to {socket} (--unix-socket)")),
            (None, 1) => {
                Some(format!("to {} (--connect-to)", redirected[0].connected_to.as_deref()?))
            }
            (None, _) => {
                let each = |o: &OriginReach| {
                    format!("{} to {}", o.origin, o.connected_to.as_deref().unwrap_or_default())
                };
                Some(format!("{} (--connect-to)", names(&redirected, each)))
            }
        };
        // A Unix socket has no address family.
        let only = (self.family.filter(|_| to_socket.is_none()))
            .map(|family| format!("over {family} only ({})", family.option()));
        let parts: Vec<String> = to.into_iter().chain(only).collect();
        (!parts.is_empty()).then(|| format!("connecting {}", parts.join(", ")))
    }
}

/// `host:port` of an origin `scheme://host:port`.
fn authority(origin: &OriginReach) -> String {
    let text = origin.origin.as_str();
    text.split_once("://").map_or(text, |(_, authority)| authority).to_string()
}

fn names(origins: &[&OriginReach], name: impl Fn(&OriginReach) -> String) -> String {
    origins.iter().map(|o| name(o)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::reach::{ConnectTo, Reach};
    use crate::requests::origins::config_with_targets;
    use crate::target::Target;

    fn config(url: &str) -> BenchConfig {
        BenchConfig::new(Target::parse(url).unwrap())
    }

    /// `cfg` with a targets file of `urls` (a GET each), 3 connections
    /// for each of 2 threads.
    fn with_targets(urls: &[&str]) -> BenchConfig {
        let mut cfg = config_with_targets(urls);
        cfg.connections = 6;
        cfg.threads = 2;
        cfg
    }

    fn header(reached: &Reached) -> String {
        let mut out = Vec::new();
        reached.write_spread(&mut out).unwrap();
        reached.write_routes(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn rules(texts: &[&str]) -> Vec<ConnectTo> {
        texts.iter().map(|text| ConnectTo::parse(text).unwrap()).collect()
    }

    #[test]
    fn one_origin_says_where_its_connections_go_when_redirected() {
        let mut cfg = config("http://pace.test:8080/");
        assert_eq!(header(&Reached::of(&cfg)), "");
        cfg.reach.unix_socket = Some(Path::new("/run/a.sock").into());
        assert_eq!(
            header(&Reached::of(&cfg)),
            "  connecting to unix:/run/a.sock (--unix-socket)\n"
        );
        cfg.reach = Reach {
            connect_to: rules(&["pace.test:8080:[::1]:9000"]),
            family: Some(Family::V6),
            ..Reach::default()
        };
        let reached = Reached::of(&cfg);
        assert_eq!(reached.origins[0].connected_to.as_deref(), Some("[::1]:9000"));
        assert_eq!(
            header(&reached),
            "  connecting to [::1]:9000 (--connect-to), over IPv6 only (-6)\n"
        );
        cfg.reach = Reach { family: Some(Family::V4), ..Reach::default() };
        assert_eq!(header(&Reached::of(&cfg)), "  connecting over IPv4 only (-4)\n");
        // A rule that does not match changes nothing.
        cfg.reach = Reach { connect_to: rules(&["other::a:1"]), ..Reach::default() };
        assert_eq!(header(&Reached::of(&cfg)), "");
    }

    #[test]
    fn several_origins_each_say_their_own() {
        let mut cfg =
            with_targets(&["http://a:80/", "http://a:80/x", "https://b/", "http://c:81/"]);
        cfg.reach.connect_to = rules(&["a:80:127.0.0.1:9000", "c:81:[::1]:9001"]);
        cfg.proxy = Some(crate::proxy::route("http://p:3128", &cfg.target).unwrap());
        let reached = Reached::of(&cfg);
        // 3 connections a thread: one to each origin.
        let counts: Vec<usize> = reached.origins.iter().map(|o| o.connections).collect();
        assert_eq!(counts, [2, 2, 2]);
        assert_eq!(
            header(&reached),
            "  connections per origin: 2 to http://a:80, 2 to https://b:443, 2 to http://c:81\n  \
             Through the proxy http://p:3128 (--proxy), absolute-form requests to http://a:80, \
             http://c:81; CONNECT tunnel to b:443\n  \
             connecting http://a:80 to 127.0.0.1:9000, http://c:81 to [::1]:9001 (--connect-to)\n"
        );
        assert!(reached.proxy.as_ref().unwrap().tunnel, "b tunnels");
    }

    #[test]
    fn runs_reached_the_same_way_add_their_connections() {
        let cfg = with_targets(&["http://a:80/", "http://b:80/"]);
        let one = Reached::of(&cfg);
        let sum = Reached::together(&[&one, &one]).unwrap();
        assert_eq!(sum.origins.iter().map(|o| o.connections).collect::<Vec<_>>(), [8, 4]);
        let mut other = one.clone();
        other.family = Some(Family::V4);
        assert!(Reached::together(&[&one, &other]).is_none());
        assert!(Reached::together(&[]).is_none());
    }
}
