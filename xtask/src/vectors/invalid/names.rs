//! Invalid vectors of the header's names: tensor names, metadata keys and
//! the name index.

use super::{Bases, Expect, at_open, invalid};
use crate::vectors::Vector;
use crate::vectors::nav::{Nav, field, patch};
use anyhow::{Context, Result, ensure};

/// The invalid vectors of the names' rules.
pub(super) fn vectors(bases: &Bases<'_>, out: &mut Vec<Vector>) -> Result<()> {
    let Bases { dense, meta, .. } = *bases;
    out.push(invalid(
        "names_unsorted",
        "tensor a renamed c, so the list reads c, b",
        dense,
        Expect {
            tensor: Some("b"),
            ..at_open("NamesNotSorted")
        },
        |b| patch(b, |n| n.name(0), b'c'),
    )?);
    out.push(invalid(
        "names_duplicate",
        "tensor b renamed a: two tensors named a",
        dense,
        Expect {
            tensor: Some("a"),
            ..at_open("NamesNotSorted")
        },
        |b| patch(b, |n| n.name(1), b'a'),
    )?);
    out.push(invalid(
        "name_empty",
        "tensor a's name set to the empty string",
        dense,
        at_open("EmptyName"),
        |b| {
            patch(b, |n| Ok(n.name(0)? - 4), 0u32)?;
            patch(b, |n| n.name(0), 0u8)
        },
    )?);
    out.push(invalid(
        "metadata_unsorted",
        "file metadata key \"created_by\" renamed \"zreated_by\": keys no longer sorted",
        meta,
        Expect {
            field: Some("license"),
            ..at_open("MetadataNotSorted")
        },
        |b| {
            let key = |n: &Nav<'_>| {
                let kv = n.table_at(n.req(n.root(), field::header::METADATA)?, 0);
                Ok(n.string(n.req(kv, field::kv::KEY)?))
            };
            patch(b, key, b'z')
        },
    )?);
    out.push(invalid(
        "name_index_entry_out_of_range",
        "a used slot of the header's name index (format 1.1) set to 3 in a file of 2 tensors",
        dense,
        Expect {
            field: Some("name_index"),
            ..at_open("InvalidField")
        },
        |b| {
            let used_slot = |n: &Nav<'_>| {
                let v = n.follow(n.req(n.root(), field::header::NAME_INDEX)?);
                let len = n.u32(v);
                let used = (0..len)
                    .find(|&i| n.u32(v + 4 + 4 * i) != 0)
                    .context("an empty name index")?;
                Ok(v + 4 + 4 * used)
            };
            patch(b, used_slot, 3u32)
        },
    )?);
    out.push(invalid(
        "name_index_length_not_power_of_two",
        "the header's name index shortened from 4 to 3 slots",
        dense,
        Expect {
            field: Some("name_index"),
            ..at_open("InvalidField")
        },
        |b| {
            let index = |n: &Nav<'_>| {
                let v = n.follow(n.req(n.root(), field::header::NAME_INDEX)?);
                ensure!(n.u32(v) == 4, "expected a 4-slot index");
                Ok(v)
            };
            patch(b, index, 3u32)
        },
    )?);
    Ok(())
}
