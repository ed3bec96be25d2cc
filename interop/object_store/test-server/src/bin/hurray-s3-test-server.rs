//! `hurray-s3-test-server ROOT`: serves the buckets under ROOT on 127.0.0.1
//! for tests in other languages. Prints `endpoint=http://127.0.0.1:PORT`
//! and serves until its stdin closes.

use std::io::{BufRead, Write};

fn main() -> std::io::Result<()> {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: hurray-s3-test-server ROOT");
        std::process::exit(2);
    };
    let server = hurray_s3_test_server::Server::start(root)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "endpoint={}", server.endpoint())?;
    out.flush()?;
    drop(out);
    // Serve (on the server's own thread) until the parent closes stdin.
    for line in std::io::stdin().lock().lines() {
        line?;
    }
    drop(server);
    Ok(())
}
