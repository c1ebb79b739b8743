//! The checks that need the whole command line, once it is all read,
//! and what they build: the run's [`BenchConfig`] with its report,
//! output, SLO and metrics options. The files the options name are read
//! here, once, before anything starts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::super::options::bad_value;
use super::super::plan;
use super::grpc::{self, Grpc};
use super::BenchArgs;
use crate::config::origins::Origins;
use crate::config::targets::Targets;
use crate::config::{BenchConfig, Shard};
use crate::error::Error;
use crate::grpc::call::fields as grpc_fields;
use crate::metrics::{BearerToken, MetricsOptions};
use crate::protocol::Protocol;
use crate::proxy;
use crate::reach::Reach;
use crate::run::Bench;
use crate::slo::{self, Expectation};
use crate::target::{Scheme, Target};
use crate::tls::{self, TlsOptions};

/// The most `--streams`: a connection's client stream ids (odd, below
/// 2^31) could not be all open at once beyond this.
const MAX_STREAMS: usize = 1 << 30;

/// HdrHistogram accepts 1 to 5 significant digits.
const DIGITS: std::ops::RangeInclusive<usize> = 1..=5;

/// The checks that need the whole command line, done once it is all read
/// so that the last of repeated options is the one checked (`-t0 -t2`).
pub(in crate::cli) fn validate(mut typed: BenchArgs) -> Result<Bench, Error> {
    let mut words = std::mem::take(&mut typed.words).into_iter();
    let url = words.next();
    let missing_url = || Error::Usage("missing URL (try 'pace --help')".into());
    if url.is_none() && typed.targets.is_none() {
        return Err(missing_url());
    }
    check_ranges(&typed)?;
    check_requests(&typed)?;
    check_reach(&typed.reach, typed.proxy.is_some())?;
    let metrics = metrics_options(&typed)?;
    super::super::distinct_files(&typed.outputs)?;
    let body = match (typed.body.take(), &typed.body_file) {
        (Some(body), _) => Some(Arc::from(body)),
        (None, Some(file)) => Some(body_file(file)?),
        (None, None) => None,
    };
    let call = grpc::call_of(&typed)?;
    // A gRPC call's body is its message (grpc_messages).
    let grpc_messages = match &call {
        Some(Grpc::Call(call)) => call.messages.clone(),
        _ => Vec::new(),
    };
    let targets = typed.targets.as_deref().map(Targets::read).transpose()?;
    let mut target = match (&url, &targets) {
        (Some(url), _) => Target::parse(url).map_err(|err| Error::Usage(err.to_string()))?,
        (None, Some(targets)) => targets.first().target.clone(),
        (None, None) => return Err(missing_url()),
    };
    if let Some(call) = &call {
        // The method is the path; the URL names the server.
        target.path = call.path();
    }
    // With --targets, each target goes to its own URL.
    let (speaks_tls, plain) = match &targets {
        Some(targets) => (
            targets.list.iter().any(|request| request.target.scheme == Scheme::Https),
            "no target of --targets is https://",
        ),
        None => (target.scheme == Scheme::Https, "the run's URL is http://"),
    };
    let tls = tls_options(&typed, speaks_tls, plain)?;
    if typed.http3 {
        check_http3(&typed, &target, targets.as_ref())?;
    }
    // `user:password@` in the URL is Basic authorization (as curl sends
    // it), unless an -H header says otherwise. A target's own (the URL
    // taken from the first target) is that target's alone.
    let mut headers = typed.headers;
    if let Some(Grpc::Call(call)) = &call {
        call.write_fixed_metadata(&mut headers);
    }
    if call.is_some() {
        let typed_names: Vec<String> =
            headers.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        let own = grpc_fields(typed.timeout, typed.grpc_gzip).into_iter();
        headers.extend(own.filter(|(name, _)| !typed_names.contains(name)));
    }
    let authorized = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    let typed_url = url.is_some();
    if let Some(credentials) = target.basic_authorization().filter(|_| !authorized && typed_url) {
        headers.push(("Authorization".to_string(), credentials));
    }
    let proxy = typed.proxy.as_deref().map(|value| proxy::route(value, &target));
    let proxy = proxy.transpose().map_err(Error::Usage)?;
    let seed = plan::seed(&typed.plan);
    let (mode, duration) =
        plan::mode(&typed.plan, typed.duration, typed.duration_typed, typed.warmup)?;
    let requests = typed.requests.map(|n| n as u64);
    let duration =
        plan::bounded(&mode, duration, typed.duration_typed, requests, typed.warmup, seed);
    let config = BenchConfig {
        target,
        connections: typed.connections,
        threads: typed.threads,
        duration,
        timeout: typed.timeout,
        mode,
        warmup: typed.warmup,
        seed,
        shard: typed.shard,
        start_at: typed.start_at,
        headers,
        method: match call {
            Some(_) => "POST".to_string(),
            None => typed.method.unwrap_or_else(|| "GET".to_string()),
        },
        body,
        targets,
        targets_order: typed.targets_order.unwrap_or_default(),
        requests,
        batch_latency: typed.batch_latency,
        tls,
        // In range: checked against DIGITS by check_ranges.
        digits: typed.digits as u8,
        script: typed.script,
        script_args: words.collect(),
        // gRPC rides on HTTP/2.
        protocol: match (typed.http3, typed.http2 || call.is_some()) {
            (true, _) => Protocol::Http3,
            (false, true) => Protocol::Http2,
            (false, false) => Protocol::Http1,
        },
        streams: typed.streams.unwrap_or(1),
        grpc: call.as_ref().map(|call| call.path()[1..].to_string()),
        grpc_messages,
        grpc_call: match &call {
            Some(Grpc::Call(call)) => Some(call.clone()),
            _ => None,
        },
        grpc_from_server: match call {
            Some(Grpc::FromServer(wanted)) => Some(wanted),
            _ => None,
        },
        proxy,
        reach: typed.reach,
        provenance: None,
    };
    let fewest = (0..config.threads).map(|t| config.connections_of_thread(t)).min();
    Origins::of(&config).check(fewest.unwrap_or(0), config.threads).map_err(Error::Usage)?;
    // What needs the mode: a share of the target rate, the schedule lag.
    let expectation = Expectation { target_rate: config.target_rate() };
    slo::check(&typed.slo, &expectation).map_err(|why| bad_value("--slo", why))?;
    let mut report = typed.report;
    // wrk2: -U implies -L; asking for percentiles is asking to see them.
    report.latency |= report.u_latency || report.percentiles.is_some();
    Ok(Bench {
        config,
        report,
        outputs: typed.outputs,
        slo: typed.slo,
        strict: typed.strict,
        metrics,
        progress: typed.progress,
    })
}

