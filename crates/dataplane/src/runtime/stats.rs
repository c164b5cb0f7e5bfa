//! Counter sets: a worker-owned set of [`Counter`]s and its plain, summable snapshot.

/// Declares a cache-aligned set of single-writer counters (`$set`) and a plain snapshot
/// (`$snap`) with the same fields that sums the sets of several workers.
macro_rules! counter_set {
    ($(#[$doc:meta])* $set:ident, $(#[$sdoc:meta])* $snap:ident { $($(#[$fdoc:meta])* $field:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        #[repr(C, align(64))]
        pub struct $set {
            $($(#[$fdoc])* pub $field: $crate::runtime::counter::Counter,)*
        }

        $(#[$sdoc])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
        pub struct $snap {
            $($(#[$fdoc])* pub $field: u64,)*
        }

        impl $set {
            /// Adds this worker's values into `into` (modulo 2^64, as the counters themselves
            /// wrap; a digest field is not a count at all).
            pub fn add_to(&self, into: &mut $snap) {
                $(into.$field = into.$field.wrapping_add(self.$field.get());)*
            }
        }

        impl $snap {
            /// What was counted since `base` was read (modulo 2^64).
            pub fn since(self, base: $snap) -> $snap {
                $snap { $($field: self.$field.wrapping_sub(base.$field),)* }
            }
        }

        impl std::ops::AddAssign for $snap {
            fn add_assign(&mut self, o: $snap) {
                $(self.$field = self.$field.wrapping_add(o.$field);)*
            }
        }
    };
}

pub(crate) use counter_set;
