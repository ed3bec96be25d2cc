//! `hurray view`: the report's data (read back from the page's data block)
//! is the file's; what the page holds from the file cannot end its block;
//! `--stats` summarizes the values; a URL is read and never written.

use hurray::{ElementType, TensorDescriptor, Writer, shape};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn hurray(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = hurray(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The report data a page holds.
fn data_of(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_example_reports_every_tensor_with_zero_and_dynamic_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let (file, page) = (dir.path().join("ex.hurray"), dir.path().join("ex.html"));
    ok(&["example", s(&file)]);
    let out = ok(&["view", s(&file), "-o", s(&page)]);
    assert!(out.contains("ex.html: report of"), "{out}");
    let data = data_of(&page);
    let inspect: Value = serde_json::from_str(&ok(&["inspect", "--json", s(&file)])).unwrap();
    let names = |v: &Value| -> Vec<String> {
        v["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&data), names(&inspect));
    let empty = data["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["shape"] == serde_json::json!([3, 0, 5]));
    assert!(empty.is_some(), "an empty [3, 0, 5] tensor shows its 0");
    assert!(
        data["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["shape"].as_array().unwrap().contains(&Value::from("?"))),
        "a dynamic dimension shows as ?"
    );
    assert_eq!(data["stats"], Value::Bool(false));
    assert_eq!(
        data["totals"]["all"]["tensors"],
        data["tensors"].as_array().unwrap().len()
    );
    // The page loads nothing and allows only its own script.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("default-src 'none'") && html.contains("script-src 'sha256-"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn stats_are_the_values_own_and_markup_in_names_stays_data() {
    let dir = tempfile::tempdir().unwrap();
    let (file, page) = (dir.path().join("m.hurray"), dir.path().join("m.html"));
    let mut w = Writer::create(&file).unwrap();
    let values: Vec<f32> = (0..1000)
        .map(|i| i as f32 - 100.0)
        .chain([f32::NAN, f32::INFINITY])
        .collect();
    let hostile = "</script><script>alert(1)</script>";
    let d = TensorDescriptor::new(hostile, ElementType::Float32, shape(&[1002]));
    w.add_tensor(&d, &[hurray::as_bytes(&values)]).unwrap();
    let d = TensorDescriptor::new("c", ElementType::Complex64, shape(&[1]));
    w.add_tensor(&d, &[&[0; 8]]).unwrap();
    w.set_metadata("<!--", "-->&amp;");
    w.finish().unwrap();
    ok(&["view", s(&file), "-o", s(&page), "--stats"]);
    let html = std::fs::read_to_string(&page).unwrap();
    // One closing tag per script element of the template: the name's never.
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "the data block was ended early"
    );
    assert!(!html.contains("<!--"));
    let data = data_of(&page);
    let t = &data["tensors"].as_array().unwrap()[0];
    assert_eq!(t["name"], hostile);
    let st = &t["stats"];
    assert_eq!(
        (st["min"].as_f64(), st["max"].as_f64()),
        (Some(-100.0), Some(899.0))
    );
    assert_eq!(st["mean"].as_f64(), Some(399.5));
    assert_eq!(
        (st["nan"].as_u64(), st["inf"].as_u64(), st["count"].as_u64()),
        (Some(1), Some(1), Some(1002))
    );
    assert_eq!(
        st["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>(),
        1000
    );
    let c = &data["tensors"].as_array().unwrap()[1];
    assert!(c["stats"].is_null() && c["stats_note"].as_str().unwrap().contains("complex"));
}

#[test]
fn a_url_is_never_taken_for_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ex.hurray");
    ok(&["example", s(&file)]);
    let out = hurray(&["view", s(&file), "-o", "s3://bucket/report.html"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("local path"));
    assert!(!Path::new("s3:").exists());
}

#[cfg(feature = "remote")]
#[test]
fn a_checkpoint_in_s3_is_reported_with_stats() {
    let dir = tempfile::tempdir().unwrap();
    let server = hurray_s3_test_server::Server::start(dir.path().join("s3")).unwrap();
    let ckpt = server.bucket("models").unwrap().join("run");
    std::fs::create_dir_all(&ckpt).unwrap();
    let mut w = hurray::ShardedWriter::create(ckpt.join("model.hurray")).unwrap();
    w.set_max_shard_size(5000);
    for i in 0..4u32 {
        let v: Vec<f32> = (0..1000).map(|j| (i * 1000 + j) as f32).collect();
        let d = TensorDescriptor::new(
            format!("layers.{i}.w"),
            ElementType::Float32,
            shape(&[1000]),
        );
        w.add_tensor(&d, &[hurray::as_bytes(&v)]).unwrap();
    }
    w.finish().unwrap();
    let page = dir.path().join("r.html");
    let out = Command::new(env!("CARGO_BIN_EXE_hurray"))
        .args([
            "view",
            "s3://models/run/model.hurray",
            "-o",
            s(&page),
            "--stats",
        ])
        .envs(server.env())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = data_of(&page);
    assert_eq!(data["kind"], "sharded checkpoint");
    assert_eq!(data["members"].as_array().unwrap().len(), 4);
    let t = &data["tensors"].as_array().unwrap()[3];
    assert_eq!(
        (t["stats"]["min"].as_f64(), t["stats"]["max"].as_f64()),
        (Some(3000.0), Some(3999.0))
    );
    assert_eq!(data["totals"]["by_layer"].as_array().unwrap().len(), 4);
}
