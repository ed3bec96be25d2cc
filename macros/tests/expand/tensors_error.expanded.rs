::core::compile_error!(
    "unknown hurray attribute `bogus` here; expected one of: rename, shape, layout, quantization, axis, block_size, expressed, metadata, metadata_of",
)
::core::compile_error!(
    "`String` is not a tensor field type: expected `&'a [T]`, `Vec<T>`, `hurray::derive::Packed<'a, P>`, `hurray::derive::Compressed<'a, T>`, `hurray::derive::Coo<'a, T>`, `hurray::derive::Quantized<'a, T>`, an ndarray `ArrayView`/`Array`, an `Option` of one of them, or a struct deriving `Tensors`",
)
const _: () = {
    #[automatically_derived]
    impl<'a> ::hurray::__private::TensorSet<'a> for Broken<'a> {
        fn describe_tensors(
            &self,
            prefix: &::hurray::__private::str,
            out: &mut ::hurray::__private::Vec<::hurray::__private::TensorDescriptor>,
        ) -> ::hurray::__private::Result<()> {
            ::core::unreachable!("#[derive(Tensors)] failed")
        }
        fn write_tensors(
            &self,
            prefix: &::hurray::__private::str,
            sink: &mut dyn ::hurray::__private::TensorSink,
        ) -> ::hurray::__private::Result<()> {
            ::core::unreachable!("#[derive(Tensors)] failed")
        }
        fn read_tensors(
            reader: &::hurray::__private::Reader<'a>,
            prefix: &::hurray::__private::str,
        ) -> ::hurray::__private::Result<Self> {
            ::core::unreachable!("#[derive(Tensors)] failed")
        }
    }
    #[automatically_derived]
    impl<'a> Broken<'a> {
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
