//! `TensorField` for every field type a derived struct may hold.

use super::check::{check_declared, invalid};
use super::{FieldSpec, LayoutKind, QuantSpec, TensorField, check, infer_shape};
use crate::derive_support::fields::*;
use crate::descriptor::{Dim, Layout, TensorDescriptor};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::quantization::Quantization;
use crate::reader::TensorRef;
// The typed views' own cast: an empty buffer is never dereferenced (ADR-007).
use crate::ElementType;
use crate::views::{Indices, cast};
use std::borrow::Cow;
use std::marker::PhantomData;

/// Packed and quantized fields read the values buffer as one run: dense,
/// not strided.
fn contiguous_layout(t: &TensorRef<'_>, operation: &'static str) -> Result<()> {
    match t.layout() {
        Layout::Dense => Ok(()),
        other => Err(Error::LayoutMismatch {
            tensor: t.name().to_owned(),
            found: other.name(),
            needed: "dense",
            operation,
        }),
    }
}

fn dense_layout(t: &TensorRef<'_>) -> Result<()> {
    match t.layout() {
        Layout::Dense | Layout::Strided(_) => Ok(()),
        other => Err(Error::LayoutMismatch {
            tensor: t.name().to_owned(),
            found: other.name(),
            needed: "dense",
            operation: "loading a dense field",
        }),
    }
}

impl<'a, T: Element> TensorField<'a> for &'a [T] {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape = infer_shape(name, spec, self.len() as u64)?;
        Ok(TensorDescriptor::new(name, T::TYPE, shape))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![bytemuck::cast_slice(self)]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        check(&t, spec, T::TYPE, 1)?;
        dense_layout(&t)?;
        t.as_slice::<T>()
    }
}

impl<'a, T: Element> TensorField<'a> for Vec<T> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        self.as_slice().descriptor(name, spec)
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![bytemuck::cast_slice(self)]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        <&'a [T]>::load(t, spec).map(<[T]>::to_vec)
    }
}

impl<'a, P: PackedElement> TensorField<'a> for Packed<'a, P> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape = infer_shape(name, spec, self.len)?;
        Ok(TensorDescriptor::new(name, P::TYPE, shape))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![&self.bytes]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        check(&t, spec, P::TYPE, 1)?;
        contiguous_layout(&t, "loading a packed field")?;
        let view = t.packed()?;
        Ok(Packed {
            bytes: Cow::Borrowed(view.bytes()),
            len: view.len(),
            marker: PhantomData,
        })
    }
}

impl<'a, T: Element, I: SparseIndex> TensorField<'a> for Compressed<'a, T, I> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape = vec![Dim::Fixed(self.shape[0]), Dim::Fixed(self.shape[1])];
        check_declared(name, spec, &shape)?;
        let nnz = self.nnz();
        let layout = match spec.layout {
            LayoutKind::Csc => Layout::Csc {
                nnz,
                index_type: I::TYPE,
            },
            _ => Layout::Csr {
                nnz,
                index_type: I::TYPE,
            },
        };
        Ok(TensorDescriptor::new(name, T::TYPE, shape).with_layout(layout))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![
            bytemuck::cast_slice(&self.pointers),
            bytemuck::cast_slice(&self.indices),
            bytemuck::cast_slice(&self.values),
        ]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        check(&t, spec, T::TYPE, 2)?;
        let view = match spec.layout {
            LayoutKind::Csc => t.csc()?,
            _ => t.csr()?,
        };
        let dims = t.shape().to_wire();
        Ok(Compressed {
            shape: [dims[0], dims[1]],
            // Pointers and indices share the tensor's index type.
            pointers: Cow::Borrowed(typed_indices(&t, view.pointers)?),
            indices: Cow::Borrowed(typed_indices(&t, view.indices)?),
            values: Cow::Borrowed(typed_values(&t, view.values_as::<T>())?),
        })
    }
}

/// A sparse view's indices as `I`, or a mismatch naming the stored width.
fn typed_indices<'v, I: SparseIndex>(t: &TensorRef<'_>, indices: Indices<'v>) -> Result<&'v [I]> {
    I::from_indices(indices).ok_or_else(|| Error::TypeMismatch {
        tensor: t.name().to_owned(),
        requested: I::TYPE,
        found: match indices {
            Indices::I32(_) => ElementType::Int32,
            Indices::I64(_) => ElementType::Int64,
        },
    })
}

/// A sparse view's values as `T`, or a mismatch naming the stored type.
fn typed_values<'v, T: Element>(t: &TensorRef<'_>, values: Result<&'v [T]>) -> Result<&'v [T]> {
    values.map_err(|_| Error::TypeMismatch {
        tensor: t.name().to_owned(),
        requested: T::TYPE,
        found: t.element_type(),
    })
}

