//! Reading every tensor of a file through an object store's range GETs
//! (`ObjectSource` against the S3-compatible test server on 127.0.0.1) and
//! through `pread` (`PreadSource`), against `std::fs::read` of the same file
//! in the same run, page cache warm: the figure is what the HTTP path costs
//! over reading the bytes, not the network.
//!
//! The server shares the machine's cores with the client, so a real
//! network's latency is absent and the server's own work is counted. The
//! object is uploaded with a PUT, so the server keeps its ETag (for a file
//! put in its folder by hand, s3s-fs hashes the whole object on every GET).
//!
//! The file: `HURRAY_BENCH_MIB` MiB (default 256) of f32 tensors of 4 MiB.
//!
//!     cargo bench -p hurray-object-store --bench fetch

use hurray::source::PreadSource;
use hurray::{ElementType, File, TensorDescriptor, Writer, shape};
use hurray_object_store::ObjectSource;
use hurray_s3_test_server::Server;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TENSOR_BYTES: usize = 4 << 20;
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mib: usize = std::env::var("HURRAY_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).unwrap();
    server.bucket("bench").unwrap();
    let path = dir.path().join("model.hurray");
    let mut w = Writer::create(&path).unwrap();
    let data: Vec<f32> = (0..TENSOR_BYTES / 4).map(|i| i as f32).collect();
    for i in 0..(mib << 20) / TENSOR_BYTES {
        w.add_tensor(
            &TensorDescriptor::new(
                format!("t{i:05}"),
                ElementType::Float32,
                shape(&[(TENSOR_BYTES / 4) as u64]),
            ),
            &[hurray::as_bytes(&data)],
        )
        .unwrap();
    }
    w.finish().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let mut options = object_store::aws::AmazonS3Builder::new().with_bucket_name("bench");
    for (k, v) in server.options() {
        options = options.with_config(k.parse().unwrap(), v);
    }
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(options.build().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(object_store::ObjectStoreExt::put(
            &*store,
            &object_store::path::Path::from("model.hurray"),
            bytes.into(),
        ))
        .unwrap();
    let s3 = |in_flight: usize| {
        Arc::new(
            ObjectSource::new(
                Arc::clone(&store),
                object_store::path::Path::from("model.hurray"),
                "s3://bench/model.hurray",
            )
            .with_requests_in_flight(in_flight),
        )
    };
    let whole = tokio::runtime::Runtime::new().unwrap();
    type Case<'a> = (String, Box<dyn Fn() -> usize + 'a>);
    let mut cases: Vec<Case<'_>> = vec![(
        "std::fs::read".into(),
        Box::new(|| std::fs::read(&path).unwrap().len()),
    )];
    cases.push((
        "pread, File::fetch_all".into(),
        Box::new(|| {
            let f = File::open_source(Arc::new(PreadSource::open(&path).unwrap())).unwrap();
            f.fetch_all().unwrap().iter().map(|t| t.byte_len()).sum()
        }),
    ));
    // The peer: object_store's own GET of the whole object, one stream.
    let (store_ref, whole_ref) = (&store, &whole);
    cases.push((
        "object_store get, whole object".into(),
        Box::new(move || {
            whole_ref.block_on(async {
                let path = object_store::path::Path::from("model.hurray");
                let got = object_store::ObjectStoreExt::get(&**store_ref, &path)
                    .await
                    .unwrap();
                got.bytes().await.unwrap().len()
            })
        }),
    ));
    for n in [1, 4, 16] {
        let s3 = &s3;
        cases.push((
            format!("S3 range GETs, {n} in flight"),
            Box::new(move || {
                let f = File::open_source(s3(n)).unwrap();
                f.fetch_all().unwrap().iter().map(|t| t.byte_len()).sum()
            }),
        ));
    }
    // Warm every path (and the page cache) once.
    for (_, run) in &cases {
        run();
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..RUNS {
        for (i, (_, run)) in cases.iter().enumerate() {
            let start = Instant::now();
            let bytes = run();
            times[i].push(start.elapsed());
            assert!(bytes as u64 <= len && bytes as u64 > len / 2);
        }
    }
    let open = {
        let start = Instant::now();
        for _ in 0..20 {
            File::open_source(s3(16)).unwrap();
        }
        start.elapsed() / 20
    };
    let raw = median(times[0].clone());
    println!(
        "{} MiB in {} tensors of 4 MiB, page cache warm, {RUNS} rounds (medians):",
        len >> 20,
        len as usize / TENSOR_BYTES
    );
    for ((name, _), t) in cases.iter().zip(times) {
        let t = median(t);
        println!(
            "  {name:34} {:8.1} ms  {:7.0} MiB/s  {:.2}x std::fs::read",
            t.as_secs_f64() * 1e3,
            (len as f64 / (1 << 20) as f64) / t.as_secs_f64(),
            raw.as_secs_f64() / t.as_secs_f64()
        );
    }
    println!(
        "  open over S3 (2 range GETs)      {:8.2} ms",
        open.as_secs_f64() * 1e3
    );
}
