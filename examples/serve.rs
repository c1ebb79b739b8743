//! The built-in server on its own, for throughput checks against other
//! load generators: `cargo run --release --example serve -- [ADDR] [THREADS] [tls]`
//! (defaults 127.0.0.1:8080, 1 thread, plain HTTP). Stops on Ctrl-C.

use pace::serve::{self, ServeOptions};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut opts = ServeOptions::default();
    if let Some(addr) = args.next() {
        opts.bind = addr.parse().map_err(std::io::Error::other)?;
    }
    if let Some(threads) = args.next() {
        opts.threads = threads.parse().map_err(std::io::Error::other)?;
    }
    opts.tls = args.next().as_deref() == Some("tls");
    serve::run(opts)
}
