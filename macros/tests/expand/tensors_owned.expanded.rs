const _: () = {
    const __SPEC_0: crate::facade::__private::FieldSpec = crate::facade::__private::FieldSpec {
        name: "grid",
        shape: crate::facade::__private::Option::Some(
            &[
                crate::facade::__private::Dim::Fixed(2u64),
                crate::facade::__private::Dim::Fixed(2u64),
            ],
        ),
        layout: crate::facade::__private::LayoutKind::Dense,
        quantization: crate::facade::__private::Option::None,
        metadata: &[],
    };
    fn __ops_0<'__hurray, T>() -> crate::facade::__private::FieldOps<'__hurray, Vec<T>>
    where
        T: Element,
    {
        crate::facade::__private::field_ops::<'__hurray, Vec<T>>()
    }
    const __SPEC_1: crate::facade::__private::FieldSpec = crate::facade::__private::FieldSpec {
        name: "type",
        shape: crate::facade::__private::Option::None,
        layout: crate::facade::__private::LayoutKind::Dense,
        quantization: crate::facade::__private::Option::None,
        metadata: &[],
    };
    fn __ops_1<'__hurray, T>() -> crate::facade::__private::FieldOps<'__hurray, Vec<f64>>
    where
        T: Element,
    {
        crate::facade::__private::field_ops::<'__hurray, Vec<f64>>()
    }
    #[automatically_derived]
    impl<'__hurray, T> crate::facade::__private::TensorSet<'__hurray> for Owned<T>
    where
        T: Element,
    {
        fn describe_tensors(
            &self,
            prefix: &crate::facade::__private::str,
            out: &mut crate::facade::__private::Vec<
                crate::facade::__private::TensorDescriptor,
            >,
        ) -> crate::facade::__private::Result<()> {
            __ops_0::<'__hurray, T>()
                .describe(
                    &self.grid,
                    prefix,
                    &__SPEC_0,
                    crate::facade::__private::Option::None,
                    out,
                )?;
            __ops_1::<'__hurray, T>()
                .describe_optional(
                    &self.r#type,
                    prefix,
                    &__SPEC_1,
                    crate::facade::__private::Option::None,
                    out,
                )?;
            crate::facade::__private::Result::Ok(())
        }
        fn write_tensors(
            &self,
            prefix: &crate::facade::__private::str,
            sink: &mut dyn crate::facade::__private::TensorSink,
        ) -> crate::facade::__private::Result<()> {
            __ops_0::<'__hurray, T>()
                .write(
                    &self.grid,
                    prefix,
                    &__SPEC_0,
                    crate::facade::__private::Option::None,
                    sink,
                )?;
            __ops_1::<'__hurray, T>()
                .write_optional(
                    &self.r#type,
                    prefix,
                    &__SPEC_1,
                    crate::facade::__private::Option::None,
                    sink,
                )?;
            crate::facade::__private::Result::Ok(())
        }
        fn read_tensors(
            reader: &crate::facade::__private::Reader<'__hurray>,
            prefix: &crate::facade::__private::str,
        ) -> crate::facade::__private::Result<Self> {
            crate::facade::__private::Result::Ok(Self {
                grid: __ops_0::<'__hurray, T>().read(reader, prefix, &__SPEC_0)?,
                r#type: __ops_1::<'__hurray, T>()
                    .read_optional(reader, prefix, &__SPEC_1)?,
            })
        }
    }
    #[automatically_derived]
    impl<T> Owned<T>
    where
        T: Element,
    {
        /// The descriptor of every tensor of this value.
        pub fn descriptors(
            &self,
        ) -> crate::facade::__private::Result<
            crate::facade::__private::Vec<crate::facade::__private::TensorDescriptor>,
        > {
            crate::facade::__private::TensorSet::tensor_descriptors(self)
        }
        /// Writes every tensor to `path` atomically; returns the file length.
        pub fn save(
            &self,
            path: impl crate::facade::__private::AsRef<crate::facade::__private::Path>,
        ) -> crate::facade::__private::Result<crate::facade::__private::u64> {
            crate::facade::__private::TensorSet::save_file(
                self,
                crate::facade::__private::AsRef::as_ref(&path),
            )
        }
        /// Writes every tensor as a Hurray file to `out`; returns its length.
        pub fn write_to<__W: crate::facade::__private::Write>(
            &self,
            out: __W,
        ) -> crate::facade::__private::Result<crate::facade::__private::u64> {
            crate::facade::__private::TensorSet::write_file(self, out)
        }
        /// Reads every tensor from a verified file, borrowing its bytes,
        /// each checked against its field's declaration.
        pub fn load<'__hurray>(
            file: &'__hurray crate::facade::__private::File,
        ) -> crate::facade::__private::Result<Self> {
            <Self as crate::facade::__private::TensorSet<'__hurray>>::load_file(file)
        }
        /// Like [`load`](Self::load), from a reader.
        pub fn from_reader<'__hurray>(
            reader: crate::facade::__private::Reader<'__hurray>,
        ) -> crate::facade::__private::Result<Self> {
            <Self as crate::facade::__private::TensorSet<
                '__hurray,
            >>::read_tensors(&reader, "")
        }
    }
};
