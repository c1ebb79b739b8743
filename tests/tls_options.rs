//! The TLS options end to end (`--cacert`, `--cert`/`--key`,
//! `--tls-server-name`), with a CA and certificates made by each test
//! (rcgen): nginx trusting that CA for client certificates
//! (`ssl_verify_client on`) over HTTP/1.1 and HTTP/2, a rustls server
//! written here that refuses in TLS (an alert) where nginx answers 400,
//! and files that are wrong, refused before any connection.

mod common;

use std::fs;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{in_ci, load_lock, pace, Listen, Nginx, NginxOptions, Run};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
};

const LIMIT: Duration = Duration::from_secs(30);

const RSA_PKCS1: &str = include_str!("fixtures/tls/rsa-pkcs1.pem");
const RSA_PKCS8: &str = include_str!("fixtures/tls/rsa-pkcs8.pem");
const EC_SEC1: &str = include_str!("fixtures/tls/ec-sec1.pem");
const EC_PKCS8: &str = include_str!("fixtures/tls/ec-pkcs8.pem");

/// A CA of the test's own, and the files of the certificates it signs, in
/// a temporary directory. Every certificate names its subject: verifiers
/// find an issuer by name (rcgen's default is one name for all).
struct Pki {
    dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = named(name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pki = Pki { dir: tempfile::tempdir().unwrap(), ca };
        pki.write("ca.pem", &pki.ca.pem());
        pki
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, text).unwrap();
        path
    }

    /// `{name}.pem` and `{name}-key.pem`: a certificate for `names` (DNS
    /// names or addresses) signed by the CA, for a new key (PKCS #8) or
    /// `key` (PKCS #8 PEM; its file is then written by the caller in the
    /// format under test).
    fn issue(&self, name: &str, names: &[&str], key: Option<&str>) -> (PathBuf, PathBuf) {
        let key = match key {
            Some(pem) => KeyPair::from_pem(pem).unwrap(),
            None => KeyPair::generate().unwrap(),
        };
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = named(names[0]);
        let certificate = params.signed_by(&key, &self.ca).unwrap();
        let cert = self.write(&format!("{name}.pem"), &certificate.pem());
        let key = self.write(&format!("{name}-key.pem"), &key.serialize_pem());
        (cert, key)
    }

    fn ca_file(&self) -> String {
        text(&self.path("ca.pem"))
    }
}

fn named(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

fn https(addr: SocketAddr) -> String {
    format!("https://{addr}/index.html")
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// nginx over TLS with a certificate for `names` from `pki`'s CA, asking
/// clients for a certificate from that CA when `mtls`, logging requests.
fn nginx(pki: &Pki, listen: Listen, names: &[&str], mtls: bool) -> Option<Nginx> {
    let certificate = pki.issue("server", names, None);
    Nginx::start_with(NginxOptions {
        listen,
        access_log: true,
        certificate: Some(certificate),
        client_ca: mtls.then(|| pki.path("ca.pem")),
        ..NginxOptions::default()
    })
}

/// `requests` requests, all answered 200, and nginx logged `logged` in all
/// (its log is of every run against it), each answered 200.
fn assert_answered(run: &Run, nginx: &Nginx, requests: u64, logged: u64, protocol: &str) {
    run.assert_ok();
    let report = run.report();
    assert_eq!(report.requests(), requests, "{run}");
    assert!(report.socket_errors().is_none(), "{run}");
    assert_eq!(report.non_2xx_3xx(), None, "{run}");
    let log = nginx.access_log();
    assert_eq!(log.len() as u64, logged, "nginx logged {log:?}\n{run}");
    for line in log {
        assert_eq!(line, format!("{protocol} GET /index.html 200"), "{run}");
    }
}

/// The one line pace printed on stderr before stopping with `code`.
fn refused(run: &Run, code: i32) -> &str {
    run.assert_code(code);
    assert_eq!(run.stdout, "", "no header, no report\n{run}");
    let stderr = run.stderr.trim_end();
    assert_eq!(stderr.lines().count(), 1, "one line on stderr\n{run}");
    assert!(!stderr.contains("panicked"), "{run}");
    stderr
}

#[test]
fn cacert_trusts_a_ca_of_ones_own_instead_of_the_systems() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let Some(nginx) = nginx(&pki, Listen::Https1, &["127.0.0.1"], false) else { return };
    let target = https(nginx.addr);
    let run = pace(&["--cacert", &pki.ca_file(), "-t1", "-c1", "-n", "20", &target], LIMIT);
    assert_answered(&run, &nginx, 20, 20, "HTTP/1.1");
    // The system's store does not know the CA.
    let run = pace(&["-t1", "-c1", "-n", "20", &target], LIMIT);
    let stderr = refused(&run, 2);
    if stderr.starts_with("pace: no trusted CA certificates found on this system") && !in_ci() {
        eprintln!("\n!!!!!!!!!! no system trust store (apt-get install ca-certificates): the certificate check did not run !!!!!!!!!!\n");
        return;
    }
    let failed = format!("pace: TLS handshake with {} failed: ", nginx.addr);
    assert!(stderr.starts_with(&failed), "{run}");
    assert!(
        stderr.contains("the server's certificate is not signed by a CA that pace trusts"),
        "{run}"
    );
    assert!(stderr.ends_with("(trust its CA with --cacert FILE, or use -k/--insecure to skip certificate verification)"), "{run}");
    // -k wins over --cacert: nothing is verified.
    let other = Pki::new("another CA");
    let run = pace(&["-k", "--cacert", &other.ca_file(), "-t1", "-c1", "-n", "5", &target], LIMIT);
    run.assert_ok();
    assert_eq!(run.report().requests(), 5, "{run}");
}

#[test]
fn tls_server_name_is_the_name_verified_for_an_address() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let Some(nginx) = nginx(&pki, Listen::Https1, &["pace.test"], false) else { return };
    let target = https(nginx.addr);
    let run = pace(&["--cacert", &pki.ca_file(), "-t1", "-c1", "-n", "20", &target], LIMIT);
    let stderr = refused(&run, 2);
    let words = "the server's certificate is not valid for 127.0.0.1: it names pace.test";
    assert!(stderr.contains(words), "{run}");
    assert!(stderr.contains("(--tls-server-name NAME verifies another name"), "{run}");
    let named = ["--cacert", &pki.ca_file(), "--tls-server-name", "pace.test"];
    let run = pace(&[&named[..], &["-t1", "-c1", "-n", "20", &target]].concat(), LIMIT);
    assert_answered(&run, &nginx, 20, 20, "HTTP/1.1");
}

