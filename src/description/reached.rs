//! How a run reached its servers: each origin with its connections, where
//! they went instead of its host and port (`--connect-to`,
//! `--unix-socket`), whether they went through the proxy by a `CONNECT`
//! tunnel, the proxy itself and `-4`/`-6`.
//!
//! A live run's is made from its options ([`Reached::of`]); a saved run's
//! is read back from its JSON (`origins`, `proxy`, `ip_family`), so that
//! `pace report` and `pace merge` print the same header lines as the run
//! ([`crate::report::reached`] writes them).

use serde::{Deserialize, Serialize};

use crate::config::origins::{origin_name, Origins};
use crate::config::BenchConfig;
use crate::proxy::ProxyReport;
use crate::reach::Family;

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
    /// How `cfg`'s run reaches its servers.
    pub fn of(cfg: &BenchConfig) -> Reached {
        let origins = Origins::of(cfg);
        let connections =
            origins.connection_totals(|thread| cfg.connections_of_thread(thread), cfg.threads);
        let origins: Vec<OriginReach> = (origins.list.iter().zip(connections))
            .map(|((target, _), connections)| OriginReach {
                origin: origin_name(target),
                connections,
                connected_to: cfg.reach.redirected(target),
                tunnel: (cfg.proxy.as_ref())
                    .is_some_and(|route| route.tunnel(cfg.protocol, target).is_some()),
            })
            .collect();
        let tunnel = origins.iter().any(|origin| origin.tunnel);
        let proxy = cfg.proxy.as_ref().map(|route| route.report(tunnel));
        Reached { proxy, origins, family: cfg.reach.family }
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
}
