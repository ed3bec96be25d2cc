//! Comparing printed IR modulo resource names, which is how an
//! export-import round trip is judged: the import restores every constant,
//! but a `dense_resource` comes back under the reference's key.

use std::collections::BTreeMap;

/// `text` (printed MLIR) with every `dense_resource` key renamed `r0`, `r1`,
/// ... in order of first use, in the ops and in the `dialect_resources`
/// section alike, and the alignment an empty blob declares (it aligns
/// nothing, and producers write 0 or the element size) printed as 0. Two
/// modules that differ only in resource names print the same after this.
pub fn canonical_resource_names(text: &str) -> String {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut out = String::with_capacity(text.len());
    let mut in_resources = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("{-#") {
            in_resources = true;
        }
        if in_resources {
            let indent = line.len() - line.trim_start().len();
            let body = &line[indent..];
            if let Some((key, rest)) = split_resource_entry(body)
                && let Some(name) = names.get(unquote(key))
            {
                out.push_str(&line[..indent]);
                out.push_str(name);
                // `: "0x` + 8 hex digits of alignment + `"` = an empty blob.
                match rest.get(..14) {
                    Some(head) if head.ends_with('"') && head.starts_with(": \"0x") => {
                        out.push_str(": \"0x00000000\"");
                        out.push_str(&rest[14..]);
                    }
                    _ => out.push_str(rest),
                }
                continue;
            }
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("dense_resource<") {
            let start = at + "dense_resource<".len();
            out.push_str(&rest[..start]);
            let Some(len) = key_len(&rest[start..]) else {
                rest = &rest[start..];
                continue;
            };
            let key = unquote(&rest[start..start + len]).to_owned();
            let next = names.len();
            let name = names.entry(key).or_insert_with(|| format!("r{next}"));
            out.push_str(name);
            rest = &rest[start + len..];
        }
        out.push_str(rest);
    }
    out
}

/// The length of the key at the start of `s` (a bare identifier up to `>`,
/// or a quoted string with its quotes).
fn key_len(s: &str) -> Option<usize> {
    if let Some(inner) = s.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in inner.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => return Some(i + 2),
                _ => escaped = false,
            }
        }
        None
    } else {
        s.find('>')
    }
}

/// `KEY: "0x..."` of a resource entry: the key and what follows it.
fn split_resource_entry(body: &str) -> Option<(&str, &str)> {
    let len = if body.starts_with('"') {
        key_len(body)?
    } else {
        body.find(':')?
    };
    let (key, rest) = body.split_at(len);
    rest.starts_with(": \"0x").then_some((key, rest))
}

fn unquote(key: &str) -> &str {
    key.strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_are_renamed_in_order_of_first_use() {
        let a = "%0 = arith.constant dense_resource<torch_w> : tensor<2xf32>\n\
                 %1 = arith.constant dense_resource<\"b:1\"> : tensor<1xf32>\n\
                 %2 = arith.constant dense_resource<torch_w> : tensor<2xf32>\n\
                 {-#\n  dialect_resources: {\n    builtin: {\n      torch_w: \"0x0400000001020304\",\n      \"b:1\": \"0x04\"\n    }\n  }\n#-}\n";
        let b = a.replace("torch_w", "\"hurray.resource:w\"");
        let canonical = canonical_resource_names(a);
        assert_eq!(canonical, canonical_resource_names(&b));
        assert!(
            canonical.contains("dense_resource<r0>") && canonical.contains("dense_resource<r1>")
        );
        assert!(
            canonical.contains("      r0: \"0x0400000001020304\",\n      r1: \"0x04\""),
            "{canonical}"
        );
        // An empty blob's alignment does not count; data does.
        assert_eq!(
            canonical_resource_names(&a.replace("\"0x04\"", "\"0x00000000\"")),
            canonical_resource_names(&a.replace("\"0x04\"", "\"0x04000000\""))
        );
        assert_ne!(
            canonical,
            canonical_resource_names(&a.replace("01020304", "01020305"))
        );
    }
}