/// nginx's `ssl_verify_client on` accepts the handshake without a
/// certificate and answers 400 to every request: pace warns before the
/// run that it asked for one, and the requests count as non-2xx.
#[test]
fn mutual_tls_with_nginx_in_every_key_format() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let Some(nginx) = nginx(&pki, Listen::Https1, &["127.0.0.1"], true) else { return };
    let target = https(nginx.addr);
    let mut answered = 0;
    let (cert, key) = pki.issue("client", &["client.test"], None);
    let rsa_cert = pki.issue("rsa", &["client.test"], Some(RSA_PKCS8)).0;
    let rsa_key = pki.write("rsa-pkcs1.pem", RSA_PKCS1);
    let ec_cert = pki.issue("ec", &["client.test"], Some(EC_PKCS8)).0;
    let ec_key = pki.write("ec-sec1.pem", EC_SEC1);
    let both = pki.write("both.pem", &(text_of(&ec_cert) + EC_SEC1));
    let pairs = [
        vec!["--cert", &text(&cert), "--key", &text(&key)],
        vec!["--cert", &text(&rsa_cert), "--key", &text(&rsa_key)],
        vec!["--cert", &text(&ec_cert), "--key", &text(&ec_key)],
        vec!["--cert", &text(&both)],
    ]
    .map(|pair| pair.into_iter().map(str::to_string).collect::<Vec<_>>());
    for pair in &pairs {
        let mut args: Vec<&str> = pair.iter().map(String::as_str).collect();
        let ca = pki.ca_file();
        args.extend(["--cacert", &ca, "-t1", "-c1", "-n", "10", &target]);
        let run = pace(&args, LIMIT);
        answered += 10;
        assert_answered(&run, &nginx, 10, answered, "HTTP/1.1");
        assert!(!run.stderr.contains("warning"), "{run}");
    }
    let run = pace(&["--cacert", &pki.ca_file(), "-t1", "-c1", "-n", "5", &target], LIMIT);
    run.assert_ok();
    assert!(
        run.stderr.contains(&format!(
            "pace: warning: the server at {} asked for a client certificate and none was given; \
             if it requires one, it will refuse the requests (use --cert and --key)",
            nginx.addr
        )),
        "{run}"
    );
    assert_eq!(run.report().non_2xx_3xx(), Some(5), "{run}");
}

