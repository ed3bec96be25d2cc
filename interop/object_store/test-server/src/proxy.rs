//! [`FaultProxy`]: an HTTP proxy in front of the test server that breaks
//! some of the GETs passing through it, as a flaky network or a loaded S3
//! endpoint does: a connection reset mid-body, a `503 SlowDown`, a body cut
//! short, a stall of seconds mid-body.
//!
//! It serves one request per connection (it asks the server for
//! `Connection: close`), which keeps every response's end the end of its
//! stream. Signed requests pass unchanged: only the `Connection` header,
//! which no signature covers, is rewritten.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which GETs fail, and how: the `n`th GET through the proxy, counting from
/// one, meets the first fault whose period divides `n` (0: never), unless
/// the last `max_in_a_row` GETs of the same object all failed.
#[derive(Debug, Clone)]
pub struct Faults {
    /// The connection is reset (RST) after half the body.
    pub reset_every: u64,
    /// `503 SlowDown`, as S3 throttles, without asking the server.
    pub slow_down_every: u64,
    /// Half the body, then the connection closes cleanly: a short body.
    pub truncate_every: u64,
    /// Half the body, a pause of `stall`, then the rest.
    pub stall_every: u64,
    pub stall: Duration,
    /// Every GET is refused with `503 SlowDown` (a store that never recovers).
    pub always_slow_down: bool,
    /// The most GETs of one object that fail in a row (0: no bound), so that
    /// a reader's bounded retries always get through.
    pub max_in_a_row: u32,
}

impl Faults {
    fn pick(&self, n: u64) -> Option<Fault> {
        if self.always_slow_down {
            return Some(Fault::SlowDown);
        }
        let every = |period: u64| period != 0 && n.is_multiple_of(period);
        if every(self.reset_every) {
            Some(Fault::Reset)
        } else if every(self.slow_down_every) {
            Some(Fault::SlowDown)
        } else if every(self.truncate_every) {
            Some(Fault::Truncate)
        } else if every(self.stall_every) {
            Some(Fault::Stall)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fault {
    Reset,
    SlowDown,
    Truncate,
    Stall,
}

/// What went through the proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Every GET, faulted or not.
    pub gets: u64,
    pub resets: u64,
    pub slow_downs: u64,
    pub truncations: u64,
    pub stalls: u64,
}

/// A running proxy; dropping it stops it.
#[derive(Debug)]
pub struct FaultProxy {
    endpoint: String,
    counts: Arc<Mutex<FaultCounts>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Proxies to `upstream` (`http://127.0.0.1:PORT`), breaking GETs as
    /// `faults` says.
    pub fn start(upstream: &str, faults: Faults) -> std::io::Result<FaultProxy> {
        let upstream = upstream
            .strip_prefix("http://")
            .ok_or_else(|| std::io::Error::other("the upstream is an http:// endpoint"))?
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let counts: Arc<Mutex<FaultCounts>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            upstream,
            faults,
            counts: Arc::clone(&counts),
            next: AtomicU64::new(1),
            in_a_row: Mutex::default(),
        });
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("s3-fault-proxy".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if thread_stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let shared = Arc::clone(&shared);
                    std::thread::spawn(move || {
                        let _ = shared.serve(client);
                    });
                }
            })?;
        Ok(FaultProxy {
            endpoint,
            counts,
            stop,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// What went through so far, and forgets it.
    pub fn take_counts(&self) -> FaultCounts {
        self.counts
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.endpoint.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    upstream: String,
    faults: Faults,
    counts: Arc<Mutex<FaultCounts>>,
    next: AtomicU64,
    /// GETs of each object (by path) that failed in a row.
    in_a_row: Mutex<HashMap<String, u32>>,
}

impl Shared {
    fn count(&self, f: impl FnOnce(&mut FaultCounts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// One request of `client`, then the connection closes.
    fn serve(&self, client: TcpStream) -> std::io::Result<()> {
        let mut reader = BufReader::new(client.try_clone()?);
        let mut head = Vec::new();
        let mut content_length = 0usize;
        let mut method = String::new();
        let mut path = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if method.is_empty() {
                let mut words = line.split(' ');
                method = words.next().unwrap_or_default().to_owned();
                let target = words.next().unwrap_or_default();
                path = target.split('?').next().unwrap_or_default().to_owned();
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                head.extend_from_slice(b"connection: close\r\n\r\n");
                break;
            }
            if !lower.starts_with("connection:") {
                head.extend_from_slice(line.as_bytes());
            }
        }
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body)?;
        let fault = (method == "GET")
            .then(|| {
                let n = self.next.fetch_add(1, Ordering::SeqCst);
                self.count(|c| c.gets += 1);
                let fault = self.faults.pick(n);
                let Ok(mut in_a_row) = self.in_a_row.lock() else {
                    return fault;
                };
                let run = in_a_row.entry(path).or_default();
                let cap = self.faults.max_in_a_row;
                match fault {
                    Some(_) if cap == 0 || *run < cap => {
                        *run += 1;
                        fault
                    }
                    _ => {
                        *run = 0;
                        None
                    }
                }
            })
            .flatten();
        let mut client = client;
        if fault == Some(Fault::SlowDown) {
            self.count(|c| c.slow_downs += 1);
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
            write!(
                client,
                "HTTP/1.1 503 Slow Down\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )?;
            return client.flush();
        }
        let mut upstream = TcpStream::connect(&self.upstream)?;
        upstream.write_all(&head)?;
        upstream.write_all(&body)?;
        let mut response = Vec::new();
        upstream.read_to_end(&mut response)?;
        let body_at = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(response.len(), |p| p + 4);
        let half = body_at + (response.len() - body_at) / 2;
        match fault {
            None | Some(Fault::SlowDown) => client.write_all(&response)?,
            Some(Fault::Reset) => {
                self.count(|c| c.resets += 1);
                client.write_all(&response[..half])?;
                client.flush()?;
                // A linger of zero makes close send RST, not FIN.
                socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO))?;
                return Ok(());
            }
            Some(Fault::Truncate) => {
                self.count(|c| c.truncations += 1);
                client.write_all(&response[..half])?;
                client.flush()?;
                return client.shutdown(Shutdown::Both);
            }
            Some(Fault::Stall) => {
                self.count(|c| c.stalls += 1);
                client.write_all(&response[..half])?;
                client.flush()?;
                std::thread::sleep(self.faults.stall);
                client.write_all(&response[half..])?;
            }
        }
        client.flush()
    }
}

impl std::fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} GETs: {} reset mid-body, {} 503 SlowDown, {} cut short, {} stalled",
            self.gets, self.resets, self.slow_downs, self.truncations, self.stalls
        )
    }
}