impl<'a, T: Element, I: SparseIndex> TensorField<'a> for Coo<'a, T, I> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape: Vec<Dim> = self.shape.iter().map(|&d| Dim::Fixed(d)).collect();
        check_declared(name, spec, &shape)?;
        // Recomputed, never taken from the value: the flag is a promise the
        // reader checks.
        let canonical = is_sorted_unique::<I>(&self.indices, self.shape.len());
        crate::views::check_coo_indices(name, &self.shape, I::as_indices(&self.indices), false)?;
        let layout = Layout::Coo {
            nnz: self.nnz(),
            index_type: I::TYPE,
            canonical,
        };
        Ok(TensorDescriptor::new(name, T::TYPE, shape).with_layout(layout))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![
            bytemuck::cast_slice(&self.indices),
            bytemuck::cast_slice(&self.values),
        ]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        // Any rank unless the field declares a shape.
        check(&t, spec, T::TYPE, t.shape().rank())?;
        let view = t.coo()?;
        let canonical = matches!(
            t.layout(),
            Layout::Coo {
                canonical: true,
                ..
            }
        );
        Ok(Coo {
            shape: t.shape().to_wire(),
            indices: Cow::Borrowed(typed_indices(&t, view.indices)?),
            values: Cow::Borrowed(typed_values(&t, view.values_as::<T>())?),
            canonical,
        })
    }
}

impl<'a, T: Element, S: Element> TensorField<'a> for Quantized<'a, T, S> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape = infer_shape(name, spec, self.values.len() as u64)?;
        let q = quantization::<S>(name, spec, self.zero_points.as_ref().map(|_| T::TYPE))?;
        Ok(TensorDescriptor::new(name, T::TYPE, shape).with_quantization(q))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![
            bytemuck::cast_slice(&self.values),
            bytemuck::cast_slice(&self.scales),
            self.zero_points
                .as_deref()
                .map_or(&[], bytemuck::cast_slice),
        ]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        let view = quantized_view(&t, spec, T::TYPE, S::TYPE)?;
        Ok(Quantized {
            values: Cow::Borrowed(t.as_slice::<T>()?),
            scales: Cow::Borrowed(cast::<S>(t.name(), view.scales)?),
            zero_points: match view.quantization.zero_point_type {
                Some(_) => Some(Cow::Borrowed(cast::<T>(t.name(), view.zero_points)?)),
                None => None,
            },
        })
    }
}

/// Checks a stored quantized tensor against the field (element, scale and
/// zero-point types, layout) and returns its view.
fn quantized_view<'a>(
    t: &TensorRef<'a>,
    spec: &FieldSpec,
    storage: ElementType,
    scale: ElementType,
) -> Result<crate::views::QuantizedView<'a>> {
    check(t, spec, storage, 1)?;
    contiguous_layout(t, "loading a quantized field")?;
    let view = t.quantized()?;
    let q = &view.quantization;
    let typed = |want: ElementType, found: ElementType| {
        if want == found {
            Ok(())
        } else {
            Err(Error::TypeMismatch {
                tensor: t.name().to_owned(),
                requested: want,
                found,
            })
        }
    };
    typed(scale, q.scale_type)?;
    if let Some(zp) = q.zero_point_type {
        typed(storage, zp)?;
    }
    Ok(view)
}

fn quantization<S: Element>(
    name: &str,
    spec: &FieldSpec,
    zero_point_type: Option<ElementType>,
) -> Result<Quantization> {
    let Some(q) = spec.quantization else {
        return Err(invalid(
            name,
            "quantization",
            "absent".into(),
            "a quantized field needs a scheme".into(),
        ));
    };
    Ok(Quantization {
        zero_point_type,
        ..Quantization::new(q.scheme, q.expressed_type, S::TYPE)
    })
}

impl<'a, P: PackedElement, S: Element> TensorField<'a> for PackedQuantized<'a, P, S> {
    fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
        let shape = infer_shape(name, spec, self.values.len())?;
        let q = quantization::<S>(name, spec, self.zero_points.as_ref().map(|_| P::TYPE))?;
        Ok(TensorDescriptor::new(name, P::TYPE, shape).with_quantization(q))
    }
    fn buffers(&self) -> Vec<&[u8]> {
        vec![
            self.values.bytes(),
            bytemuck::cast_slice(&self.scales),
            self.zero_points.as_ref().map_or(&[], Packed::bytes),
        ]
    }
    fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
        let view = quantized_view(&t, spec, P::TYPE, S::TYPE)?;
        let scales = cast::<S>(t.name(), view.scales)?;
        let packed = t.packed()?;
        Ok(PackedQuantized {
            values: Packed {
                bytes: Cow::Borrowed(packed.bytes()),
                len: packed.len(),
                marker: PhantomData,
            },
            scales: Cow::Borrowed(scales),
            zero_points: match view.quantization.zero_point_type {
                // One zero point per scale.
                Some(_) => Some(Packed::from_bytes(view.zero_points, scales.len() as u64)?),
                None => None,
            },
        })
    }
}

