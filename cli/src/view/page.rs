//! The report as one self-contained HTML page: the template, its style and
//! script inline, and the report's data as JSON in a data block the script
//! reads. Nothing from the file is ever written as markup: the data block
//! escapes every character that could end it, and the page's content
//! security policy lets only this script run (its hash) and loads nothing.

use super::model::Report;
use anyhow::Result;
use base64::Engine;
use sha2::Digest;

const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// `json` safe inside `<script type="application/json">`: no `<`, `>` or
/// `&` (so no `</script>` and no comment opener), and no U+2028/U+2029.
/// JSON reads the escapes back as the same characters.
fn escape_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The CSP source of the script: its SHA-256, as browsers hash inline
/// scripts.
fn script_hash() -> String {
    let digest = sha2::Sha256::digest(SCRIPT.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The page of `report`.
pub(crate) fn render(report: &Report) -> Result<String> {
    let data = escape_json(&serde_json::to_string(report)?);
    // Filled in one pass, so no placeholder text in the data is replaced.
    let mut out = String::with_capacity(TEMPLATE.len() + STYLE.len() + SCRIPT.len() + data.len());
    let mut rest = TEMPLATE;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").map_or(rest.len(), |e| at + e + 2);
        match &rest[at..end] {
            "{{STYLE}}" => out.push_str(STYLE),
            "{{SCRIPT}}" => out.push_str(SCRIPT),
            "{{SCRIPT_HASH}}" => out.push_str(&script_hash()),
            "{{DATA}}" => out.push_str(&data),
            other => out.push_str(other),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_in_the_data_can_end_its_block() {
        let json = serde_json::to_string(&[
            "</script><script>alert(1)</script>",
            "<!--",
            "a&b",
            "\u{2028}",
        ])
        .unwrap();
        let escaped = escape_json(&json);
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!escaped.contains(bad), "{escaped}");
        }
        let back: Vec<String> = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back[0], "</script><script>alert(1)</script>");
    }

    #[test]
    fn the_policy_names_the_script_that_is_inline() {
        assert!(TEMPLATE.contains("<script>{{SCRIPT}}</script>"));
        assert!(TEMPLATE.contains("script-src '{{SCRIPT_HASH}}'"));
        assert!(
            !SCRIPT.contains("innerHTML") && !SCRIPT.contains("eval("),
            "markup from data"
        );
        assert!(script_hash().starts_with("sha256-") && script_hash().len() == 7 + 44);
    }
}