/// Issue 34, item 7: a client certificate nginx does not trust gets 400
/// ("The SSL certificate error") to every request, where a missing one
/// got a hint and this one none. The report names the certificate.
#[test]
fn a_client_certificate_nginx_does_not_trust_is_named_in_the_report() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let Some(nginx) = nginx(&pki, Listen::Https1, &["127.0.0.1"], true) else { return };
    let stranger = Pki::new("a CA nginx does not know");
    let (cert, key) = stranger.issue("client", &["client.test"], None);
    let mtls = ["--cacert", &pki.ca_file(), "--cert", &text(&cert), "--key", &text(&key)];
    let target = https(nginx.addr);
    let run = pace(&[&mtls[..], &["-t1", "-c1", "-n", "5", &target]].concat(), LIMIT);
    run.assert_ok();
    assert_eq!(run.report().non_2xx_3xx(), Some(5), "{run}");
    let hint = run.stdout.lines().find(|l| l.ends_with("[client_certificate_refused]"));
    let hint = hint.unwrap_or_else(|| panic!("no hint\n{run}"));
    assert!(
        hint.starts_with(
            "Warning: 5 of the 5 responses were 400 Bad Request, and a client certificate was \
             given (--cert)"
        ),
        "{run}"
    );
    assert!(hint.contains("ssl_client_certificate"), "{run}");
    // The certificate nginx trusts gets no such hint.
    let (good, good_key) = pki.issue("trusted", &["client.test"], None);
    let trusted = ["--cacert", &pki.ca_file(), "--cert", &text(&good), "--key", &text(&good_key)];
    let run = pace(&[&trusted[..], &["-t1", "-c1", "-n", "5", &target]].concat(), LIMIT);
    run.assert_ok();
    assert!(!run.stdout.contains("Warning"), "{run}");
}

fn text_of(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

#[test]
fn mutual_tls_over_http2() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let Some(nginx) = nginx(&pki, Listen::H2, &["127.0.0.1"], true) else { return };
    let (cert, key) = pki.issue("client", &["client.test"], None);
    let (ca, cert, key) = (pki.ca_file(), text(&cert), text(&key));
    let tls = ["--cacert", &ca, "--cert", &cert, "--key", &key];
    let run = pace(
        &[&tls[..], &["--http2", "-t1", "-c1", "-n", "20", &https(nginx.addr)]].concat(),
        LIMIT,
    );
    assert_answered(&run, &nginx, 20, 20, "HTTP/2.0");
}

/// A server that requires a client certificate from `ca` (a PEM file) in
/// TLS itself, as rustls, Go or OpenSSL's `SSL_VERIFY_FAIL_IF_NO_PEER_CERT`
/// do: it ends the handshake with an alert. It only shakes hands: pace
/// stops at its check before the run.
fn strict_server(
    pki: &Pki,
    versions: &'static [&'static rustls::SupportedProtocolVersion],
) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = pki.issue("strict", &["127.0.0.1"], None);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(pki.path("ca.pem")).unwrap()).unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_file(cert).unwrap()],
            PrivateKeyDer::from_pem_file(key).unwrap(),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { continue };
            let mut session = rustls::ServerConnection::new(config.clone()).unwrap();
            let _ = socket.set_read_timeout(Some(LIMIT));
            // complete_io sends the alert of a failed handshake before
            // returning its error; a TLS 1.3 client has sent its
            // certificate and Finished by then.
            let done: io::Result<()> = (|| {
                while session.is_handshaking() {
                    session.complete_io(&mut socket)?;
                }
                Ok(())
            })();
            drop(done);
        }
    });
    addr
}

#[test]
fn a_server_refusing_in_tls_is_one_error_in_words() {
    let _load = load_lock();
    const TLS12: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];
    for versions in [rustls::DEFAULT_VERSIONS, TLS12] {
        let pki = Pki::new("pace test CA");
        let addr = strict_server(&pki, versions);
        let target = https(addr);
        let failed = format!("pace: TLS handshake with {addr} failed: ");
        let run = pace(&["--cacert", &pki.ca_file(), "-t1", "-c1", "-n", "5", &target], LIMIT);
        let stderr = refused(&run, 2);
        assert!(stderr.starts_with(&failed), "{run}");
        assert!(
            stderr.contains("the server asked for a client certificate and none was given (use --cert and --key)"),
            "{run}"
        );
        // The client's own verdict on the server's certificate is said as
        // such, though the server asked for one of the client's.
        let other = Pki::new("another CA");
        let run = pace(&["--cacert", &other.ca_file(), "-t1", "-c1", "-n", "5", &target], LIMIT);
        let stderr = refused(&run, 2);
        assert!(stderr.starts_with(&format!("{failed}the server's certificate ")), "{run}");
        assert!(!stderr.contains("client certificate"), "{run}");
        // A certificate from a CA the server does not trust.
        let (cert, key) = other.issue("client", &["client.test"], None);
        let (cert, key) = (text(&cert), text(&key));
        let args = ["--cacert", &pki.ca_file(), "--cert", &cert, "--key", &key];
        let run = pace(&[&args[..], &["-t1", "-c1", "-n", "5", &target]].concat(), LIMIT);
        let stderr = refused(&run, 2);
        assert!(stderr.starts_with(&failed), "{run}");
        assert!(
            stderr.contains("the server refused the client certificate (alert unknown_ca)")
                || stderr
                    .contains("the server refused the client certificate (alert bad_certificate)"),
            "{run}"
        );
    }
}