/// `ndarray` fields (the `ndarray` feature): the array's own shape is
/// written; on load the stored shape becomes the view's.
#[cfg(feature = "ndarray")]
mod nd {
    use super::*;
    use ndarray::{Array, ArrayView, Dimension, IxDyn};

    fn describe<T: Element>(
        name: &str,
        spec: &FieldSpec,
        dims: &[usize],
        standard: bool,
    ) -> Result<TensorDescriptor> {
        if !standard {
            return Err(invalid(
                name,
                "layout",
                "non-standard strides".into(),
                "an ndarray field is written in standard (row-major, contiguous) layout: \
                 make it so with `as_standard_layout()`"
                    .into(),
            ));
        }
        let shape: Vec<Dim> = dims.iter().map(|&d| Dim::Fixed(d as u64)).collect();
        check_declared(name, spec, &shape)?;
        Ok(TensorDescriptor::new(name, T::TYPE, shape))
    }

    fn view<'a, T: Element, D: Dimension>(
        t: TensorRef<'a>,
        spec: &FieldSpec,
    ) -> Result<ArrayView<'a, T, D>> {
        let rank = D::NDIM.unwrap_or_else(|| t.shape().rank());
        check(&t, spec, T::TYPE, rank)?;
        dense_layout(&t)?;
        let data = t.as_slice::<T>()?;
        let too_big = || Error::SizeOverflow {
            tensor: t.name().to_owned(),
            field: "shape",
        };
        let dims = t
            .shape()
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => usize::try_from(n).map_err(|_| too_big()),
                Dim::Dynamic => Err(Error::NoData {
                    tensor: t.name().to_owned(),
                }),
            })
            .collect::<Result<Vec<usize>>>()?;
        let wrong_rank = || {
            invalid(
                t.name(),
                "rank",
                dims.len().to_string(),
                format!("the field's array type has rank {rank}"),
            )
        };
        let dim = D::from_dimension(&IxDyn(&dims)).ok_or_else(wrong_rank)?;
        ArrayView::from_shape(dim, data)
            .map_err(|e| invalid(t.name(), "shape", format!("{dims:?}"), e.to_string()))
    }

    impl<'a, T: Element, D: Dimension> TensorField<'a> for ArrayView<'a, T, D> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            describe::<T>(name, spec, self.shape(), self.is_standard_layout())
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![self.as_slice().map_or(&[][..], bytemuck::cast_slice)]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            view(t, spec)
        }
    }

    impl<'a, T: Element, D: Dimension> TensorField<'a> for Array<T, D> {
        fn descriptor(&self, name: &str, spec: &FieldSpec) -> Result<TensorDescriptor> {
            describe::<T>(name, spec, self.shape(), self.is_standard_layout())
        }
        fn buffers(&self) -> Vec<&[u8]> {
            vec![self.as_slice().map_or(&[][..], bytemuck::cast_slice)]
        }
        fn load(t: TensorRef<'a>, spec: &FieldSpec) -> Result<Self> {
            view::<T, D>(t, spec).map(|v| v.to_owned())
        }
    }
}

/// A dimension list as a descriptor shape (for `#[derive(Descriptor)]`).
pub fn static_descriptor(
    name: &str,
    element_type: ElementType,
    shape: &[Dim],
    quantization: Option<(QuantSpec, ElementType)>,
) -> TensorDescriptor {
    let mut d = TensorDescriptor::new(name, element_type, shape.to_vec());
    if let Some((q, scale_type)) = quantization {
        d = d.with_quantization(Quantization::new(q.scheme, q.expressed_type, scale_type));
    }
    if shape.contains(&Dim::Dynamic) {
        d = d.into_descriptor_only();
    }
    d
}

/// Evaluated in a const by `#[derive(Element)]`: a newtype has the size of its field.
pub const fn assert_same_size<A, B>() {
    assert!(
        std::mem::size_of::<A>() == std::mem::size_of::<B>(),
        "an Element newtype must have the size of its field"
    );
}
