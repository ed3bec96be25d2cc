const _: () = {
    const __SPEC_0: ::hurray::__private::FieldSpec = ::hurray::__private::FieldSpec {
        name: "edges",
        shape: ::hurray::__private::Option::None,
        layout: ::hurray::__private::LayoutKind::Coo,
        quantization: ::hurray::__private::Option::None,
        metadata: &[("role", "edges")],
    };
    fn __ops_0<'a>() -> ::hurray::__private::FieldOps<'a, Coo<'a, f32, i32>> {
        ::hurray::__private::field_ops::<'a, Coo<'a, f32, i32>>()
    }
    fn __ops_2<'a>() -> ::hurray::__private::NestedOps<'a, Adapter<'a>> {
        ::hurray::__private::nested_ops::<'a, Adapter<'a>>()
    }
    #[automatically_derived]
    impl<'a> ::hurray::__private::TensorSet<'a> for Graph<'a> {
        fn describe_tensors(
            &self,
            prefix: &::hurray::__private::str,
            out: &mut ::hurray::__private::Vec<::hurray::__private::TensorDescriptor>,
        ) -> ::hurray::__private::Result<()> {
            __ops_0::<'a>()
                .describe(
                    &self.edges,
                    prefix,
                    &__SPEC_0,
                    ::hurray::__private::Option::Some(
                        &::hurray::__private::metadata_map(&self.edges_meta),
                    ),
                    out,
                )?;
            __ops_2::<'a>().describe_optional(&self.lora, prefix, "adapter", out)?;
            ::hurray::__private::Result::Ok(())
        }
        fn write_tensors(
            &self,
            prefix: &::hurray::__private::str,
            sink: &mut dyn ::hurray::__private::TensorSink,
        ) -> ::hurray::__private::Result<()> {
            __ops_0::<'a>()
                .write(
                    &self.edges,
                    prefix,
                    &__SPEC_0,
                    ::hurray::__private::Option::Some(
                        &::hurray::__private::metadata_map(&self.edges_meta),
                    ),
                    sink,
                )?;
            __ops_2::<'a>().write_optional(&self.lora, prefix, "adapter", sink)?;
            ::hurray::__private::write_file_metadata(sink, [("format", "hurray")])?;
            ::hurray::__private::write_file_metadata(sink, &self.file)?;
            ::hurray::__private::Result::Ok(())
        }
        fn read_tensors(
            reader: &::hurray::__private::Reader<'a>,
            prefix: &::hurray::__private::str,
        ) -> ::hurray::__private::Result<Self> {
            ::hurray::__private::Result::Ok(Self {
                edges: __ops_0::<'a>().read(reader, prefix, &__SPEC_0)?,
                edges_meta: ::hurray::__private::IntoIterator::into_iter(
                        ::hurray::__private::read_tensor_metadata(
                            reader,
                            prefix,
                            "edges",
                        ),
                    )
                    .collect(),
                lora: __ops_2::<'a>().read_optional(reader, prefix, "adapter")?,
                file: ::hurray::__private::IntoIterator::into_iter(
                        ::hurray::__private::read_file_metadata(reader),
                    )
                    .collect(),
            })
        }
    }
    #[automatically_derived]
    impl<'a> Graph<'a> {
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
