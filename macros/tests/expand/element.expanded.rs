const _: () = {
    #[automatically_derived]
    impl ::hurray::__private::Element for Meters {
        const TYPE: ::hurray::__private::ElementType = <f32 as ::hurray::__private::Element>::TYPE;
    }
    ::hurray::__private::assert_same_size::<Meters, f32>();
};