/// What pace says of TLS reads as words, never as rustls' Rust names.
fn assert_no_rust_names(run: &Run) {
    for rust in ["Other(", "OtherError", "InvalidCertificate", "UnknownIssuer", "AlertReceived"] {
        assert!(!run.stderr.contains(rust), "{rust} in:\n{run}");
    }
}

/// A self-signed certificate as `openssl req -x509` makes one by default:
/// a CA certificate (`basicConstraints CA:TRUE`), here for `names`.
fn self_signed_ca_certificate(pki: &Pki, names: &[&str]) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name = named(names[0]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let certificate = params.self_signed(&key).unwrap();
    let cert = pki.write("self-signed.pem", &certificate.pem());
    let key = pki.write("self-signed-key.pem", &key.serialize_pem());
    (cert, key)
}

/// curl trusts a self-signed certificate given to --cacert though it is a
/// CA certificate (webpki refuses a CA in the server's place): so does
/// pace, when it is exactly the one given, valid, and for the name.
/// Otherwise the error says what is wrong and what to do, in words.
#[test]
fn a_self_signed_ca_certificate_given_to_cacert_is_trusted() {
    let _load = load_lock();
    let pki = Pki::new("pace test CA");
    let (cert, key) = self_signed_ca_certificate(&pki, &["127.0.0.1"]);
    let Some(nginx) = Nginx::start_with(NginxOptions {
        listen: Listen::Https1,
        access_log: true,
        certificate: Some((cert.clone(), key)),
        ..NginxOptions::default()
    }) else {
        return;
    };
    let target = https(nginx.addr);
    let run = pace(&["--cacert", &text(&cert), "-t1", "-c1", "-n", "10", &target], LIMIT);
    assert_answered(&run, &nginx, 10, 10, "HTTP/1.1");
    let failed = format!("pace: TLS handshake with {} failed: ", nginx.addr);
    let ca_words = "the server's certificate is a CA certificate (basicConstraints CA:TRUE, as \
                    openssl req -x509 makes one) used as the server's own";
    // Trusted as a CA by another name: still not valid for the URL's.
    let other_name = ["--tls-server-name", "other.test"];
    let run = pace(&[&other_name[..], &["--cacert", &text(&cert), &target]].concat(), LIMIT);
    let stderr = refused(&run, 2);
    assert!(stderr.starts_with(&failed), "{run}");
    assert!(stderr.contains("is not valid for other.test: it names 127.0.0.1"), "{run}");
    // Not given: trust exactly it, as curl does.
    let run = pace(&["--cacert", &pki.ca_file(), &target], LIMIT);
    assert_eq!(
        refused(&run, 2),
        format!(
            "{failed}{ca_words} and not itself in --cacert (give --cacert exactly this \
             certificate: pace then trusts it as curl does; or use -k/--insecure to skip \
             certificate verification)"
        ),
        "{run}"
    );
    assert_no_rust_names(&run);
    let run = pace(&[&target], LIMIT);
    let stderr = refused(&run, 2);
    if !stderr.starts_with("pace: no trusted CA certificates found on this system") || in_ci() {
        assert_eq!(
            stderr,
            format!(
                "{failed}{ca_words} (trust exactly this certificate with --cacert FILE, as curl \
                 does, or use -k/--insecure to skip certificate verification)"
            ),
            "{run}"
        );
    }
}