/// Counts and durations that must not be zero, and their relations, in
/// wrk's order (threads and duration, then connections).
fn check_ranges(typed: &BenchArgs) -> Result<(), Error> {
    let fail = |message: String| Err(Error::Usage(message));
    if typed.threads == 0 {
        return fail("-t/--threads must be at least 1".into());
    }
    if typed.duration.is_zero() {
        return fail("-d/--duration must be greater than 0".into());
    }
    if typed.connections == 0 {
        return fail("-c/--connections must be at least 1".into());
    }
    match typed.streams {
        Some(0) => return fail("--streams must be at least 1".into()),
        Some(_) if !typed.http2 && !typed.http3 && typed.grpc.is_none() => {
            return fail(
                "--streams needs --http2 or --http3 (an HTTP/1.1 connection carries one request \
                 at a time)"
                    .into(),
            )
        }
        Some(n) if n > MAX_STREAMS => {
            return fail(format!("--streams must be at most {MAX_STREAMS} (HTTP/2 stream ids)"))
        }
        _ => {}
    }
    if typed.connections < typed.threads {
        return fail(format!(
            "number of connections ({}) must be >= threads ({})",
            typed.connections, typed.threads
        ));
    }
    let Shard { index, count } = typed.shard;
    let share = typed.connections / count + usize::from(index < typed.connections % count);
    if share < typed.threads {
        return fail(format!(
            "shard {index}/{count} opens {share} of the {} connections, fewer than its {} threads",
            typed.connections, typed.threads
        ));
    }
    if typed.timeout.is_zero() {
        return fail("-T/--timeout must be greater than 0".into());
    }
    if !DIGITS.contains(&typed.digits) {
        return fail(format!(
            "-D/--digits must be between {} and {} (got {})",
            DIGITS.start(),
            DIGITS.end(),
            typed.digits
        ));
    }
    Ok(())
}

/// The request options that exclude or need one another.
fn check_requests(typed: &BenchArgs) -> Result<(), Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    if typed.requests == Some(0) {
        return fail("-n/--requests must be at least 1");
    }
    if typed.body.is_some() && typed.body_file.is_some() {
        return fail("--body and --body-file cannot be used together");
    }
    if typed.targets.is_none() && typed.grpc.is_none() && typed.targets_order.is_some() {
        return fail("--targets-order needs --targets (or --grpc's --data)");
    }
    if typed.targets.is_some() && typed.method.is_some() {
        return fail("-m/--method cannot be used with --targets: each target names its method");
    }
    Ok(())
}

