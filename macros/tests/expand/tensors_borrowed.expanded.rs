const _: () = {
    const __SPEC_0: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "empty",
        shape: ::hurray::__private::Option::Some(
            &[
                ::hurray::__private::Dim::Fixed(3u64),
                ::hurray::__private::Dim::Fixed(0u64),
                ::hurray::__private::Dim::Fixed(5u64),
            ],
        ),
        layout: ::hurray::__private::LayoutKind::Dense,
        quantization: ::hurray::__private::Option::None,
        metadata: &[],
    };
    fn __ops_0<'a>() -> ::hurray::__private::FieldOps<'a, &'a [f32]> {
        ::hurray::__private::field_ops::<'a, &'a [f32]>()
    }
    const __SPEC_1: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "nibbles",
        shape: ::hurray::__private::Option::Some(
            &[::hurray::__private::Dim::Dynamic, ::hurray::__private::Dim::Fixed(4u64)],
        ),
        layout: ::hurray::__private::LayoutKind::Dense,
        quantization: ::hurray::__private::Option::None,
        metadata: &[],
    };
    fn __ops_1<'a>() -> ::hurray::__private::FieldOps<'a, Packed<'a, Int4>> {
        ::hurray::__private::field_ops::<'a, Packed<'a, Int4>>()
    }
    const __SPEC_2: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "sparse",
        shape: ::hurray::__private::Option::None,
        layout: ::hurray::__private::LayoutKind::Csc,
        quantization: ::hurray::__private::Option::None,
        metadata: &[],
    };
    fn __ops_2<'a>() -> ::hurray::__private::FieldOps<'a, Compressed<'a, f32, i32>> {
        ::hurray::__private::field_ops::<'a, Compressed<'a, f32, i32>>()
    }
    const __SPEC_3: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "quant",
        shape: ::hurray::__private::Option::None,
        layout: ::hurray::__private::LayoutKind::Dense,
        quantization: ::hurray::__private::Option::Some(::hurray::__private::QuantSpec {
            scheme: ::hurray::__private::QuantizationScheme::PerBlock {
                axis: 0u32,
                block_size: 32u64,
            },
            expressed_type: ::hurray::__private::ElementType::BFloat16,
        }),
        metadata: &[],
    };
    fn __ops_3<'a>() -> ::hurray::__private::FieldOps<'a, Quantized<'a, i8>> {
        ::hurray::__private::field_ops::<'a, Quantized<'a, i8>>()
    }
    fn __ops_4<'a>() -> ::hurray::__private::NestedOps<'a, Encoder<'a>> {
        ::hurray::__private::nested_ops::<'a, Encoder<'a>>()
    }
    const __SPEC_5: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "extra.mask",
        shape: ::hurray::__private::Option::None,
        layout: ::hurray::__private::LayoutKind::Dense,
        quantization: ::hurray::__private::Option::None,
        metadata: &[],
    };
    fn __ops_5<'a>() -> ::hurray::__private::FieldOps<'a, &'a [u8]> {
        ::hurray::__private::field_ops::<'a, &'a [u8]>()
    }
    #[automatically_derived]
    impl<'a> ::hurray::__private::TensorSet<'a> for Model<'a> {
        fn describe_tensors(
            &self,
            prefix: &::hurray::__private::str,
            out: &mut ::hurray::__private::Vec<::hurray::__private::TensorDescriptor>,
        ) -> ::hurray::__private::Result<()> {
            __ops_0::<'a>()
                .describe(
                    &self.empty,
                    prefix,
                    &__SPEC_0,
                    ::hurray::__private::Option::None,
                    out,
                )?;
            __ops_1::<'a>()
                .describe(
                    &self.nibbles,
                    prefix,
                    &__SPEC_1,
                    ::hurray::__private::Option::None,
                    out,
                )?;
            __ops_2::<'a>()
                .describe(
                    &self.sparse,
                    prefix,
                    &__SPEC_2,
                    ::hurray::__private::Option::None,
                    out,
                )?;
            __ops_3::<'a>()
                .describe(
                    &self.quant,
                    prefix,
                    &__SPEC_3,
                    ::hurray::__private::Option::None,
                    out,
                )?;
            __ops_4::<'a>().describe(&self.encoder, prefix, "encoder", out)?;
            __ops_5::<'a>()
                .describe_optional(
                    &self.mask,
                    prefix,
                    &__SPEC_5,
                    ::hurray::__private::Option::None,
                    out,
                )?;
            ::hurray::__private::Result::Ok(())
        }
        fn write_tensors(
            &self,
            prefix: &::hurray::__private::str,
            sink: &mut dyn ::hurray::__private::TensorSink,
        ) -> ::hurray::__private::Result<()> {
            __ops_0::<'a>()
                .write(
                    &self.empty,
                    prefix,
                    &__SPEC_0,
                    ::hurray::__private::Option::None,
                    sink,
                )?;
            __ops_1::<'a>()
                .write(
                    &self.nibbles,
                    prefix,
                    &__SPEC_1,
                    ::hurray::__private::Option::None,
                    sink,
                )?;
            __ops_2::<'a>()
                .write(
                    &self.sparse,
                    prefix,
                    &__SPEC_2,
                    ::hurray::__private::Option::None,
                    sink,
                )?;
            __ops_3::<'a>()
                .write(
                    &self.quant,
                    prefix,
                    &__SPEC_3,
                    ::hurray::__private::Option::None,
                    sink,
                )?;
            __ops_4::<'a>().write(&self.encoder, prefix, "encoder", sink)?;
            __ops_5::<'a>()
                .write_optional(
                    &self.mask,
                    prefix,
                    &__SPEC_5,
                    ::hurray::__private::Option::None,
                    sink,
                )?;
            ::hurray::__private::Result::Ok(())
        }
        fn read_tensors(
            reader: &::hurray::__private::Reader<'a>,
            prefix: &::hurray::__private::str,
        ) -> ::hurray::__private::Result<Self> {
            ::hurray::__private::Result::Ok(Self {
                empty: __ops_0::<'a>().read(reader, prefix, &__SPEC_0)?,
                nibbles: __ops_1::<'a>().read(reader, prefix, &__SPEC_1)?,
                sparse: __ops_2::<'a>().read(reader, prefix, &__SPEC_2)?,
                quant: __ops_3::<'a>().read(reader, prefix, &__SPEC_3)?,
                encoder: __ops_4::<'a>().read(reader, prefix, "encoder")?,
                mask: __ops_5::<'a>().read_optional(reader, prefix, &__SPEC_5)?,
            })
        }
    }
    #[automatically_derived]
    impl<'a> Model<'a> {
        /// The descriptor of every tensor of this value.
        pub fn descriptors(
            &self,
        ) -> ::hurray::__private::Result<
            ::hurray::__private::Vec<::hurray::__private::TensorDescriptor>,
        > {
            ::hurray::__private::TensorSet::tensor_descriptors(self)
        }
        /// Writes every tensor to `path` atomically; returns the file length.
        pub fn save(
            &self,
            path: impl ::hurray::__private::AsRef<::hurray::__private::Path>,
        ) -> ::hurray::__private::Result<::hurray::__private::u64> {
            ::hurray::__private::TensorSet::save_file(
                self,
                ::hurray::__private::AsRef::as_ref(&path),
            )
        }
        /// Writes every tensor as a Hurray file to `out`; returns its length.
        pub fn write_to<__W: ::hurray::__private::Write>(
            &self,
            out: __W,
        ) -> ::hurray::__private::Result<::hurray::__private::u64> {
            ::hurray::__private::TensorSet::write_file(self, out)
        }
        /// Reads every tensor from a verified file, borrowing its bytes,
        /// each checked against its field's declaration.
        pub fn load(
            file: &'a ::hurray::__private::File,
        ) -> ::hurray::__private::Result<Self> {
            <Self as ::hurray::__private::TensorSet<'a>>::load_file(file)
        }
        /// Like [`load`](Self::load), from a reader.
        pub fn from_reader(
            reader: ::hurray::__private::Reader<'a>,
        ) -> ::hurray::__private::Result<Self> {
            <Self as ::hurray::__private::TensorSet<'a>>::read_tensors(&reader, "")
        }
    }
};