/// `openssl x509 -req` makes an X.509 version 1 certificate, which
/// webpki does not read. As a client certificate pace sends it as curl
/// does (nginx accepts it); as the server's, the error says why it cannot
/// be used, in words.
#[test]
fn version_1_certificates_from_openssl_x509_req() {
    let _load = load_lock();
    if !common::installed("/usr/bin/openssl", "openssl", "version 1 certificates") {
        return;
    }
    let pki = Pki::new("pace test CA");
    let ca_key = pki.write("ca-key.pem", &pki.ca.key().serialize_pem());
    let version_1 = |name: &str, subject: &str| {
        let (csr, cert, key) = (
            pki.path(&format!("{name}.csr")),
            pki.path(&format!("{name}.pem")),
            pki.path(&format!("{name}-key.pem")),
        );
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &text(&key),
            "-subj",
            &format!("/CN={subject}"),
            "-out",
            &text(&csr),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &text(&csr),
            "-CA",
            &pki.ca_file(),
            "-CAkey",
            &text(&ca_key),
            "-days",
            "2",
            "-out",
            &text(&cert),
        ]);
        (cert, key)
    };
    // A client certificate: sent, and nginx takes it.
    let (client, client_key) = version_1("client", "client.test");
    let Some(nginx) = nginx(&pki, Listen::Https1, &["127.0.0.1"], true) else { return };
    let target = https(nginx.addr);
    let mtls = ["--cacert", &pki.ca_file(), "--cert", &text(&client), "--key", &text(&client_key)];
    let run = pace(&[&mtls[..], &["-t1", "-c1", "-n", "10", &target]].concat(), LIMIT);
    assert_answered(&run, &nginx, 10, 10, "HTTP/1.1");
    drop(nginx);
    // The server's: refused in words, with what to do.
    let (server, server_key) = version_1("server-v1", "127.0.0.1");
    let Some(nginx) = Nginx::start_with(NginxOptions {
        listen: Listen::Https1,
        certificate: Some((server, server_key)),
        ..NginxOptions::default()
    }) else {
        return;
    };
    let target = https(nginx.addr);
    for insecure in [&[][..], &["-k"][..]] {
        let run = pace(&[insecure, &["--cacert", &pki.ca_file(), &target]].concat(), LIMIT);
        assert_eq!(
            refused(&run, 2),
            format!(
                "pace: TLS handshake with {} failed: the server's certificate is an X.509 \
                 version 1 certificate: rustls reads version 3 certificates only (openssl req \
                 -x509 makes one; openssl x509 -req does with -extfile) (-k/--insecure does not \
                 help: rustls needs to read the certificate to check the handshake)",
                nginx.addr
            ),
            "{run}"
        );
    }
}

fn openssl(args: &[&str]) {
    let out = std::process::Command::new("openssl").args(args).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Files that cannot be read exit 2, files that are wrong exit 1, each
/// with one line naming the file, and no connection is made.
#[test]
fn wrong_files_are_refused_before_any_connection() {
    let pki = Pki::new("pace test CA");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = https(listener.local_addr().unwrap());
    let (cert, _) = pki.issue("client", &["client.test"], None);
    let cert = text(&cert);
    let missing = text(&pki.path("missing.pem"));
    let garbage = text(&pki.write("garbage.pem", "-----BEGIN CERTIFICATE-----\n%%%\n"));
    let empty = text(&pki.write("empty.pem", ""));
    let other_key = text(&pki.write("other-key.pem", RSA_PKCS1));
    let cases: [(&[&str], i32, String); 8] = [
        (
            &["--cacert", &missing],
            2,
            format!("cannot read --cacert {missing}: No such file or directory"),
        ),
        (
            &["--cert", &missing],
            2,
            format!("cannot read --cert {missing}: No such file or directory"),
        ),
        (
            &["--cert", &cert, "--key", &missing],
            2,
            format!("cannot read --key {missing}: No such file or directory"),
        ),
        (
            &["--cacert", &garbage],
            1,
            format!("--cacert {garbage}: not a valid PEM file: a section has no END line"),
        ),
        (
            &["--cacert", &empty],
            1,
            format!("--cacert {empty}: holds no certificate (PEM: -----BEGIN CERTIFICATE-----)"),
        ),
        (
            &["--cert", &cert],
            1,
            format!("--cert {cert}: holds no private key: name the key's file with --key"),
        ),
        (
            &["--cert", &cert, "--key", &other_key],
            1,
            format!("--key {other_key}: the key is not the certificate's ({cert})"),
        ),
        (&["--key", &other_key], 1, "--key needs --cert (the client certificate)".to_string()),
    ];
    for (options, code, message) in cases {
        let run = pace(&[options, &[target.as_str()]].concat(), LIMIT);
        assert_eq!(refused(&run, code), format!("pace: {message}"), "{run}");
    }
    let run = pace(&["--cacert", &pki.ca_file(), "http://127.0.0.1:1/"], LIMIT);
    assert_eq!(
        refused(&run, 1),
        "pace: --cacert applies to https:// only, and the run's URL is http://",
        "{run}"
    );
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == io::ErrorKind::WouldBlock),
        "a connection was made: {accepted:?}"
    );
}
