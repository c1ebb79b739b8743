//! The origins (scheme, host and port) the requests of a run go to, and
//! how the connections are spread over them.
//!
//! A run without `--targets`, or with a script (`-s`, which makes its own
//! requests), has one origin: the run's URL. A targets file may name
//! several: each target goes to its own. Every engine thread keeps
//! connections to every origin (its requests go round all targets), its
//! connections spread over the origins in proportion to their share of the
//! targets, at least one each ([`spread`]); so each thread needs at least
//! one connection per origin, or the run is refused ([`Origins::check`]).

use std::sync::Arc;

use crate::config::BenchConfig;
use crate::target::Target;

/// The origins of a run, in the order the targets first name them.
#[derive(Clone, Debug, PartialEq)]
pub struct Origins {
    /// Per origin: a target of it (the first; only its scheme, host and
    /// port matter) and how many targets go to it.
    pub list: Vec<(Target, usize)>,
    /// The origin of each target of the file (empty without targets).
    pub of_target: Vec<usize>,
}

impl Origins {
    /// The origins `cfg`'s requests go to.
    pub fn of(cfg: &BenchConfig) -> Origins {
        let targets = match &cfg.targets {
            Some(targets) if cfg.script.is_none() => targets,
            _ => return Origins { list: vec![(cfg.target.clone(), 1)], of_target: Vec::new() },
        };
        let mut list: Vec<(Target, usize)> = Vec::new();
        let mut of_target = Vec::with_capacity(targets.list.len());
        for request in &targets.list {
            let index = match list.iter().position(|(known, _)| same_origin(known, &request.target))
            {
                Some(index) => index,
                None => {
                    list.push((request.target.clone(), 0));
                    list.len() - 1
                }
            };
            list[index].1 += 1;
            of_target.push(index);
        }
        Origins { list, of_target }
    }

    /// `connections` (a thread's) spread over the origins.
    pub fn spread(&self, connections: usize) -> Vec<usize> {
        let shares: Vec<usize> = self.list.iter().map(|(_, share)| *share).collect();
        spread(&shares, connections)
    }

    /// Refuses a run whose threads cannot each have a connection to every
    /// origin: `fewest` is the fewest connections a thread has.
    pub fn check(&self, fewest: usize, threads: usize) -> Result<(), String> {
        let n = self.list.len();
        if fewest >= n {
            return Ok(());
        }
        Err(format!(
            "the targets name {n} origins (scheme, host and port) and every thread needs a \
             connection to each: with -t {threads}, -c must be at least {}",
            n * threads
        ))
    }

    /// The connections to each origin over `threads` threads, which have
    /// `connections_of_thread` each.
    pub fn connection_totals(
        &self,
        connections_of_thread: impl Fn(usize) -> usize,
        threads: usize,
    ) -> Vec<usize> {
        let mut totals = vec![0; self.list.len()];
        for thread in 0..threads {
            for (total, n) in totals.iter_mut().zip(self.spread(connections_of_thread(thread))) {
                *total += n;
            }
        }
        totals
    }
}

/// Same scheme, host (in any case) and port.
fn same_origin(a: &Target, b: &Target) -> bool {
    a.scheme == b.scheme && a.host.eq_ignore_ascii_case(&b.host) && a.port == b.port
}

/// `scheme://host:port`, the port always written.
pub fn origin_name(target: &Target) -> String {
    let host =
        if target.host.contains(':') { format!("[{}]", target.host) } else { target.host.clone() };
    format!("{}://{host}:{}", target.scheme_name.to_ascii_lowercase(), target.port)
}

/// How a target is named in the reports: `METHOD scheme://host:port/path`
/// (no user or password).
pub fn target_label(method: &str, target: &Target) -> String {
    format!("{method} {}{}", origin_name(target), target.path)
}

/// The labels of the targets the reports break the results down by: those
/// of a targets file of more than one target (sent without a script);
/// none otherwise.
pub fn target_labels(cfg: &BenchConfig) -> Vec<Arc<str>> {
    match &cfg.targets {
        Some(targets) if targets.list.len() > 1 && cfg.script.is_none() => targets
            .list
            .iter()
            .map(|request| Arc::from(target_label(&request.method, &request.target)))
            .collect(),
        _ => Vec::new(),
    }
}

