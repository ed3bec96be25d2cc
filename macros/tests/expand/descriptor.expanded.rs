const _: () = {
    #[automatically_derived]
    impl ::hurray::__private::StaticDescriptor for Logits {
        const NAME: &'static ::hurray::__private::str = "logits";
        const ELEMENT_TYPE: ::hurray::__private::ElementType = ::hurray::__private::ElementType::Int4;
        const SHAPE: &'static [::hurray::__private::Dim] = &[
            ::hurray::__private::Dim::Dynamic,
            ::hurray::__private::Dim::Fixed(0u64),
            ::hurray::__private::Dim::Fixed(8u64),
        ];
        fn descriptor() -> ::hurray::__private::TensorDescriptor {
            ::hurray::__private::static_descriptor(
                Self::NAME,
                Self::ELEMENT_TYPE,
                Self::SHAPE,
                ::hurray::__private::Option::Some((
                    ::hurray::__private::QuantSpec {
                        scheme: ::hurray::__private::QuantizationScheme::PerAxis {
                            axis: 2u32,
                        },
                        expressed_type: ::hurray::__private::ElementType::Float32,
                    },
                    ::hurray::__private::ElementType::Float16,
                )),
            )
        }
    }
};