/// `-k` and the TLS options, their files read and checked once, before
/// anything starts. Options that only TLS uses are refused for an
/// http:// target rather than ignored (as `--streams` without `--http2`);
/// `-k` is wrk's and stays accepted anywhere.
/// The TLS options typed; refused when no connection speaks TLS
/// (`speaks_tls`), in the words of `plain`.
fn tls_options(typed: &BenchArgs, speaks_tls: bool, plain: &str) -> Result<TlsOptions, Error> {
    let typed_options = [
        ("--cacert", typed.cacert.is_some()),
        ("--cert", typed.cert.is_some()),
        ("--key", typed.key.is_some()),
        ("--tls-server-name", typed.tls_server_name.is_some()),
    ];
    let first_typed = typed_options.iter().find(|(_, typed)| *typed);
    if let (Some((option, _)), false) = (first_typed, speaks_tls) {
        return Err(Error::Usage(format!("{option} applies to https:// only, and {plain}")));
    }
    if typed.key.is_some() && typed.cert.is_none() {
        return Err(Error::Usage("--key needs --cert (the client certificate)".into()));
    }
    let client_certificate = match &typed.cert {
        Some(cert) => Some(tls::load_client_certificate(cert, typed.key.as_deref())?),
        None => None,
    };
    Ok(TlsOptions {
        insecure: typed.insecure,
        cacert: typed.cacert.as_deref().map(tls::load_cacert).transpose()?,
        client_certificate,
        server_name: typed.tls_server_name.clone(),
    })
}

/// What `--http3` cannot go with: QUIC runs over UDP and always over TLS.
fn check_http3(typed: &BenchArgs, target: &Target, targets: Option<&Targets>) -> Result<(), Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    if typed.http2 {
        return fail("--http2 and --http3 cannot be used together: choose one protocol");
    }
    if typed.grpc.is_some() {
        return fail("--grpc speaks HTTP/2: leave out --http3");
    }
    if typed.proxy.is_some() {
        return fail(
            "--proxy cannot be used with --http3: HTTP/3 runs over QUIC (UDP), which a proxy's \
             CONNECT tunnel (TCP) does not carry",
        );
    }
    if typed.reach.unix_socket.is_some() {
        return fail("--unix-socket cannot be used with --http3: HTTP/3 runs over QUIC (UDP)");
    }
    let plain = match targets {
        Some(targets) => targets.list.iter().any(|request| request.target.scheme == Scheme::Http),
        None => target.scheme == Scheme::Http,
    };
    if plain {
        return fail("--http3 needs https:// URLs: QUIC always runs over TLS");
    }
    Ok(())
}

/// `--unix-socket` leaves nothing for the options that pick an address;
/// through a proxy (`proxied`), the proxy picks it.
fn check_reach(reach: &Reach, proxied: bool) -> Result<(), Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    if proxied && (reach.unix_socket.is_some() || !reach.connect_to.is_empty()) {
        return fail(
            "--proxy cannot be used with --unix-socket or --connect-to: every connection goes to \
             the proxy, which connects to the URL's host",
        );
    }
    if reach.unix_socket.is_some() && (!reach.connect_to.is_empty() || reach.family.is_some()) {
        return fail(
            "--unix-socket cannot be used with --connect-to or -4/-6: every connection goes to \
             the socket",
        );
    }
    if reach.unix_socket.as_deref().is_some_and(|path| path.as_os_str().is_empty()) {
        return fail("--unix-socket needs the path of a socket");
    }
    Ok(())
}

/// `--metrics ADDR` and how long it lingers (`--metrics-linger`, which
/// needs it), and `--metrics-push URL` with its credentials (in the URL,
/// or `--metrics-push-token-file`, read here).
fn metrics_options(typed: &BenchArgs) -> Result<Option<MetricsOptions>, Error> {
    if typed.metrics.is_none() && typed.metrics_linger.is_some() {
        return Err(Error::Usage("--metrics-linger needs --metrics".into()));
    }
    let push_token =
        match (&typed.metrics_push, &typed.metrics_push_token) {
            (None, Some(_)) => {
                return Err(Error::Usage("--metrics-push-token-file needs --metrics-push".into()))
            }
            (Some(url), Some(_)) if url.userinfo.is_some() => return Err(Error::Usage(
                "--metrics-push-token-file and user:password@ in the --metrics-push URL cannot \
                 be used together"
                    .into(),
            )),
            (_, Some(file)) => Some(BearerToken::read(file)?),
            (_, None) => None,
        };
    if typed.metrics.is_none() && typed.metrics_push.is_none() {
        return Ok(None);
    }
    Ok(Some(MetricsOptions {
        listen: typed.metrics.clone(),
        linger: typed.metrics_linger.unwrap_or(Duration::ZERO),
        push: typed.metrics_push.clone(),
        push_token,
    }))
}

/// `--body-file`: read once, at the start.
fn body_file(path: &Path) -> Result<Arc<[u8]>, Error> {
    crate::files::read_bounded(path, crate::files::BODY_FILE).map(Arc::from)
}