/// `connections` spread over origins with these `shares` (targets each):
/// at least one each, the rest one at a time to the origin furthest below
/// its proportional part (the first of equals), so the counts add up to
/// `connections` and follow the shares as closely as whole connections
/// can. Needs `connections >= shares.len()` (see [`Origins::check`]).
pub fn spread(shares: &[usize], connections: usize) -> Vec<usize> {
    let total: usize = shares.iter().sum();
    let mut given = vec![1; shares.len()];
    for _ in shares.len()..connections {
        // Compared as given/share < other's: below its part the most.
        let behind =
            |i: usize| given[i] as f64 - connections as f64 * shares[i] as f64 / total as f64;
        let next = (0..shares.len())
            .min_by(|&a, &b| behind(a).total_cmp(&behind(b)))
            .expect("at least one origin");
        given[next] += 1;
    }
    given
}

/// A configuration for tests: a targets file of `urls`, a GET each.
#[cfg(test)]
pub fn config_with_targets(urls: &[&str]) -> BenchConfig {
    use crate::config::targets::{TargetRequest, Targets};
    let list = (urls.iter().enumerate())
        .map(|(i, url)| TargetRequest {
            line: i + 1,
            method: "GET".into(),
            target: Target::parse(url).unwrap(),
            headers: Vec::new(),
            body: None,
        })
        .collect();
    let mut cfg = BenchConfig::new(Target::parse(urls[0]).unwrap());
    cfg.targets = Some(Targets { file: "t.txt".into(), list });
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_follow_the_shares_at_least_one_each() {
        assert_eq!(spread(&[1, 2, 7], 4), [1, 1, 2]);
        assert_eq!(spread(&[1, 2, 7], 10), [1, 2, 7]);
        assert_eq!(spread(&[1, 2, 7], 3), [1, 1, 1]);
        assert_eq!(spread(&[1, 2, 7], 20), [2, 4, 14]);
        assert_eq!(spread(&[1, 1], 5), [3, 2]);
        assert_eq!(spread(&[5], 8), [8]);
        for c in 3..200 {
            let given = spread(&[1, 2, 7], c);
            assert_eq!(given.iter().sum::<usize>(), c);
            assert!(given.iter().all(|&n| n >= 1));
            // Proportional within one connection (beyond the minimum).
            for (n, share) in given.iter().zip([1, 2, 7]) {
                let part = c as f64 * share as f64 / 10.0;
                assert!(*n as f64 <= part.max(1.0) + 1.0, "{c}: {given:?}");
            }
        }
    }

    #[test]
    fn origins_in_order_of_first_mention() {
        let cfg = config_with_targets(&[
            "http://a:1/x",
            "http://b:1/",
            "http://A:1/y",
            "https://a:1/",
            "http://[::1]:8/",
            "http://b:1/z",
        ]);
        let origins = Origins::of(&cfg);
        let names: Vec<(String, usize)> =
            origins.list.iter().map(|(t, n)| (origin_name(t), *n)).collect();
        assert_eq!(
            names,
            [
                ("http://a:1".to_string(), 2),
                ("http://b:1".into(), 2),
                ("https://a:1".into(), 1),
                ("http://[::1]:8".into(), 1)
            ]
        );
        assert_eq!(origins.of_target, [0, 1, 0, 2, 3, 1]);
        assert_eq!(origins.list.len(), 4);
        assert_eq!(origins.connection_totals(|_| 5, 2), [4, 2, 2, 2]);
        assert_eq!(origins.check(4, 2), Ok(()));
        assert_eq!(
            origins.check(3, 2).unwrap_err(),
            "the targets name 4 origins (scheme, host and port) and every thread needs a \
             connection to each: with -t 2, -c must be at least 8"
        );
    }

    #[test]
    fn one_origin_without_targets_or_with_a_script() {
        let plain = BenchConfig::new(Target::parse("http://h/").unwrap());
        assert_eq!(Origins::of(&plain).list.len(), 1);
        let mut scripted = config_with_targets(&["http://a/", "http://b/"]);
        assert_eq!(Origins::of(&scripted).list.len(), 2);
        scripted.script = Some("s.lua".into());
        let origins = Origins::of(&scripted);
        assert!(origins.list.len() == 1 && origins.of_target.is_empty());
    }

    #[test]
    fn labels_name_method_origin_and_path_without_credentials() {
        let target = Target::parse("http://u:p@Host/a?b").unwrap();
        assert_eq!(target_label("POST", &target), "POST http://Host:80/a?b");
    }
}
